#include "codegen/library_calls.h"

#include "lang/diagnostics.h"

namespace shoal::ir {

namespace {

const LibraryFunction kFunctions[] = {
    {"gemm", 5, 2, 1, "matrix product c = op(a) op(b) (row-major; cuBLAS / the CPU BLAS)"},
    {"lu", 3, 0, 4, "LU factorisation with partial pivoting, then a solve (column-major; LAPACK / cuSOLVER)"},
    {"svd", 2, 0, 5, "thin singular value decomposition a = u diag(s) v' (column-major; LAPACK gesdd / cuSOLVER gesvdj)"},
};

}  // namespace

const LibraryFunction* find_library_function(const std::string& name) {
    for (const LibraryFunction& f : kFunctions)
        if (name == f.name) return &f;
    return nullptr;
}

void verify_library_call(const LaunchPlan& plan, const LibraryCall& call) {
    const LibraryFunction* f = find_library_function(call.function);
    SHOAL_INTERNAL_ASSERT(f, "plan " + plan.name + " calls an unknown library function " + call.function);
    SHOAL_INTERNAL_ASSERT(static_cast<int>(call.args.size()) == f->args && static_cast<int>(call.reads.size()) == f->reads &&
                              static_cast<int>(call.writes.size()) == f->writes,
                          "plan " + plan.name + ": " + call.function + " called with the wrong number of operands");
    if (call.function == "gemm") {
        const ScalarType t = plan.find_buffer(call.writes[0])->elem;
        SHOAL_INTERNAL_ASSERT(t == ScalarType::F32 || t == ScalarType::F64, "gemm of " + std::string(scalar_name(t)));
        for (const std::string& b : call.reads)
            SHOAL_INTERNAL_ASSERT(plan.find_buffer(b)->elem == t, "gemm operands of different types");
    }
    if (call.function == "lu") {
        const ScalarType t = plan.find_buffer(call.writes[0])->elem;
        SHOAL_INTERNAL_ASSERT(t == ScalarType::F32 || t == ScalarType::F64, "lu of " + std::string(scalar_name(t)));
        SHOAL_INTERNAL_ASSERT(plan.find_buffer(call.writes[2])->elem == t, "lu: b of another type than a");
        for (size_t k : {size_t{1}, size_t{3}})
            SHOAL_INTERNAL_ASSERT(plan.find_buffer(call.writes[k])->elem == ScalarType::I32, "lu: pivots and info are ints");
    }
    if (call.function == "svd") {
        const ScalarType t = plan.find_buffer(call.writes[0])->elem;
        SHOAL_INTERNAL_ASSERT(t == ScalarType::F32 || t == ScalarType::F64, "svd of " + std::string(scalar_name(t)));
        for (size_t k : {size_t{1}, size_t{2}, size_t{3}})
            SHOAL_INTERNAL_ASSERT(plan.find_buffer(call.writes[k])->elem == t, "svd: s, u and v of another type than a");
        SHOAL_INTERNAL_ASSERT(plan.find_buffer(call.writes[4])->elem == ScalarType::I32, "svd: info is an int");
    }
}

LibraryCall lu_call(ExprPtr n, ExprPtr nrhs, bool trans, const std::string& a, const std::string& pivots, const std::string& b,
                    const std::string& info) {
    LibraryCall call;
    call.function = "lu";
    call.args = {std::move(n), std::move(nrhs), i64(trans)};
    call.writes = {a, pivots, b, info};
    return call;
}

LuShape lu_shape(const LibraryCall& call, const std::function<HostValue(const std::string&)>& lookup) {
    SHOAL_INTERNAL_ASSERT(call.function == "lu" && call.args.size() == 3, "lu_shape of " + call.function);
    return LuShape{eval_host_int(call.args[0], lookup), eval_host_int(call.args[1], lookup),
                   eval_host_int(call.args[2], lookup) != 0};
}

LibraryCall svd_call(ExprPtr rows, ExprPtr cols, const std::string& a, const std::string& s, const std::string& u,
                     const std::string& v, const std::string& info) {
    LibraryCall call;
    call.function = "svd";
    call.args = {std::move(rows), std::move(cols)};
    call.writes = {a, s, u, v, info};
    return call;
}

SvdShape svd_shape(const LibraryCall& call, const std::function<HostValue(const std::string&)>& lookup) {
    SHOAL_INTERNAL_ASSERT(call.function == "svd" && call.args.size() == 2, "svd_shape of " + call.function);
    return SvdShape{eval_host_int(call.args[0], lookup), eval_host_int(call.args[1], lookup)};
}

LibraryCall gemm_call(ExprPtr n, ExprPtr m, ExprPtr k, bool trans_a, bool trans_b, const std::string& a,
                      const std::string& b, const std::string& c) {
    LibraryCall call;
    call.function = "gemm";
    call.args = {std::move(n), std::move(m), std::move(k), i64(trans_a), i64(trans_b)};
    call.reads = {a, b};
    call.writes = {c};
    return call;
}

GemmShape gemm_shape(const LibraryCall& call, const std::function<HostValue(const std::string&)>& lookup) {
    SHOAL_INTERNAL_ASSERT(call.function == "gemm" && call.args.size() == 5, "gemm_shape of " + call.function);
    GemmShape s;
    s.n = eval_host_int(call.args[0], lookup);
    s.m = eval_host_int(call.args[1], lookup);
    s.k = eval_host_int(call.args[2], lookup);
    s.trans_a = eval_host_int(call.args[3], lookup) != 0;
    s.trans_b = eval_host_int(call.args[4], lookup) != 0;
    return s;
}

}  // namespace shoal::ir
