// A long session (issue 25): 10 000 mixed statements in one session
// (allocations, redefinitions, errors, interrupts, more distinct statements
// and plans than the caches hold). Resident memory must stay flat once the
// caches are full, every cache within its cap, and no file descriptor leaks.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "codegen/compiled_backend.h"
#include "differential.h"
#include "lang/memory_limit.h"
#include "lang/session.h"
#include "runtime/executors.h"

using namespace shoal;

namespace {

size_t open_descriptors() {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// The i-th statement of the soak: a mix a long session sees.
std::string soak_statement(int i) {
    const std::string v = "v" + std::to_string(i % 40), w = "v" + std::to_string((i / 3) % 40);
    switch (i % 8) {
        case 0: return "let " + v + " = map (\\x -> x * " + std::to_string(i % 7) + " + " + std::to_string(i) + ") (iota " +
                       std::to_string(100 + i % 5000) + ")";
        case 1: return "sum " + w;                                  // an unknown name until it is bound
        case 2: return w + "[" + std::to_string(i % 3000) + "]";  // out of bounds half the time
        case 3: return "let bad = [1, 2] + [1, 2, 3]";             // a shape mismatch
        default: {
            // A plan of a new structure: five operators chosen by i.
            static const char* ops[] = {" + ", " - ", " * ", " / ", " % "};
            std::string e = "x";
            for (int k = 0, code = i; k < 6; ++k, code /= 5) e = "(" + e + ops[code % 5] + std::to_string(k + 2) + ")";
            return "map (\\x -> " + e + ") v" + std::to_string(8 * ((i / 8) % 5));  // bound by case 0
        }
    }
}

}  // namespace

TEST_CASE("soak: 10000 mixed statements keep memory flat, caches within their caps, no descriptor leaked") {
    // Interpreted kernels: the soak measures the session, not 5000 native builds.
    const char* tier = std::getenv("SHOAL_CPU_TIER");
    const std::string saved_tier = tier ? tier : "";
    setenv("SHOAL_CPU_TIER", "interpret", 1);
    runtime::install_compiled_backend();
    // The test binary's plan observer keeps every kernel generated (for the
    // NVRTC check at the end): not these 5000.
    const compiled::PlanObserver observer = compiled::set_plan_observer(nullptr);
    Session s;
    testing::Capture out;
    const size_t fds_before = open_descriptors();
    int64_t rss_at_half = 0, rss_max_after_half = 0;
    std::string curve;
    for (int i = 0; i < 10000; ++i) {
        if (i % 500 == 250) {  // an interrupt during a runaway loop
            std::thread ctrl_c([&s] {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                s.request_cancel();
            });
            CHECK_FALSE(s.execute("loop i = 0 while i >= 0 do i + 1", "<soak>", out));
            ctrl_c.join();
        }
        s.execute(soak_statement(i), "<soak>", out);
        if (i % 1000 == 999) {
            const int64_t rss = host_memory_room().held;
            curve += " " + std::to_string(rss >> 20);
            if (i + 1 == 5000) rss_at_half = rss;
            if (i + 1 > 5000) rss_max_after_half = std::max(rss_max_after_half, rss);
        }
        out.all.clear();
    }
    MESSAGE("resident MiB every 1000 statements:" << curve);
    CHECK(rss_max_after_half <= rss_at_half + rss_at_half / 10);
    CHECK(open_descriptors() <= fds_before);
    // Every cache :cache lists is within its cap, and the plan cache forgot some.
    s.execute(":cache", "<soak>", out);
    const std::string report = out.all;
    INFO(report);
    const std::regex capped(R"(([0-9]+)[a-zA-Z ]*\(at most ([0-9]+)[,)])");  // counts, not sizes (MiB)
    int caps = 0;
    for (auto it = std::sregex_iterator(report.begin(), report.end(), capped); it != std::sregex_iterator(); ++it, ++caps)
        CHECK(std::stoll((*it)[1]) <= std::stoll((*it)[2]));
    CHECK(caps >= 4);
    const std::regex forgotten(R"(launch plans: [0-9]+ \(at most [0-9]+, ([0-9]+) forgotten\))");
    std::smatch m;
    REQUIRE(std::regex_search(report, m, forgotten));
    CHECK(std::stoll(m[1]) > 0);
    compiled::set_plan_observer(observer);
    if (saved_tier.empty()) unsetenv("SHOAL_CPU_TIER");
    else setenv("SHOAL_CPU_TIER", saved_tier.c_str(), 1);
}
