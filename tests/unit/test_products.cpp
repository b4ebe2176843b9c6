// Products (`@`, matmul) through the library-call step (codegen/library_calls.h):
// the BLAS where the operands are in memory, a fused operand written to
// memory first or read by the tiled kernel (a plan guard chooses), NumPy's
// ranks (a vector on either side), every path within float tolerance of the
// reference evaluator.
#include <doctest/doctest.h>

#include <fstream>

#include "differential.h"
#include "session_capture.h"

using namespace shoal;
using shoal::testing::differential;

namespace {

using testing::printed;

const char* kShapes =
    "let a = generate (37, 19) (\\i j -> float ((i * 7 + j * 3) % 11) - 5.0)\n"
    "let b = generate (19, 23) (\\i j -> float ((i * 5 + j) % 13) * 0.25)\n"
    "let v = generate 19 (\\i -> float (i % 5) - 2.0)\n"
    "let u = generate 37 (\\i -> float (i % 3))\n"
    "a @ b\n"                          // both in memory: the BLAS
    "a @ v\n"                          // matrix-vector
    "u @ a\n"                          // vector-matrix
    "v @ v\n"                          // the dot product, a scalar
    "matmul (transpose a) u\n"         // a transposed operand
    "(a * 2.0) @ b\n"                  // a fused operand
    "a @ (b + 1.0)\n"
    "(a * 0.5) @ (v - 1.0)\n"          // fused matrix, fused vector
    "generate (1, 19) (\\i j -> float j) @ b\n"
    "a @ generate (19, 1) (\\i j -> float i)\n"
    "generate (3, 0) (\\i j -> 1.0) @ generate (0, 4) (\\i j -> 1.0)\n"  // k = 0: zeros
    "generate (0, 3) (\\i j -> 1.0) @ generate (3, 4) (\\i j -> 1.0)\n"
    "let d = generate (33, 65) (\\i j -> double (i * j % 7) * 0.25)\n"
    "d @ transpose d\n"
    "sum (flatten (d @ transpose d))\n"
    "transpose d @ generate 33 (\\i -> double i)\n"
    // A short inner extent (k <= 8): a map node, fused into what reads it.
    "let t = generate (41, 3) (\\i j -> float ((i * 3 + j) % 7) - 3.0)\n"
    "t @ [1.0, -2.0, 0.5]\n"
    "t @ generate (3, 5) (\\i j -> float (i + j) * 0.5)\n"
    "[2.0, 1.0, -1.0] @ transpose t\n"
    "(t * 2.0) @ [1.0, 1.0, 1.0] - generate 41 (\\i -> float i)\n"
    "sum (t @ [1.0, -2.0, 0.5])\n"
    "generate (5, 1) (\\i j -> float i) @ generate (1, 4) (\\i j -> float j - 1.5)\n"
    "let dt = generate (9, 8) (\\i j -> double (i - j) * 0.5)\n"
    "dt @ generate 8 (\\i -> double i)\n"
    "[-0.0, -0.0] @ generate (2, 3) (\\i j -> 1.0)\n"  // -0.0 + -0.0 from zero: 0.0, as the reference
    // A tiny result and a long inner extent: a reduction without the BLAS.
    "transpose t @ t\n"
    "transpose t @ (t * 2.0 - 1.0)\n"
    "transpose t @ generate 41 (\\i -> float i)\n"
    "generate 41 (\\i -> float (i % 4)) @ t\n"
    "transpose dt @ generate 9 (\\i -> double i)\n"
    "generate 41 (\\i -> float (i % 3)) @ generate 41 (\\i -> 2.0 - float i)\n";

}  // namespace

TEST_CASE("products: every shape, in memory or fused, vectors on either side: the reference's results") {
    CHECK(differential(kShapes));
    CHECK(differential(kShapes, ":set blas off"));  // the tiled kernel for every product
}

TEST_CASE("products: a short inner extent is a map fused into its consumer, not a library call") {
    runtime::install_compiled_backend();
    Session s;
    printed(s, "let X = generate (100, 3) (\\i j -> float (i + j))\nlet w = [1.0, -2.0, 0.5]\nlet y = generate 100 (\\i -> float i)");
    const std::string plan = printed(s, ":cuda X @ w - y");
    INFO(plan);
    CHECK(plan.find("call gemm(") == std::string::npos);
    CHECK(plan.find("__global__") != std::string::npos);
    CHECK(plan.find("__global__") == plan.rfind("__global__"));  // one kernel: the product and the subtraction
    // X's rows are 3 long in the kernel, a constant (vector loads natively), not a run-time extent.
    CHECK(plan.find("X[shoal_mul(gid, 3LL)]") != std::string::npos);
    // Nine columns: a product again (the BLAS).
    printed(s, "let X9 = generate (100, 9) (\\i j -> float (i + j))");
    CHECK(printed(s, ":cuda X9 @ generate 9 (\\i -> 1.0)").find("call gemm(") != std::string::npos);
}

TEST_CASE("products: mismatched extents and ranks are the reference's errors; the session goes on") {
    CHECK(differential("let a = generate (3, 4) (\\i j -> 1.0)\na @ [1.0, 2.0]\n[1.0, 2.0] @ a\na @ a\nsum (a @ [1.0, 2.0, 3.0, 4.0])"));
    runtime::install_compiled_backend();
    Session s;
    const std::string e = printed(s, "let c = generate (2, 2, 2) (\\i j k -> 1.0)\nc @ [1.0, 2.0]\n1 + 1");
    INFO(e);
    CHECK(e.find("`@` multiplies matrices and vectors (rank 2 or 1); its left operand has rank 3") != std::string::npos);
    CHECK(e.find("2\n") != std::string::npos);
}

TEST_CASE("products: the plan calls the BLAS for operands in memory; :time and :cuda say which path ran and why") {
    runtime::install_compiled_backend();
    Session s;
    printed(s, "let a = generate (64, 32) (\\i j -> float (i + j))\nlet b = generate (32, 16) (\\i j -> float (i - j))");
    const std::string plan = printed(s, ":cuda a @ b");
    INFO(plan);
    CHECK(plan.find("call gemm(") != std::string::npos);
    CHECK(plan.find("(both operands in memory") != std::string::npos);
    CHECK(plan.find("\n  2. call gemm") != std::string::npos);  // no kernel at all: alloc, call
    // A fused operand on the GPU: a guard chooses, at run time, between
    // writing it to memory for the call and the tiled kernel reading it in place.
    const std::string fused = printed(s, ":cuda (a * 2.0) @ b");
    INFO(fused);
    CHECK(fused.find("if (") != std::string::npos);
    CHECK(fused.find("call gemm(") != std::string::npos);
    CHECK(fused.find("shared tiles") != std::string::npos);
    const std::string timed = printed(s, ":time a @ b");
    INFO(timed);
    CHECK(timed.find("library call") != std::string::npos);
    CHECK(timed.find("OpenBLAS") != std::string::npos);
    const std::string off = printed(s, ":set blas off\n:cuda a @ b");
    CHECK(off.find("call gemm(") == std::string::npos);
    CHECK(off.find("shared tiles") != std::string::npos);
}

TEST_CASE("products: a loop's state is computed each step, so every step runs the same cached plans") {
    runtime::install_compiled_backend();
    Session s;
    printed(s, "let X = generate (200, 3) (\\i j -> float ((i + j) % 5) * 0.1)\nlet y = X @ [1.0, -2.0, 0.5]");
    printed(s, "let step = \\w -> let r = X @ w - y in w - 0.01 * flatten (transpose X @ reshape (rows X, 1) r)");
    CompiledBackend& b = *s.compiled_backend();
    printed(s, "let w = loop w = [0.0, 0.0, 0.0] for i < 3 do step w");
    const int64_t misses = compiled::backend_stats(b).cache_misses;
    const std::string w = printed(s, "let w = loop w = [0.0, 0.0, 0.0] for i < 300 do step w\nw");
    INFO(w);
    CHECK(compiled::backend_stats(b).cache_misses == misses);  // 300 steps: no plan lowered again
    CHECK(differential("let X = generate (200, 3) (\\i j -> float ((i + j) % 5) * 0.1)\nlet y = X @ [1.0, -2.0, 0.5]\n"
                       "let step = \\w -> let r = X @ w - y in w - 0.01 * flatten (transpose X @ reshape (rows X, 1) r)\n"
                       "loop w = [0.0, 0.0, 0.0] for i < 300 do step w"));
}

// solve, inv and det of a product of operands in memory: the gemm call is
// part of their plan (FusionEngine::product_node); every other reader of a
// product gets it from memory as before.
const char* kLinalgOfProducts =
    "let X = generate (40, 3) (\\i j -> if j == 0 then 1.0 else float ((i * (37 + j * 17)) % 101) / 50.0)\n"
    "let y = generate 40 (\\i -> float (i % 7) * 0.5 - 1.0)\n"
    "solve (transpose X @ X) (transpose X @ y)\n"        // both operands products
    "inv (transpose X @ X)\n"
    "det (transpose X @ X)\n"
    "solve (transpose X @ X) (y @ X)\n"                   // a vector on the left
    "solve (transpose X @ X) (transpose X @ generate (40, 2) (\\i j -> float (i + j) * 0.1))\n"  // matrix rhs: read from memory
    "solve (transpose X @ (X * 2.0)) (transpose X @ y)\n"  // a fused operand: the product's own plan
    "let d = generate (30, 4) (\\i j -> double ((i * 5 + j * 3) % 11) - 5.0)\n"
    "solve (transpose d @ d) (transpose d @ generate 30 (\\i -> double i))\n"
    "let P = transpose X @ X\n"
    "solve P (transpose X @ y)\n"
    "sum (transpose X @ X)\n"
    "(transpose X @ X) + 1.0\n"
    "transpose (transpose X @ X) @ X[0:3]\n"
    "det (generate (3, 0) (\\i j -> 1.0) @ generate (0, 3) (\\i j -> 1.0))\n"  // k = 0: zeros
    "solve (generate (2, 4) (\\i j -> 1.0) @ generate (4, 2) (\\i j -> 1.0)) [1.0, 2.0]\n"  // singular
    "1 + 1\n";

TEST_CASE("products: solve, inv and det take a product of operands in memory into their own plan") {
    CHECK(differential(kLinalgOfProducts));
    runtime::install_compiled_backend();
    Session s;
    printed(s, "let X = generate (100, 3) (\\i j -> float (i % 7 + j * j))\nlet y = generate 100 (\\i -> float (i % 5))");
    const std::string plan = printed(s, ":cuda solve (transpose X @ X) (transpose X @ y)");
    INFO(plan);
    size_t gemms = 0;
    for (size_t at = plan.find("call gemm("); at != std::string::npos; at = plan.find("call gemm(", at + 1)) ++gemms;
    CHECK(gemms == 2);
    CHECK(plan.find("straight into the buffer LAPACK works on") != std::string::npos);
    CHECK(plan.find("plan 2") == std::string::npos);  // one plan
    // The singular product's error is solve's, at its position; the session goes on.
    const std::string e = printed(s, "let Z = generate (2, 4) (\\i j -> 1.0)\nsolve (Z @ transpose Z) [1.0, 2.0]\nlength y");
    INFO(e);
    CHECK(e.find(":2:1: error") != std::string::npos);
    CHECK(e.find("singular") != std::string::npos);
    CHECK(e.find("100\n") != std::string::npos);
}

TEST_CASE("plan cache: a statement typed again on another line is a hit, and its errors name that line") {
    runtime::install_compiled_backend();
    Session s;
    CompiledBackend& b = *s.compiled_backend();
    printed(s, "let x = generate 10 (\\i -> float i)");
    CHECK(printed(s, "sum (map (\\i -> x[i] * 2.0) (iota 10))") == "90.0\n");
    const int64_t misses = compiled::backend_stats(b).cache_misses;
    CHECK(printed(s, "1\n2\nsum (map (\\i -> x[i] * 2.0) (iota 10))") == "1\n2\n90.0\n");
    CHECK(compiled::backend_stats(b).cache_misses == misses);
    // The same kernel with its bounds check on lines 1 and 3: the error names the line that ran.
    const std::string first = printed(s, "sum (map (\\i -> x[i + 5]) (iota 10))");
    const std::string again = printed(s, "1\n2\nsum (map (\\i -> x[i + 5]) (iota 10))");
    INFO(first);
    INFO(again);
    CHECK(first.find("<t>:1:") != std::string::npos);
    CHECK(again.find("<t>:3:") != std::string::npos);
    CHECK(again.find("<t>:1:") == std::string::npos);
    CHECK(first.find("index 10 is out of bounds") != std::string::npos);
}

namespace {
// The process's resident memory in MiB (Linux), 0 where unknown.
int64_t resident_mib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) / 1024;
    return 0;
}
}  // namespace

TEST_CASE("loops: a computed step does not keep the graph that made it, so 200 steps hold a few arrays, not 200") {
    runtime::install_compiled_backend();
    Session s;
    printed(s, "let u0 = generate 1000000 (\\k -> float (k % 7))\nlet h = iterate 2 (\\u -> u with [1:-1] = u[1:-1] * 1.0) u0");
    const int64_t before = resident_mib();
    // 4 MB a step: keeping every step would grow by 800 MB.
    const std::string h = printed(s, "let h = iterate 200 (\\u -> u with [1:-1] = u[:-2] * 0.5 + u[2:] * 0.5) u0\nh[3]");
    const std::string g = printed(s, "let g = loop u = u0 for i < 200 do u with [1:-1] = u[:-2] * 0.5 + u[2:] * 0.5\ng[3]");
    CHECK(h == g);
    CHECK(h.find("error") == std::string::npos);
    if (before > 0) CHECK(resident_mib() - before < 200);
}
