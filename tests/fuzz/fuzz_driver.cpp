// The in-process half of the statement fuzzer (fuzz_statements.py drives it).
//
// Reads inputs from standard input, each as "<decimal byte count>\n<bytes>",
// and runs every one through Session::execute in a session that first ran a
// fixed prelude (a few bindings of every shape and type). For each input it
// prints, flushed, to standard output:
//
//   BEGIN <index>
//   FINDING <index> <kind> <one-line detail>     (zero or more)
//   END <index> ok|error|interrupted
//
// A finding is a bug: an internal error, an error without a file:line:col
// location, a failed statement that changed the session's bindings, or a
// hang (the watchdog asks the session to cancel after --timeout seconds and,
// if the statement still runs after --grace more, prints "FINDING <i> hang"
// and exits with status 3). A crash or sanitizer report ends the process:
// the driver script sees a BEGIN without its END.
//
// Build: cmake --build BUILD --target shoal_fuzz_driver (not part of `all`).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>

#include "lang/session.h"
#include "targets/fuzz_common.h"

namespace {

using namespace shoal;
using Clock = std::chrono::steady_clock;

using fuzz::kPrelude;  // the libFuzzer targets' prelude (targets/fuzz_common.h)

// The targets' output, its findings printed for fuzz_statements.py.
class Collect final : public fuzz::StrictOutput {
public:
    Collect() : StrictOutput([this](const char* kind, const std::string& detail) { finding(kind, detail); }) {}
    int index = 0;
    void finding(const char* kind, const std::string& detail) const {
        std::string d = detail.substr(0, 300);
        for (char& c : d)
            if (c == '\n' || c == '\r' || c == '\0') c = ' ';
        std::printf("FINDING %d %s %s\n", index, kind, d.c_str());
        std::fflush(stdout);
    }
};

// Reads one "<n>\n<n bytes>" record; false at the end of input.
bool read_record(std::string& out) {
    size_t n = 0;
    int c;
    bool any = false;
    while ((c = std::getchar()) != EOF && c != '\n') {
        if (c < '0' || c > '9') return false;
        n = n * 10 + static_cast<size_t>(c - '0');
        any = true;
    }
    if (!any) return false;
    out.resize(n);
    return n == 0 || std::fread(out.data(), 1, n, stdin) == n;
}

std::string snapshot(const Session& s) { return fuzz::bindings(s); }

std::unique_ptr<Session> fresh_session() {
    auto s = std::make_unique<Session>();
    Collect quiet;
    quiet.index = -1;
    if (!s->execute(kPrelude, "<prelude>", quiet)) {
        std::fprintf(stderr, "fuzz_driver: the prelude failed\n");
        std::exit(2);
    }
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    double timeout = 5.0, grace = 10.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--timeout") == 0) timeout = std::atof(argv[i + 1]);
        else if (std::strcmp(argv[i], "--grace") == 0) grace = std::atof(argv[i + 1]);
    }

    std::unique_ptr<Session> session = fresh_session();
    std::string before = snapshot(*session);

    // Watchdog: cancel after `timeout`, give up after `grace` more.
    std::mutex mu;
    std::atomic<Session*> running{nullptr};
    std::atomic<int> current{-1};
    std::atomic<int64_t> started_ns{0};
    std::thread watchdog([&] {
        bool cancelled_for = false;
        int last = -1;
        while (true) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            const int idx = current.load();
            if (idx == -2) return;
            if (idx != last) {
                last = idx;
                cancelled_for = false;
            }
            if (idx < 0) continue;
            const double elapsed =
                static_cast<double>(Clock::now().time_since_epoch().count() - started_ns.load()) * 1e-9;
            if (elapsed > timeout && !cancelled_for) {
                std::lock_guard<std::mutex> lock(mu);
                if (Session* s = running.load()) s->request_cancel();
                cancelled_for = true;
            }
            if (elapsed > timeout + grace && current.load() == idx) {
                std::printf("FINDING %d hang still running %.0f s after the cancel request\n", idx, grace);
                std::fflush(stdout);
                std::_Exit(3);
            }
        }
    });

    std::string input;
    for (int index = 0; read_record(input); ++index) {
        std::printf("BEGIN %d\n", index);
        std::fflush(stdout);
        Collect out;
        out.index = index;
        // Half the inputs run as one statement (the REPL's continuation
        // mode), so a failure must leave the bindings exactly as they were.
        const bool single = index % 2 == 0;
        {
            std::lock_guard<std::mutex> lock(mu);
            running.store(session.get());
        }
        started_ns.store(Clock::now().time_since_epoch().count());
        current.store(index);
        bool ok = false;
        try {
            ok = session->execute(input, "fuzz.shoal", out, single);
        } catch (const std::exception& e) {
            out.finding("escaped-exception", e.what());
        } catch (...) {
            out.finding("escaped-exception", "(not a std::exception)");
        }
        current.store(-1);
        {
            std::lock_guard<std::mutex> lock(mu);
            running.store(nullptr);
        }
        if (ok && out.errors > 0) out.finding("ok-with-errors", "execute returned true after reporting an error");
        if (!ok && out.errors == 0 && !session->quit_requested())
            out.finding("silent-failure", "execute returned false without reporting an error");
        // (`:load` runs a script whose good statements commit by design.)
        const bool loads = input.find(":l") != std::string::npos;
        if (!ok && single && !out.interrupted && !loads) {
            const std::string after = snapshot(*session);
            if (after != before) out.finding("bindings-changed", "a failed statement changed the bindings");
        }
        std::printf("END %d %s\n", index, out.interrupted ? "interrupted" : ok ? "ok" : "error");
        std::fflush(stdout);
        // Anything that may have changed the session: start from the prelude again.
        if (ok || !single || session->quit_requested()) {
            session = fresh_session();
            before = snapshot(*session);
        }
    }
    current.store(-2);
    watchdog.join();
    return 0;
}
