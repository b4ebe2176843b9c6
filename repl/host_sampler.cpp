// SHOAL_HOST_SAMPLES=FILE: a sampling profile of the host process, for a
// machine without perf (a lent GPU machine has none): every millisecond of
// CPU time (SIGPROF; a spin-wait in the CUDA driver counts) the stack's
// return addresses are kept, and at exit FILE gets one sample per line
// (addresses in hex) after the process's /proc/self/maps, so that
// `addr2line -f -C -e build/shoal` can name them on the build machine
// (tests/gpu_machine/samples.py folds them into the hottest functions).
#include "repl/host_sampler.h"

#include <execinfo.h>
#include <sys/time.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>

namespace shoal::repl {

namespace {

constexpr int kDepth = 24;
constexpr int kSamples = 40000;  // 40 s of CPU time
void* g_frames[kSamples][kDepth];
int g_depth[kSamples];
std::atomic<int> g_taken{0};
std::string g_path;

void on_sample(int) {
    const int i = g_taken.load(std::memory_order_relaxed);
    if (i >= kSamples) return;
    g_depth[i] = backtrace(g_frames[i], kDepth);
    g_taken.store(i + 1, std::memory_order_relaxed);
}

void write_samples() {
    itimerval off{};
    setitimer(ITIMER_PROF, &off, nullptr);
    std::ofstream out(g_path);
    std::ifstream maps("/proc/self/maps");
    out << maps.rdbuf() << "== samples\n";
    const int n = g_taken.load();
    for (int i = 0; i < n; ++i) {
        for (int d = 0; d < g_depth[i]; ++d) out << g_frames[i][d] << (d + 1 < g_depth[i] ? " " : "\n");
    }
}

}  // namespace

void start_host_sampler() {
    const char* path = std::getenv("SHOAL_HOST_SAMPLES");
    if (!path || !*path) return;
    g_path = path;
    void* warm[2];
    backtrace(warm, 2);  // loads the unwinder now, not inside the signal handler
    struct sigaction sa{};
    sa.sa_handler = on_sample;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, nullptr);
    itimerval every{{0, 1000}, {0, 1000}};
    setitimer(ITIMER_PROF, &every, nullptr);
    std::atexit(write_samples);
}

}  // namespace shoal::repl
