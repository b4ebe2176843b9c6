// Performance advice (issue 22): `:time` and `:profile` say in one line, with
// the fix, when a statement's time went outside kernels, when a kernel kept
// most of the machine idle, and when a kernel loaded many times the bytes
// it needs. Each case is built to stand out whatever the machine's speed.
#include <doctest/doctest.h>

#include <thread>

#include "runtime/executors.h"
#include "session_capture.h"

using namespace shoal;

using testing::printed;  // displays reach its texts (SessionCapture keeps none apart)

TEST_CASE("advice: a loop of small array operations spends its time outside kernels") {
    runtime::install_compiled_backend();
    Session s;
    printed(s, "let x = generate 1000 (\\i -> float i)\nlet a = loop a = 0.0 for i < 30 do a + sum (x * float i)");
    const std::string t = printed(s, ":time let a = loop a = 0.0 for i < 300 do a + sum (x * float i)");
    INFO(t);
    CHECK(t.find("advice: 300 plans ran and ") != std::string::npos);
    CHECK(t.find("whole-array operations") != std::string::npos);
    // One large operation: no advice.
    const std::string one = printed(s, ":time let b = sum x");
    CHECK(one.find("advice:") == std::string::npos);
}

TEST_CASE("advice: a product on one block says so and names the switch") {
    if (std::thread::hardware_concurrency() < 2) return;  // one core: one block is the whole machine
    runtime::install_compiled_backend();
    Session s;
    // A 3 x 17 result: one 32 x 32 tile (a result of at most 16 elements is a reduction).
    printed(s, ":set blas off\nlet a = generate (3, 2048) (\\i j -> float (i + j))\nlet b = generate (2048, 17) (\\i j -> 1.0)");
    printed(s, "let c = a @ b");
    const std::string t = printed(s, ":time let c = a @ b");
    INFO(t);
    CHECK(t.find("advice: `matmul` ran 1 block for ") != std::string::npos);
    CHECK(t.find("(`:set blas on`)") != std::string::npos);
    // Through the BLAS there is no kernel to advise on.
    CHECK(printed(s, ":set blas on\n:time let c = a @ b").find("advice:") == std::string::npos);
}

TEST_CASE("advice: :profile names a kernel that re-reads its inputs for every output") {
    runtime::install_compiled_backend();
    Session s;
    printed(s, "let z = generate (64, 64) (\\i j -> float ((i + j) % 7))");
    const std::string p = printed(s, ":profile let c = generate (64, 64) (\\i j -> sum (zipWith (*) z[i, :] z[:, j]))");
    INFO(p);
    CHECK(p.find("advice: `map` loaded ") != std::string::npos);
    CHECK(p.find("write `a @ b`") != std::string::npos);
    const std::string fine = printed(s, ":profile let d = z * 2.0");
    CHECK(fine.find("advice:") == std::string::npos);
}
