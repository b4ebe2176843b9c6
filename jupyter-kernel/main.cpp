// shoal-kernel: the Jupyter kernel (xeus 2.4.1 over shoal::Session).
//
//   shoal-kernel -f CONNECTION_FILE        what Jupyter runs (kernel.json's argv)
//   shoal-kernel install [--user | --prefix P]   writes the kernelspec
//   shoal-kernel --version
//
// Interrupts: Jupyter interrupts a kernel with SIGINT ("interrupt_mode":
// "signal"). xeus 2.4.1 has no interrupt hook and its zmq polls die on a
// stray signal, so SIGINT is blocked in every thread before anything starts
// (the threads xeus and zmq create inherit the mask) and received by one
// thread in sigwait, which sets the session's cancellation flag -- the same
// flag the REPL's Ctrl-C sets. An interrupt while idle is harmless: the next
// cell clears the flag before it runs.
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <pthread.h>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include <xeus/xhelper.hpp>
#include <xeus/xkernel.hpp>
#include <xeus/xkernel_configuration.hpp>
#include <xeus/xserver_zmq.hpp>

#include "lang/session.h"
#include "runtime/executors.h"
#include "runtime/mpi/mpi_world.h"
#include "shoal_interpreter.h"
#include "shoal_kernel_logos.h"  // generated: kLogo32, kLogo64 (PNG bytes)

#ifndef SHOAL_VERSION
#define SHOAL_VERSION "unknown"
#endif

namespace {

std::atomic<shoal::kernel::Interpreter*> g_interpreter{nullptr};

// Invalid UTF-8 in an output (say, bytes of a file name echoed in an error)
// is replaced when a message is serialised, rather than ending the kernel.
constexpr nl::json::error_handler_t kJsonErrors = nl::json::error_handler_t::replace;

void start_interrupt_thread(sigset_t set) {
    std::thread([set] {
        for (;;) {
            int sig = 0;
            if (sigwait(&set, &sig) != 0) continue;
            if (sig == SIGINT) {
                if (shoal::kernel::Interpreter* k = g_interpreter.load()) k->request_cancel();
            }
        }
    }).detach();
}

// ------------------------------------------------------------ install
bool make_dirs(const std::string& path) {
    std::string cur;
    size_t i = 0;
    while (i <= path.size()) {
        size_t j = path.find('/', i);
        if (j == std::string::npos) j = path.size();
        cur = path.substr(0, j);
        if (!cur.empty() && mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
            std::fprintf(stderr, "shoal-kernel: cannot create %s: %s\n", cur.c_str(), std::strerror(errno));
            return false;
        }
        i = j + 1;
    }
    return true;
}

bool write_file(const std::string& path, const void* data, size_t size) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    f.close();
    if (!f) {
        std::fprintf(stderr, "shoal-kernel: cannot write %s\n", path.c_str());
        return false;
    }
    return true;
}

std::string json_string(const std::string& s) { return nl::json(s).dump(); }

std::string self_path() {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "shoal-kernel";
    return std::string(buf, static_cast<size_t>(n));
}

std::string user_data_dir() {
    if (const char* d = std::getenv("JUPYTER_DATA_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/jupyter";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.local/share/jupyter";
}

void install_usage(std::FILE* to) {
    std::fputs(
        "usage: shoal-kernel install [--user | --prefix PREFIX]\n"
        "\n"
        "Writes the Jupyter kernelspec (kernel.json and the logos) for this binary:\n"
        "  (default)        /usr/local/share/jupyter/kernels/shoal (system-wide)\n"
        "  --user           the user's Jupyter data directory (~/.local/share/jupyter/kernels/shoal,\n"
        "                   or $JUPYTER_DATA_DIR/kernels/shoal)\n"
        "  --prefix PREFIX  PREFIX/share/jupyter/kernels/shoal (e.g. a virtual environment: --prefix \"$VIRTUAL_ENV\")\n",
        to);
}

int install(int argc, char** argv) {
    std::string data_dir = "/usr/local/share/jupyter";
    for (int i = 2; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--user") {
            data_dir = user_data_dir();
        } else if (a == "--prefix" && i + 1 < argc) {
            data_dir = std::string(argv[++i]) + "/share/jupyter";
        } else if (a.rfind("--prefix=", 0) == 0) {
            data_dir = a.substr(9) + "/share/jupyter";
        } else if (a == "--help" || a == "-h") {
            install_usage(stdout);
            return 0;
        } else {
            std::fprintf(stderr, "shoal-kernel install: unknown argument '%s'\n", a.c_str());
            install_usage(stderr);
            return 2;
        }
    }
    const std::string dir = data_dir + "/kernels/shoal";
    if (!make_dirs(dir)) return 1;
    std::string json = "{\n  \"argv\": [" + json_string(self_path()) +
                       ", \"-f\", \"{connection_file}\"],\n"
                       "  \"display_name\": \"Shoal\",\n"
                       "  \"language\": \"shoal\",\n"
                       "  \"interrupt_mode\": \"signal\",\n"
                       "  \"metadata\": {\"debugger\": false}\n}\n";
    if (!write_file(dir + "/kernel.json", json.data(), json.size())) return 1;
    if (!write_file(dir + "/logo-32x32.png", shoal_kernel_logos::kLogo32, sizeof shoal_kernel_logos::kLogo32))
        return 1;
    if (!write_file(dir + "/logo-64x64.png", shoal_kernel_logos::kLogo64, sizeof shoal_kernel_logos::kLogo64))
        return 1;
    std::printf("Installed the Shoal kernelspec in %s\n", dir.c_str());
    return 0;
}

void usage(std::FILE* to) {
    std::fputs(
        "usage: shoal-kernel -f CONNECTION_FILE   run the kernel (Jupyter starts it this way)\n"
        "       shoal-kernel install [--user | --prefix PREFIX]   install the kernelspec\n"
        "       shoal-kernel --version\n",
        to);
}

}  // namespace

int main(int argc, char** argv) {
    // Before any thread exists: every thread (xeus', zmq's) inherits the mask.
    sigset_t sigint;
    sigemptyset(&sigint);
    sigaddset(&sigint, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigint, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    if (argc >= 2 && std::string(argv[1]) == "install") return install(argc, argv);
    if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
        usage(stdout);
        return 0;
    }
    if (xeus::should_print_version(argc, argv)) {
        std::printf("shoal-kernel %s\n", SHOAL_VERSION);
        return 0;
    }

    shoal::runtime::install_compiled_backend();
    // `:set ranks N` spawns workers running the terminal front end, installed beside this program.
    {
        char self[4096];
        const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        const std::string path = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string(argv[0]);
        shoal::runtime::install_rank_world_factory(path.substr(0, path.rfind('/') + 1) + "shoal");
    }
    start_interrupt_thread(sigint);

    std::string file_name = xeus::extract_filename(argc, argv);
    auto interpreter = std::make_unique<shoal::kernel::Interpreter>();
    g_interpreter.store(interpreter.get());
    xeus::register_interpreter(interpreter.get());
    auto context = xeus::make_context<zmq::context_t>();
    // The shell requests are served on this (the main) thread, so the
    // session evaluates with the main thread's full stack.
    if (!file_name.empty()) {
        xeus::xconfiguration config = xeus::load_configuration(file_name);
        xeus::xkernel kernel(config, xeus::get_user_name(), std::move(context), std::move(interpreter),
                             xeus::make_xserver_zmq, xeus::make_in_memory_history_manager(), nullptr,
                             xeus::make_null_debugger, nl::json::object(), kJsonErrors);
        kernel.start();
        g_interpreter.store(nullptr);
    } else {
        xeus::xkernel kernel(xeus::get_user_name(), std::move(context), std::move(interpreter),
                             xeus::make_xserver_zmq, xeus::make_in_memory_history_manager(), nullptr,
                             xeus::make_null_debugger, nl::json::object(), kJsonErrors);
        std::clog << xeus::print_starting_message(kernel.get_config()) << std::flush;
        kernel.start();
        g_interpreter.store(nullptr);
    }
    return 0;
}
