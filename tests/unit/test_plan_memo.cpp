// The structural plan cache (codegen/plan_memo.h): plans found before
// lowering, keyed by what the lowering reads. Each case checks the results
// against the reference evaluator and that the cache was (or was not) used;
// the `unit` entry also runs every test with SHOAL_CHECK_PLAN_CACHE=1, which
// lowers each hit again and fails on a stale plan.
#include <doctest/doctest.h>

#include "codegen/structural_key.h"
#include "differential.h"
#include "session_capture.h"

using namespace shoal;
using shoal::testing::differential;
using shoal::testing::printed;

namespace {

// A compiled session and the number of plans it found before lowering while running `text`.
struct Memo {
    Session s;
    std::string out;
    Memo() { runtime::install_compiled_backend(); }
    int64_t found(const std::string& text) {
        CompiledBackend& b = *s.compiled_backend();
        const int64_t before = compiled::backend_stats(b).found_before_lowering;
        out = printed(s, text);
        return compiled::backend_stats(b).found_before_lowering - before;
    }
};

}  // namespace

TEST_CASE("plan memo: a loop lowers its array operations once") {
    const char* loop = "let x = generate 1000 (\\i -> float (i % 17))\n"
                       "loop a = 0.0 for i < 50 do a + sum (x * float i)\n"
                       "loop a = 0 for i < 20 do a + argmin (map (\\v -> v - float i) x)\n";
    CHECK(differential(loop));
    Memo m;
    const int64_t found = m.found(loop);
    INFO(m.out);
    CHECK(found >= 49 + 19);
    // :time says how many of a statement's plans were found before lowering.
    const std::string timed = printed(m.s, ":time loop a = 0.0 for i < 30 do a + sum (x * float i)");
    INFO(timed);
    CHECK(timed.find("; 30 plans, all found before lowering") != std::string::npos);
}

TEST_CASE("plan memo: other values, the same plan; other structure, another plan") {
    // Scalars are parameters: a captured scalar, a literal, an operand.
    CHECK(differential("let x = generate 100 (\\i -> float i)\n"
                       "let scaled (s : float) = sum (map (\\v -> v * s) x)\n"
                       "scaled 2.0\nscaled 3.0\nscaled (-1.0)\n"));
    // The same array twice is one buffer: x * x and x * y must not share a plan.
    CHECK(differential("let x = generate 100 (\\i -> float i)\nlet y = generate 100 (\\i -> 1.0)\n"
                       "let dot (a : [float]) (b : [float]) : float = sum (a * b)\n"
                       "dot x x\ndot x y\ndot y x\ndot y y\n"));
    // Other extents, other element types, other ranks.
    CHECK(differential("let total (n : int) = sum (map (\\i -> float i) (iota n))\n"
                       "total 10\ntotal 1000\ntotal 0\n"
                       "let rows (m : [[float]]) : [float] = sum (m * 2.0)\n"
                       "rows (generate (3, 4) (\\i j -> float (i + j)))\n"
                       "rows (generate (300, 2) (\\i j -> float (i * j)))\n"
                       "rows (generate (2, 3000) (\\i j -> float (i - j)))\n"));
    Memo m;
    CHECK(m.found("let x = generate 100 (\\i -> float i)\n"
                  "let y = generate 100 (\\i -> 1.0)\n"
                  "let dot (a : [float]) (b : [float]) : float = sum (a * b)\n"
                  "dot x x\ndot x y\ndot y x\n") == 1);  // x x lowers, x y lowers, y x is found
    CHECK(m.out.find("328350.0") != std::string::npos);
    CHECK(m.out.find("4950.0") != std::string::npos);
}

TEST_CASE("plan memo: a form chosen by an extent's value is chosen again") {
    // Row-wise reductions give short rows a thread each and long rows a
    // block: the memo holds one plan per answer to the lowering's question.
    const char* rows = "let r (m : [[float]]) : [float] = sum m\n"
                       "loop t = 0.0 for i < 6 do t + sum (r (generate (4, if i % 2 == 0 then 8 else 5000) (\\a b -> float (a + b + i))))\n";
    CHECK(differential(rows));
    Memo m;
    CHECK(m.found(rows) >= 4);
}

TEST_CASE("plan memo: the same statement on another line names that line in its errors") {
    Memo m;
    m.found("let x = [1.0, 2.0, 3.0]\nlet idx = [0, 5]\n");
    const std::string first = printed(m.s, "sum (map (\\i -> x[i]) idx)");
    const std::string again = printed(m.s, "1 + 1\nsum (map (\\i -> x[i]) idx)");
    INFO(first);
    INFO(again);
    CHECK(first.find("index 5 is out of bounds") != std::string::npos);
    CHECK(again.find(":2:") != std::string::npos);
    CHECK(again.find(":1:") == std::string::npos);
    CHECK(m.found("1 + 1\n1 + 1\nsum (map (\\i -> x[i]) [0, 1])") == 1);
    // A loop's steps replayed from plans found for another line fail there
    // too (w grows by one each step: the fourth, the first replayed, fails).
    const std::string loop = "loop w = [0, 0, 0] for i < 20 do sort (map (\\k -> w[k] + 1) w)";
    const std::string in_loop = printed(m.s, loop);
    const std::string loop_again = printed(m.s, "1 + 1\n1 + 1\n" + loop);
    INFO(in_loop);
    INFO(loop_again);
    CHECK(in_loop.find("is out of bounds") != std::string::npos);
    CHECK(loop_again.find(":3:") != std::string::npos);
    CHECK(loop_again.find(":1:") == std::string::npos);
}

TEST_CASE("plan memo: what shows or counts plans lowers them (and still finds them afterwards)") {
    Memo m;
    m.found("let x = generate 1000 (\\i -> float i)\nsum (x * 2.0)\n");
    CHECK(m.found(":profile sum (x * 2.0)\n") == 0);
    CHECK(m.out.find("sum_partials") != std::string::npos);
    CHECK(m.found(":cuda sum (x * 2.0)\n") == 0);
    CHECK(m.found("sum (x * 3.0)\n") == 1);
}

TEST_CASE("plan keys: the structural encoding tells every difference apart and nothing else") {
    namespace ir = shoal::ir;
    using ir::BinaryOp;
    using ir::ScalarType;
    auto key = [](const ir::ExprPtr& e) {
        std::string s;
        ir::append_key(s, e);
        return s;
    };
    const ir::ExprPtr x = ir::param("x", ScalarType::F32), y = ir::param("y", ScalarType::F32);
    // The same tree built twice: the same bytes.
    CHECK(key(ir::binary(BinaryOp::Add, x, ir::const_float(0.5))) == key(ir::binary(BinaryOp::Add, ir::param("x", ScalarType::F32), ir::const_float(0.5))));
    const std::vector<ir::ExprPtr> different = {
        ir::binary(BinaryOp::Add, x, y),
        ir::binary(BinaryOp::Add, y, x),                                  // operand order
        ir::binary(BinaryOp::Sub, x, y),                                  // operator
        ir::binary(BinaryOp::Add, x, ir::const_float(0.0)),
        ir::binary(BinaryOp::Add, x, ir::const_float(-0.0)),                  // constant bits, not values
        ir::binary(BinaryOp::Add, x, ir::const_float(0.0, ScalarType::F64)),  // constant type
        ir::binary(BinaryOp::Add, ir::param("ab", ScalarType::F32), ir::param("c", ScalarType::F32)),
        ir::binary(BinaryOp::Add, ir::param("a", ScalarType::F32), ir::param("bc", ScalarType::F32)),  // names are length-prefixed
        ir::load("in0", ir::i64(0), ScalarType::F32),
        ir::load("in0", ir::i64(0), ScalarType::F32, ir::MemSpace::Shared),      // memory space
        ir::load("in0", ir::i64(1), ScalarType::F32),
    };
    for (size_t a = 0; a < different.size(); ++a)
        for (size_t b = a + 1; b < different.size(); ++b) {
            CAPTURE(a);
            CAPTURE(b);
            CHECK(key(different[a]) != key(different[b]));
        }
}
