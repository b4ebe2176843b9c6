// shoal: the terminal front end. Runs scripts (`shoal file.shoal`), standard
// input when it is not a terminal, or an interactive prompt with line editing,
// history and completion (libedit).
#include <algorithm>
#include <cerrno>
#include <clocale>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <fcntl.h>
#include <histedit.h>
#include <iostream>
#include <iterator>
#include <optional>
#include <poll.h>
#include <pwd.h>
#include <string>
#include <sys/ioctl.h>
#include <unistd.h>
#include <utility>
#include <vector>

// LeakSanitizer (the sanitized CI build): libedit keeps wide copies of the
// strings it was given (wcsdup, which Shoal never calls) until the process
// ends; libc's unwinder stops at wcsdup, so that is the frame to match.
// Third-party code only.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
extern "C" const char* __lsan_default_suppressions() { return "leak:libedit.so\nleak:wcsdup\n"; }
#endif
#endif

#include "repl/host_sampler.h"
#include "lang/session.h"
#include "runtime/executors.h"
#include "runtime/mpi/mpi_world.h"

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "unknown"
#endif

namespace {

using namespace shoal;

constexpr int kHistorySize = 1000;
constexpr const char* kPrompt = "shoal> ";
constexpr const char* kContinuationPrompt = "  ...> ";

// ---------------------------------------------------------------- signals
// SIGINT cancels the running statement (the evaluator polls the session's
// flag) and, at the prompt, wakes the line reader through a self-pipe.
volatile sig_atomic_t g_sigint = 0;
int g_wake[2] = {-1, -1};
Session* g_session = nullptr;

extern "C" void on_sigint(int) {
    int saved = errno;
    g_sigint = 1;
    if (g_session) g_session->request_cancel();
    if (g_wake[1] >= 0) {
        ssize_t r = write(g_wake[1], "x", 1);
        (void)r;  // the pipe being full is fine: it is already readable
    }
    errno = saved;
}

void install_sigint_handler() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a blocking read must return EINTR
    sigaction(SIGINT, &sa, nullptr);
}

void drain_wake_pipe() {
    char buf[64];
    while (g_wake[0] >= 0 && read(g_wake[0], buf, sizeof buf) > 0) {
    }
    g_sigint = 0;
}

// ---------------------------------------------------------------- output
class StreamOutput : public SessionOutput {
public:
    explicit StreamOutput(bool interactive = false) : interactive_(interactive) {}
    void value(const Value&, const Type&, const std::string& text) override { line(text); }
    void text(const std::string& s) override { line(s); }
    void error(const Error& e) override {
        // The terminal echoed "^C" without a newline.
        diag((interactive_ && e.kind == ErrorKind::Interrupted ? "\n" : "") + format_error(e));
    }
    void warning(const std::string& formatted) override { diag(formatted); }

private:
    static void line(const std::string& s) {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fputc('\n', stdout);
        std::fflush(stdout);
    }
    static void diag(const std::string& s) {
        std::fflush(stdout);  // keep values and errors in order when both go to one place
        std::fwrite(s.data(), 1, s.size(), stderr);
        std::fputc('\n', stderr);
        std::fflush(stderr);
    }
    bool interactive_;
};

// ---------------------------------------------------------------- line editing
const char* g_prompt = kPrompt;

char* prompt_fn(EditLine*) { return const_cast<char*>(g_prompt); }

std::string without_newline(const char* got, int count) {
    std::string line(got, static_cast<size_t>(count));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    return line;
}

// Whether input is already waiting (pasted text), without blocking.
bool input_pending() {
    pollfd fd{STDIN_FILENO, POLLIN, 0};
    return poll(&fd, 1, 0) > 0 && (fd.revents & POLLIN);
}

// Reads one character for libedit. Ours rather than libedit's so that Ctrl-C
// ends el_gets at once (libedit retries an interrupted read).
int read_char_fn(EditLine*, wchar_t* wc) {
    char bytes[MB_LEN_MAX];
    size_t n = 0;
    *wc = 0;
    for (;;) {
        if (g_sigint) {
            errno = EINTR;
            return -1;
        }
        pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {g_wake[0], POLLIN, 0}};
        if (poll(fds, g_wake[0] >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (fds[1].revents & POLLIN) continue;  // woken by SIGINT: g_sigint is set
        char c;
        ssize_t r = read(STDIN_FILENO, &c, 1);
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return -1;
        }
        if (r == 0) return 0;  // end of input
        bytes[n++] = c;
        mbstate_t state{};
        size_t k = std::mbrtowc(wc, bytes, n, &state);
        if (k == static_cast<size_t>(-2) && n < sizeof bytes) continue;  // incomplete sequence
        if (k == static_cast<size_t>(-1) || k == static_cast<size_t>(-2)) {
            n = 0;  // invalid bytes: drop them
            continue;
        }
        return 1;
    }
}

int terminal_width() {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    return 80;
}

// Tab: complete the word before the cursor as far as it is unambiguous, or
// list the candidates.
unsigned char complete_fn(EditLine* el, int) {
    void* data = nullptr;
    el_get(el, EL_CLIENTDATA, &data);
    auto* session = static_cast<Session*>(data);
    const LineInfo* li = el_line(el);
    std::string line(li->buffer, static_cast<size_t>(li->lastchar - li->buffer));
    size_t cursor = static_cast<size_t>(li->cursor - li->buffer);
    size_t start = cursor;
    std::vector<std::string> cands = session->complete(line, cursor, start);
    if (cands.empty() || start > cursor) return CC_ERROR;
    std::string word = line.substr(start, cursor - start);

    std::string common = cands[0];
    for (const auto& c : cands) {
        size_t i = 0;
        while (i < common.size() && i < c.size() && common[i] == c[i]) ++i;
        common.resize(i);
    }
    if (common.size() > word.size() && common.compare(0, word.size(), word) == 0) {
        std::string add = common.substr(word.size());
        if (cands.size() == 1 && common.back() != '/') add += ' ';
        el_insertstr(el, add.c_str());
        return CC_REFRESH;
    }
    if (cands.size() == 1) {
        if (common.back() == '/') return CC_ERROR;
        el_insertstr(el, " ");
        return CC_REFRESH;
    }
    size_t widest = 0;
    for (const auto& c : cands) widest = std::max(widest, c.size());
    size_t col = widest + 2;
    size_t per_row = std::max<size_t>(1, static_cast<size_t>(terminal_width()) / col);
    std::string out = "\n";
    for (size_t i = 0; i < cands.size(); ++i) {
        bool last_in_row = (i + 1) % per_row == 0 || i + 1 == cands.size();
        out += cands[i];
        out += last_in_row ? std::string("\n") : std::string(col - cands[i].size(), ' ');
    }
    std::fputs(out.c_str(), stdout);
    std::fflush(stdout);
    return CC_REDISPLAY;
}

std::string history_path() {
    const char* home = std::getenv("HOME");
    if (!home || !*home) {
        if (const passwd* pw = getpwuid(getuid())) home = pw->pw_dir;
    }
    if (!home || !*home) return {};
    return std::string(home) + "/.shoal_history";
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

int run_interactive(Session& session) {
    std::setlocale(LC_CTYPE, "");
    if (pipe2(g_wake, O_NONBLOCK | O_CLOEXEC) != 0) g_wake[0] = g_wake[1] = -1;
    install_sigint_handler();

    HistEvent ev;
    History* hist = history_init();
    history(hist, &ev, H_SETSIZE, kHistorySize);
    history(hist, &ev, H_SETUNIQUE, 1);
    const std::string hist_file = history_path();
    if (!hist_file.empty()) history(hist, &ev, H_LOAD, hist_file.c_str());

    EditLine* el = el_init("shoal", stdin, stdout, stderr);
    el_set(el, EL_EDITOR, "emacs");
    el_set(el, EL_PROMPT, prompt_fn);
    el_set(el, EL_HIST, history, hist);
    el_set(el, EL_GETCFN, read_char_fn);
    el_set(el, EL_CLIENTDATA, &session);
    el_set(el, EL_ADDFN, "shoal-complete", "Complete a Shoal name or command", complete_fn);
    el_set(el, EL_BIND, "^I", "shoal-complete", nullptr);
    el_source(el, nullptr);  // the user's ~/.editrc, if any

    std::printf("Shoal %s: %s. Type :help for help, :quit or Ctrl-D to leave.\n", SHOAL_VERSION,
                session.engine_description().c_str());
    std::fflush(stdout);

    StreamOutput out(true);
    std::string buffer;  // the statement so far (continuation lines)
    std::optional<std::string> read_ahead;  // a pasted line read to see whether it continued the last statement
    while (!session.quit_requested()) {
        g_prompt = buffer.empty() ? kPrompt : kContinuationPrompt;
        std::string line;
        if (read_ahead) {
            line = *std::exchange(read_ahead, std::nullopt);
        } else {
            drain_wake_pipe();
            int count = 0;
            const char* got = el_gets(el, &count);
            if (!got) {
                if (g_sigint) {  // Ctrl-C at the prompt: drop the input, ask again
                    std::fputs("^C\n", stdout);
                    std::fflush(stdout);
                    buffer.clear();
                    continue;
                }
                if (count < 0 && errno == EINTR) continue;
                std::fputc('\n', stdout);  // Ctrl-D
                break;
            }
            line = without_newline(got, count);
        }
        if (buffer.empty() && blank(line)) continue;
        bool ends_statement = !buffer.empty() && blank(line);  // an empty line ends a continuation
        if (!ends_statement) buffer += buffer.empty() ? line : "\n" + line;
        if (!ends_statement && session.check_input(buffer, true) == InputStatus::Incomplete) continue;
        // Pasted text: the lines already waiting that start with an operator
        // no expression starts with continue this statement, as in a script
        // (continues_statement); the first that does not is the next one's.
        bool incomplete = false;
        while (!ends_statement && input_pending()) {
            g_prompt = kContinuationPrompt;
            int count = 0;
            const char* got = el_gets(el, &count);
            if (!got) break;
            std::string next = without_newline(got, count);
            if (blank(next) || !continues_statement(next)) {
                read_ahead = std::move(next);
                break;
            }
            buffer += "\n" + next;
            if ((incomplete = session.check_input(buffer, true) == InputStatus::Incomplete)) break;
        }
        if (incomplete) continue;

        history(hist, &ev, H_ENTER, buffer.c_str());
        if (!hist_file.empty()) history(hist, &ev, H_SAVE, hist_file.c_str());

        // Invalid input runs too, so the user sees the syntax error.
        g_session = &session;
        session.set_columns(terminal_width());  // the window may have been resized
        session.execute(buffer, "<stdin>", out, true);
        g_session = nullptr;
        buffer.clear();
    }

    el_end(el);
    history_end(hist);
    return 0;
}

// ---------------------------------------------------------------- batch modes
void usage(std::FILE* to) {
    std::fputs(
        "usage: shoal [options] [file.shoal ...]\n"
        "\n"
        "  shoal                 interactive prompt (on a terminal)\n"
        "  shoal file.shoal ...  run scripts in one session\n"
        "  cmd | shoal           run the statements read from standard input\n"
        "\n"
        "options:\n"
        "  -e TEXT     run TEXT as statements (may be repeated; in order with the files)\n"
        "  -i          interactive prompt after the scripts and -e texts\n"
        "  -           read statements from standard input at this point\n"
        "  --ranks N   run the session on N MPI ranks (docs/scale-out.md); under\n"
        "              `mpirun -np N shoal ...` the ranks are mpirun's\n"
        "  --shard N   on several ranks, split arrays of at least N elements over\n"
        "              them (`:set shard N`)\n"
        "  --help      this text\n"
        "  --version   the version\n"
        "\n"
        "Scripts print only values and errors; the exit status is 1 if any\n"
        "statement failed. The language is described in docs/language.md.\n",
        to);
}

std::string read_all(std::FILE* f) {
    std::string text;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    return text;
}

// This program's own path: the workers `--ranks` spawns run it too.
std::string own_program(const char* argv0) {
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string(argv0);
}

// At every exit of a session's process: the other ranks leave with it.
struct LeaveWorld {
    Session& session;
    ~LeaveWorld() { runtime::leave_world(session); }
};

}  // namespace

int main(int argc, char** argv) {
    shoal::runtime::install_compiled_backend();  // the best executor this machine has
    // A worker of `--ranks N` / `:set ranks N` serves rank 0 and nothing else.
    if (argc == 2 && std::string(argv[1]) == "--rank-worker") return shoal::runtime::run_spawned_worker();
    shoal::runtime::install_rank_world_factory(own_program(argv[0]));
    std::shared_ptr<RankWorld> launched;  // under mpirun
    if (shoal::runtime::launched_by_mpirun()) {
        try {
            launched = shoal::runtime::join_launched_world();
        } catch (const Error& e) {
            std::fprintf(stderr, "shoal: %s\n", format_error(e).c_str());
            return 2;
        }
        if (launched->rank() != 0) {
            Session worker;
            worker.join_world(launched);
            return shoal::runtime::serve_rank(worker, *launched);
        }
    }
    shoal::repl::start_host_sampler();
    enum class Kind { File, Text, Stdin };
    struct Input {
        Kind kind;
        std::string value;
    };
    std::vector<Input> inputs;
    bool interactive_after = false;
    bool options_done = false;
    int ranks = 0;          // --ranks N
    std::string shard;      // --shard N
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (!options_done && a == "--") {
            options_done = true;
        } else if (!options_done && (a == "--help" || a == "-h")) {
            usage(stdout);
            return 0;
        } else if (!options_done && (a == "--version" || a == "-V")) {
            std::printf("shoal %s\n", SHOAL_VERSION);
            return 0;
        } else if (!options_done && a == "-e") {
            if (i + 1 >= argc) {
                std::fputs("shoal: -e needs an argument\n", stderr);
                return 2;
            }
            inputs.push_back({Kind::Text, argv[++i]});
        } else if (!options_done && a == "--ranks") {
            const long n = i + 1 < argc ? std::strtol(argv[i + 1], nullptr, 10) : 0;
            if (n < 1 || n > 1024) {
                std::fputs("shoal: --ranks needs a number of ranks from 1 to 1024\n", stderr);
                return 2;
            }
            ranks = static_cast<int>(n);
            ++i;
        } else if (!options_done && a == "--shard") {
            if (i + 1 >= argc) {
                std::fputs("shoal: --shard needs a number of elements\n", stderr);
                return 2;
            }
            shard = argv[++i];
        } else if (!options_done && a == "-i") {
            interactive_after = true;
        } else if (!options_done && a == "-") {
            inputs.push_back({Kind::Stdin, {}});
        } else if (!options_done && a.size() > 1 && a[0] == '-') {
            std::fprintf(stderr, "shoal: unknown option '%s' (try --help)\n", a.c_str());
            return 2;
        } else {
            inputs.push_back({Kind::File, a});
        }
    }

    Session session;
    LeaveWorld leave{session};
    if (launched) session.join_world(launched);
    if (ranks > 0) {
        try {
            session.start_ranks(ranks);
        } catch (const Error& e) {
            std::fprintf(stderr, "%s\n", format_error(e).c_str());
            return 2;
        }
    }
    if (!shard.empty()) {  // a statement: every rank takes it
        StreamOutput settings_out;
        if (!session.execute(":set shard " + shard, "<command line>", settings_out)) return 2;
    }
    session.set_columns(terminal_width());
    bool tty = isatty(STDIN_FILENO);
    if (inputs.empty() && !tty) inputs.push_back({Kind::Stdin, {}});
    if (inputs.empty()) return run_interactive(session);

    // Ctrl-C stops a script: the statement running is cancelled and the rest skipped.
    g_session = &session;
    install_sigint_handler();
    StreamOutput out;
    bool ok = true;
    for (const auto& in : inputs) {
        switch (in.kind) {
            case Kind::File: ok = session.execute_file(in.value, out) && ok; break;
            case Kind::Text: ok = session.execute(in.value, "<command line>", out) && ok; break;
            case Kind::Stdin: ok = session.execute(read_all(stdin), "<stdin>", out) && ok; break;
        }
        if (g_sigint) return 130;
        if (session.quit_requested()) break;
    }
    g_session = nullptr;
    if (interactive_after && tty && !session.quit_requested()) return run_interactive(session);
    return ok ? 0 : 1;
}
