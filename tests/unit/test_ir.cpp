// The kernel IR: verify() accepts well-formed kernels and rejects each broken
// invariant with a message naming the kernel and the invariant; to_string()
// gives the documented text form (codegen/ir.h).
#include <doctest/doctest.h>

#include "codegen/ir.h"
#include "codegen/kernel_builder.h"
#include "lang/diagnostics.h"

using namespace shoal;
using namespace shoal::ir;
using S = ScalarType;

namespace {

ExprPtr i64(int64_t v) { return const_int(v, S::I64); }
ExprPtr i32(int64_t v) { return const_int(v, S::I32); }
ExprPtr bin(BinaryOp op, ExprPtr a, ExprPtr b) { return binary(op, std::move(a), std::move(b)); }
ExprPtr tid() { return thread_idx(); }

// A kernel with the usual parameters (n, x: f32 read, y: f32 write,
// acc: f32 readwrite), one check, block 256 and the given phases.
Kernel make_kernel(std::vector<BlockStmtPtr> body, int block_size = 256) {
    Kernel k;
    k.name = "test_kernel";
    k.block_size = block_size;
    k.params = {Param{"n", ParamKind::Scalar, S::I64, Access::Read}, Param{"x", ParamKind::Buffer, S::F32, Access::Read},
                Param{"y", ParamKind::Buffer, S::F32, Access::Write},
                Param{"acc", ParamKind::Buffer, S::F32, Access::ReadWrite}};
    k.shared = {SharedArray{"tile", S::F32, 256}};
    k.checks = {Check{"index out of bounds", Loc{}}};
    k.body = std::move(body);
    return k;
}

Kernel one_phase(std::vector<StmtPtr> code, int block_size = 256) {
    return make_kernel({phase(seq(std::move(code)))}, block_size);
}

// The message verify() throws, or "" when the kernel is accepted.
std::string verify_error(const Kernel& k) {
    try {
        verify(k);
    } catch (const Error& e) {
        CHECK(e.kind == ErrorKind::Internal);
        return e.message;
    }
    return "";
}

bool rejected_with(const Kernel& k, const std::string& fragment) {
    std::string msg = verify_error(k);
    INFO("message: " << msg);
    CHECK(msg.find("kernel 'test_kernel'") != std::string::npos);
    return msg.find(fragment) != std::string::npos;
}

ExprPtr gi() { return bin(BinaryOp::Add, bin(BinaryOp::Mul, block_idx(), i64(256)), cast(S::I64, tid())); }
StmtPtr copy_x_to_y() { return store("y", gi(), load("x", gi(), S::F32)); }

}  // namespace

// ---------------------------------------------------------------- accepted

TEST_CASE("verify: well-formed kernels") {
    CHECK(verify_error(one_phase({copy_x_to_y()})) == "");

    // a top-level Let of a phase is visible in later phases
    CHECK(verify_error(make_kernel({phase(seq({let("t", tid()), store("tile", var("t", S::I32), const_float(1),
                                                                        MemSpace::Shared)})),
                                    phase(store("y", cast(S::I64, var("t", S::I32)),
                                                load("tile", var("t", S::I32), S::F32, MemSpace::Shared)))})) == "");

    // the same name in sibling scopes with the same type
    CHECK(verify_error(one_phase({if_then(const_bool(true), {let("a", i32(1))}, {let("a", i32(2))})})) == "");

    // a uniform BlockFor over parameters, block coordinates and its own variable
    CHECK(verify_error(make_kernel({block_for("b", block_idx(), param("n", S::I64), grid_dim(),
                                              {phase(store("y", var("b", S::I64), const_float(0)))})})) == "");

    // shuffles under warp-uniform control: `let tid = threadIdx; if (tid / 32 == 0)`
    auto warp0 = bin(BinaryOp::Eq, bin(BinaryOp::Div, var("t", S::I32), i32(32)), i32(0));
    CHECK(verify_error(one_phase({let("t", tid()), let("v", const_float(1)),
                                  if_then(warp0, {assign("v", shuffle(ShuffleOp::Xor, var("v", S::F32), i32(16)))})})) ==
          "");
    CHECK(verify_error(one_phase({let("v", const_float(1)),
                                  if_then(bin(BinaryOp::Lt, tid(), i32(64)),
                                          {assign("v", shuffle(ShuffleOp::Down, var("v", S::F32), i32(1)))})})) == "");
    // ... and under a block-uniform variable
    CHECK(verify_error(one_phase({let("big", bin(BinaryOp::Gt, param("n", S::I64), i64(1000))), let("v", const_float(1)),
                                  if_then(var("big", S::Bool),
                                          {assign("v", shuffle(ShuffleOp::Idx, var("v", S::F32), i32(0)))})})) == "");

    // atomics with a result, CAS with a compare value, Error with a valid code
    CHECK(verify_error(one_phase({let("old", const_float(0)),
                                  atomic(AtomicOp::Add, "acc", i64(0), const_float(1), S::F32, "old"),
                                  atomic(AtomicOp::CAS, "acc", i64(1), const_float(1), S::F32, "", const_float(0)),
                                  atomic(AtomicOp::Max, "tile", i32(0), var("old", S::F32), S::F32, "", nullptr,
                                         MemSpace::Shared),
                                  error(0, gi(), param("n", S::I64))})) == "");
}

TEST_CASE("verify: KernelBuilder output verifies (finish calls verify)") {
    KernelBuilder kb("scale", 128);
    ExprPtr n = param(kb.scalar_param("n", S::I64), S::I64);
    kb.buffer_param("x", S::F64, Access::ReadWrite);
    ExprPtr i = kb.bind("i", gi());
    kb.emit(if_then(bin(BinaryOp::Lt, i, n), {store("x", i, bin(BinaryOp::Mul, load("x", i, S::F64), const_float(2, S::F64)))}));
    CHECK_NOTHROW(kb.finish());
}

// ---------------------------------------------------------------- rejected

TEST_CASE("verify: names") {
    CHECK(rejected_with(one_phase({store("y", i64(0), var("ghost", S::F32))}), "undeclared variable 'ghost'"));
    CHECK(rejected_with(one_phase({assign("ghost", i32(1))}), "undeclared variable 'ghost'"));
    CHECK(rejected_with(one_phase({let("a", i32(1)), let("a", i32(2))}), "'a' is declared again"));
    CHECK(rejected_with(one_phase({let("a", i32(1)), if_then(const_bool(true), {let("a", i32(2))})}),
                        "'a' is declared again"));
    CHECK(rejected_with(one_phase({let("n", i32(1))}), "reuses the name of a parameter"));
    CHECK(rejected_with(one_phase({if_then(const_bool(true), {let("a", i32(1))}, {let("a", const_float(2))})}),
                        "declared as f32 here and as i32 elsewhere"));
    CHECK(rejected_with(one_phase({let("max", i32(1))}), "'max' is a C++/CUDA keyword"));
    CHECK(rejected_with(one_phase({let("float", i32(1))}), "keyword"));
    CHECK(rejected_with(one_phase({let("shoal_tmp", i32(1))}), "reserved for the printer"));
    CHECK(rejected_with(one_phase({let("2x", i32(1))}), "not a C identifier"));
    // a Let nested in an If is local to it
    CHECK(rejected_with(make_kernel({phase(if_then(const_bool(true), {let("t", i32(1))})),
                                     phase(store("y", cast(S::I64, var("t", S::I32)), const_float(0)))}),
                        "undeclared variable 't'"));
    CHECK(rejected_with(one_phase({for_loop("j", i32(0), i32(4), i32(1), {assign("j", i32(2))})}),
                        "assignment to loop variable 'j'"));
}

TEST_CASE("verify: memory and access") {
    CHECK(rejected_with(one_phase({store("x", i64(0), const_float(1))}), "writes 'x', a Read buffer"));
    CHECK(rejected_with(one_phase({atomic(AtomicOp::Add, "x", i64(0), const_float(1), S::F32)}), "a Read buffer"));
    CHECK(rejected_with(one_phase({store("acc", i64(0), load("y", i64(0), S::F32))}), "reads 'y', a Write buffer"));
    CHECK(rejected_with(one_phase({store("nowhere", i64(0), const_float(1))}), "not a buffer parameter"));
    CHECK(rejected_with(one_phase({store("tile", i64(0), const_float(1), MemSpace::Shared)}),
                        "shared indices are i32"));
    CHECK(rejected_with(one_phase({store("y", i32(0), const_float(1))}), "global indices are i64"));
    CHECK(rejected_with(one_phase({store("y", i64(0), const_float(1, S::F64))}), "store of"));
    CHECK(rejected_with(one_phase({store("y", i64(0), load("x", i64(0), S::F64))}), "load of 'x' typed f64"));
    CHECK(rejected_with(one_phase({atomic(AtomicOp::And, "acc", i64(0), const_float(1), S::F32)}),
                        "bitwise atomic"));
    CHECK(rejected_with(one_phase({atomic(AtomicOp::CAS, "acc", i64(0), const_float(1), S::F32)}),
                        "atomic CAS needs 3 expressions"));
    CHECK(rejected_with(one_phase({atomic(AtomicOp::Add, "acc", i64(0), const_float(1), S::F32, "nobody")}),
                        "result variable 'nobody' is not declared"));
    CHECK(rejected_with(one_phase({error(1, i64(0), i64(1))}), "error code 1 does not index"));
    CHECK(rejected_with(one_phase({error(0, i32(0), i64(1))}), "not i64"));
    Kernel big = one_phase({copy_x_to_y()});
    big.shared.push_back(SharedArray{"huge", S::F64, 8192});
    CHECK(rejected_with(big, "over the 48 KiB static limit"));
}

TEST_CASE("verify: types") {
    CHECK(rejected_with(one_phase({let("a", bin(BinaryOp::Add, i32(1), const_float(2)))}),
                        "operand types differ in `1 + 2.0f`: i32 vs f32"));
    CHECK(rejected_with(one_phase({let("a", bin(BinaryOp::Add, const_bool(true), const_bool(false)))}),
                        "arithmetic on bool"));
    CHECK(rejected_with(one_phase({let("a", bin(BinaryOp::Shl, const_float(1), const_float(2)))}), "shift of f32"));
    CHECK(rejected_with(one_phase({if_then(i32(1), {})}), "if condition `1` is i32, not bool"));
    CHECK(rejected_with(one_phase({let("a", call("sqrt", {i32(4)}, S::I32))}), "sqrt is not defined on i32"));
    CHECK(rejected_with(one_phase({let("a", call("frobnicate", {i32(4)}, S::I32))}), "unknown function"));
    CHECK(rejected_with(one_phase({let("a", call("pow", {const_float(4)}, S::F32))}), "pow takes 2 arguments"));
    CHECK(rejected_with(one_phase({let("a", const_int(int64_t{1} << 40, S::I32))}), "does not fit i32"));
    CHECK(rejected_with(one_phase({let("a", param("n", S::I32))}), "parameter 'n' used as i32"));
    CHECK(rejected_with(one_phase({let("a", i32(1)), assign("a", i64(2))}), "assignment of `2L` (i64) to 'a' (i32)"));
    CHECK(rejected_with(one_phase({for_loop("j", i32(0), i64(4), i32(1), {})}), "bound `4L` is i64"));
    CHECK(rejected_with(one_phase({for_loop("j", i32(0), i32(4), i32(0), {})}), "loop step `0` is not positive"));
}

TEST_CASE("verify: uniformity of BlockFor and shuffles") {
    auto loop_to = [](ExprPtr hi) {
        return make_kernel({phase(let("t", cast(S::I64, tid()))),
                            block_for("b", i64(0), std::move(hi), i64(1), {phase(store("y", var("b", S::I64), const_float(0)))})});
    };
    CHECK(rejected_with(loop_to(cast(S::I64, tid())), "BlockFor bound uses threadIdx"));
    CHECK(rejected_with(loop_to(var("t", S::I64)), "thread-local variable 't'"));
    CHECK(rejected_with(loop_to(cast(S::I64, load("x", i64(0), S::F32))), "BlockFor bound loads 'x'"));

    auto shuffled = assign("v", shuffle(ShuffleOp::Xor, var("v", S::F32), i32(1)));
    CHECK(rejected_with(one_phase({let("v", const_float(1)),
                                   if_then(bin(BinaryOp::Lt, cast(S::I64, tid()), param("n", S::I64)), {shuffled})}),
                        "under thread-dependent control"));
    CHECK(rejected_with(one_phase({let("v", const_float(1)),
                                   if_then(bin(BinaryOp::Lt, tid(), i32(40)), {shuffled})}),
                        "under thread-dependent control"));
    CHECK(rejected_with(one_phase({let("v", const_float(1)),
                                   for_loop("j", i32(0), tid(), i32(1), {shuffled})}),
                        "under thread-dependent control"));
    CHECK(rejected_with(one_phase({let("v", const_float(1)),
                                   while_loop(bin(BinaryOp::Gt, var("v", S::F32), load("x", i64(0), S::F32)), {shuffled})}),
                        "under thread-dependent control"));
    // a variable set under divergent control is not uniform
    CHECK(rejected_with(one_phase({let("v", const_float(1)), let("go", const_bool(true)),
                                   if_then(bin(BinaryOp::Lt, tid(), i32(3)), {assign("go", const_bool(false))}),
                                   if_then(var("go", S::Bool), {shuffled})}),
                        "under thread-dependent control"));
    // a reassigned `tid` is no longer an alias of threadIdx
    CHECK(rejected_with(one_phase({let("t", tid()), assign("t", bin(BinaryOp::Add, var("t", S::I32), i32(1))),
                                   let("v", const_float(1)),
                                   if_then(bin(BinaryOp::Eq, bin(BinaryOp::Div, var("t", S::I32), i32(32)), i32(0)),
                                           {shuffled})}),
                        "under thread-dependent control"));
    CHECK(rejected_with(one_phase({let("v", const_float(1)), shuffled}, 48), "multiple of 32"));
    CHECK(rejected_with(one_phase({copy_x_to_y()}, 2048), "block size 2048"));
}

TEST_CASE("verify: the message says where") {
    std::string msg = verify_error(make_kernel(
        {phase(copy_x_to_y()),
         phase(seq({for_loop("j", i64(0), i64(2), i64(1), {if_then(const_bool(true), {store("x", var("j", S::I64), const_float(0))})})}))}));
    CHECK(msg.find("internal error") != std::string::npos);
    CHECK(msg.find("kernel 'test_kernel' at phase 1 > for j > if true: store writes 'x', a Read buffer") !=
          std::string::npos);
}

// ---------------------------------------------------------------- text form

TEST_CASE("to_string: expressions") {
    CHECK(to_string(bin(BinaryOp::Mul, bin(BinaryOp::Add, var("a", S::I32), i32(1)), i32(-2))) == "(a + 1) * (-2)");
    CHECK(to_string(bin(BinaryOp::Min, const_float(0.1), const_float(2.5e10))) == "min(0.1f, 2.5e+10f)");
    CHECK(to_string(cast(S::F64, load("x", i64(3), S::F32))) == "f64(x[3L])");
    CHECK(to_string(select(const_bool(true), const_int(7, S::U32), const_int(UINT32_MAX, S::U32))) ==
          "select(true, 7u, 4294967295u)");
    CHECK(to_string(shuffle(ShuffleOp::Down, var("v", S::F64), i32(16))) == "shfl_down(v, 16)");
    CHECK(to_string(unary(UnaryOp::Neg, unary(UnaryOp::Neg, var("v", S::F64)))) == "-(-v)");
    CHECK(to_string(const_float(1.0 / 0.0, S::F32)) == "f32(inf)");
    CHECK(to_string(const_float(1, S::F64)) == "1.0");
}

TEST_CASE("to_string: kernels") {
    Kernel k = make_kernel({phase(seq({comment("copy"), let("t", tid()), copy_x_to_y()})),
                            block_for("b", i64(0), param("n", S::I64), i64(256),
                                      {phase(seq({let("old", const_float(0)),
                                                  atomic(AtomicOp::Add, "acc", var("b", S::I64), const_float(1), S::F32, "old"),
                                                  if_then(bin(BinaryOp::Lt, var("b", S::I64), i64(0)), {error(0, var("b", S::I64), param("n", S::I64))},
                                                          {store("tile", var("t", S::I32), var("old", S::F32), MemSpace::Shared)})}))}),
                            phase(while_loop(const_bool(false), {}))});
    k.comment = "a test";
    CHECK(to_string(k) ==
          "kernel test_kernel (block 256)\n"
          "  // a test\n"
          "  param n: i64\n"
          "  param x: f32[] read\n"
          "  param y: f32[] write\n"
          "  param acc: f32[] readwrite\n"
          "  shared tile: f32[256]\n"
          "  check 0: index out of bounds\n"
          "body:\n"
          "  // copy\n"
          "  let t: i32 = threadIdx\n"
          "  y[(blockIdx * 256L) + i64(threadIdx)] = x[(blockIdx * 256L) + i64(threadIdx)]\n"
          "  -- barrier --\n"
          "  block for b: i64 in [0L, n) step 256L:\n"
          "    let old: f32 = 0.0f\n"
          "    old = atomic_add(acc[b], 1.0f)\n"
          "    if b < 0L:\n"
          "      error 0 (index b, extent n)\n"
          "    else:\n"
          "      tile[t] = old\n"
          "    -- barrier --\n"
          "  while false:\n"
          "    pass\n");
    CHECK_NOTHROW(verify(k));
}
