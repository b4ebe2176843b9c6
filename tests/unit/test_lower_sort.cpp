// The radix sort lowering (sort, sortByKey) on the CPU executor in checking
// mode, compared BIT FOR BIT with the reference evaluator's sort_inner and
// sort_permutation (lang/array_ops.h): NaN placement and payloads, -0.0
// versus 0.0, stability, per-row sorts of matrices.
#include <doctest/doctest.h>

#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <numeric>
#include <thread>

#include "lang/array_ops.h"
#include "lowering_harness.h"
#include "runtime/cpu/native_tier.h"
#include "runtime/native/native_compiler.h"

using namespace shoal;
using namespace shoal::ir;
using namespace shoal::lowering_test;

namespace {

using Bool = uint8_t;  // bool keys as bytes, the memory layout of both backends

template <class T> ScalarType key_type() {
    if constexpr (std::is_same_v<T, Bool>) return ScalarType::Bool;
    else return type_of<T>();
}

template <class T> Array array_of(const std::vector<T>& v, const Shape& shape) {
    Array a(ops::prim_v<T>, shape);
    if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), v.size() * sizeof(T));
    return a;
}

// The reference evaluator's sort of each innermost row.
template <class T> std::vector<T> reference_sort(const std::vector<T>& v, const Shape& shape) {
    ArrayPtr s = ops::sort_inner(array_of(v, shape));
    return std::vector<T>(s->data<T>(), s->data<T>() + s->size());
}

template <class T> void check_bits(const std::vector<T>& got, const std::vector<T>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        if (std::memcmp(&got[i], &want[i], sizeof(T)) == 0) continue;
        INFO("element " << i << ": got " << +got[i] << ", want " << +want[i]);
        REQUIRE(false);
    }
}

// Random keys with many duplicates and every special value of the type.
template <class T> std::vector<T> special_keys(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<T> v(static_cast<size_t>(n));
    if constexpr (std::is_same_v<T, Bool>) {
        for (auto& x : v) x = static_cast<Bool>(rng() & 1);
    } else {
        using L = std::numeric_limits<T>;
        std::vector<T> specials = {L::lowest(), L::max(), T(0), T(1), T(-1)};
        if constexpr (std::is_floating_point_v<T>) {
            using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
            const U quiet = std::bit_cast<U>(L::quiet_NaN()), sign = U(1) << (sizeof(T) * 8 - 1);
            for (U bits : {quiet, U(quiet | 1), U(quiet | sign), U(quiet | sign | 5)})
                specials.push_back(std::bit_cast<T>(bits));  // NaNs of both signs and several payloads
            for (T x : {T(-0.0), L::infinity(), -L::infinity(), L::min(), -L::min(), L::denorm_min(), -L::denorm_min()})
                specials.push_back(x);
        } else {
            specials.push_back(T(L::min() + 1));
            specials.push_back(T(L::max() - 1));
        }
        std::uniform_int_distribution<int> pick(0, 3);
        std::uniform_int_distribution<size_t> special(0, specials.size() - 1);
        for (auto& x : v) {
            switch (pick(rng)) {
                case 0: x = specials[special(rng)]; break;
                case 1: x = static_cast<T>(std::uniform_int_distribution<int>(-20, 20)(rng)); break;  // duplicates
                default:
                    if constexpr (std::is_floating_point_v<T>) x = std::uniform_real_distribution<T>(-1e6, 1e6)(rng);
                    else x = std::uniform_int_distribution<T>(L::min(), L::max())(rng);
            }
        }
    }
    return v;
}

std::vector<std::string> extent_names(size_t rank) {
    std::vector<std::string> names;
    for (size_t k = 0; k < rank; ++k) names.push_back("e" + std::to_string(k));
    return names;
}

Args& bind_shape(Args& args, const Shape& shape) {
    for (size_t k = 0; k < shape.size(); ++k) args.scalar("e" + std::to_string(k), shape[k]);
    return args;
}

// sort of a buffer of the given shape (each innermost row) through the lowering.
template <class T> std::vector<T> lowered_sort(std::vector<T>& keys, const Shape& shape, const LoweringOptions& opt = {}) {
    PlanBuilder pb("sort");
    lower_sort(pb, "sort", buffer_array("keys", key_type<T>(), extent_names(shape.size())), {}, "out", {}, opt);
    Args args;
    args.buffer("keys", keys);
    auto r = run(pb.finish(), bind_shape(args, shape));
    return output<T>(r, "out");
}

template <class T> void check_sort(int64_t n, uint32_t seed, const LoweringOptions& opt = {}) {
    CAPTURE(n);
    auto keys = special_keys<T>(n, seed);
    check_bits(lowered_sort(keys, {n}, opt), reference_sort(keys, {n}));
}

// Around the block (256) and tile (256 * 8) boundaries, and large.
const std::vector<int64_t> kSizes = {0, 1, 2, 255, 256, 257, 2047, 2048, 2049, 4097, 100003};

}  // namespace

TEST_CASE("sort: every key type, bit for bit as the reference (NaNs last, -0.0 == 0.0, stable)") {
    for (int64_t n : kSizes) {
        check_sort<int32_t>(n, 1);
        check_sort<int64_t>(n, 2);
        check_sort<float>(n, 3);
        check_sort<double>(n, 4);
        check_sort<Bool>(n, 5);
    }
}

TEST_CASE("sort: chunks of several tiles per block, other radix widths and block sizes") {
    LoweringOptions few_blocks;
    few_blocks.max_blocks = 3;  // each block sorts many tiles: digit bases carry across tiles
    for (int64_t n : {int64_t{2049}, int64_t{30001}}) {
        check_sort<int32_t>(n, 6, few_blocks);
        check_sort<double>(n, 7, few_blocks);
    }
    // One key type per configuration: each is another CUDA source for NVRTC.
    auto with_options = [](int bits, int block, int items) {
        LoweringOptions opt;
        opt.radix_bits = bits;  // 3, 5, 6 do not divide the key widths: the top digit is partial
        opt.block_size = block;
        opt.sort_items_per_thread = items;
        opt.max_blocks = 5;
        return opt;
    };
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{5000}}) {
        check_sort<int32_t>(n, 8, with_options(1, 32, 1));
        check_sort<float>(n, 9, with_options(3, 64, 3));
        check_sort<int64_t>(n, 10, with_options(5, 128, 4));
        check_sort<double>(n, 11, with_options(6, 128, 2));
    }
}

TEST_CASE("sort: each innermost row of a matrix or rank-3 array (row digits above the key digits)") {
    for (const Shape& shape : std::vector<Shape>{{0, 5}, {5, 0}, {1, 1}, {1, 3000}, {3, 2049}, {17, 1}, {300, 7},
                                                 {70000, 2}, {4, 5, 6}}) {
        CAPTURE(shape.size());
        CAPTURE(shape[0]);
        CAPTURE(shape[1]);
        auto f = special_keys<float>(shape_size(shape), 11);
        check_bits(lowered_sort(f, shape), reference_sort(f, shape));
    }
    LoweringOptions narrow;
    narrow.radix_bits = 1;  // many row passes, skipped in pairs
    narrow.max_blocks = 4;
    auto d = special_keys<double>(2000, 13);
    check_bits(lowered_sort(d, {400, 5}, narrow), reference_sort(d, {400, 5}));
}

namespace {

void check_sort_by_key(const LoweringOptions& opt) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{257}, int64_t{2049}, int64_t{100003}}) {
        CAPTURE(n);
        const int64_t cols = 3;
        auto keys = special_keys<float>(n, 21);  // few distinct keys: most are ties
        auto ikeys = random_vector<int32_t>(n, 22, -3, 3);
        std::vector<int64_t> index(static_cast<size_t>(n));
        std::iota(index.begin(), index.end(), int64_t{0});
        auto vals = random_vector<double>(n, 23, -1, 1);
        auto rows = random_vector<int32_t>(n * cols, 24, -100, 100);
        for (bool float_keys : {true, false}) {
            PlanBuilder pb("sbk");
            PullArray k = float_keys ? vec("keys", ScalarType::F32) : vec("keys", ScalarType::I32);
            lower_sort(pb, "sbk", k,
                       {vec("index", ScalarType::I64), vec("vals", ScalarType::F64),
                        buffer_array("rows", ScalarType::I32, {"n", "cols"})},
                       "keys_out", {"index_out", "vals_out", "rows_out"}, opt);
            Args args;
            if (float_keys) args.buffer("keys", keys);
            else args.buffer("keys", ikeys);
            auto r = run(pb.finish(), args.buffer("index", index).buffer("vals", vals).buffer("rows", rows)
                                          .scalar("n", n).scalar("cols", cols));
            const std::vector<int64_t> perm =
                float_keys ? ops::sort_permutation(array_of(keys, {n})) : ops::sort_permutation(array_of(ikeys, {n}));
            check_bits(output<int64_t>(r, "index_out"), perm);  // the stable permutation itself
            std::vector<float> want_keys;
            std::vector<int32_t> want_ikeys, want_rows;
            std::vector<double> want_vals;
            for (int64_t p : perm) {
                want_keys.push_back(keys[p]);
                want_ikeys.push_back(ikeys[p]);
                want_vals.push_back(vals[p]);
                for (int64_t c = 0; c < cols; ++c) want_rows.push_back(rows[p * cols + c]);
            }
            if (float_keys) check_bits(output<float>(r, "keys_out"), want_keys);
            else check_bits(output<int32_t>(r, "keys_out"), want_ikeys);
            check_bits(output<double>(r, "vals_out"), want_vals);
            check_bits(output<int32_t>(r, "rows_out"), want_rows);
        }
    }
}

}  // namespace

TEST_CASE("sortByKey: stable; values of several types and ranks follow their keys") { check_sort_by_key({}); }

// The CPU form (one thread per block walking a chunk, 11-bit digits) sorts the
// same records: a stable sort's result is unique, bit for bit.
TEST_CASE("sort: the CPU form gives the GPU form's bits (keys, rows, sortByKey), interpreted and native") {
    for (int cores : {1, 3}) {
        CAPTURE(cores);
        LoweringOptions cpu;
        cpu.cpu_cores = cores;
        for (int64_t n : kSizes) {
            check_sort<int32_t>(n, 41, cpu);
            check_sort<int64_t>(n, 42, cpu);
            check_sort<float>(n, 43, cpu);
            check_sort<double>(n, 44, cpu);
            check_sort<Bool>(n, 45, cpu);
        }
        for (const Shape& shape : std::vector<Shape>{{0, 5}, {1, 3000}, {300, 7}, {70000, 2}}) {
            auto f = special_keys<float>(shape_size(shape), 46);
            check_bits(lowered_sort(f, shape, cpu), reference_sort(f, shape));
        }
        check_sort_by_key(cpu);
    }
    // As the native tier runs it: more chunks than one per core; two workers.
    LoweringOptions cpu;
    cpu.cpu_cores = 2;
    for (int64_t n : {int64_t{100003}, int64_t{1} << 20}) {
        CAPTURE(n);
        auto keys = special_keys<float>(n, 47);
        PlanBuilder pb("sort");
        lower_sort(pb, "sort", vec("keys", ScalarType::F32), {}, "out", {}, cpu);
        LaunchPlan plan = pb.finish();
        optimize(plan);
        if (!native::system_toolchain().why_not.empty()) {
            MESSAGE("native half skipped: " << native::system_toolchain().why_not);
            break;
        }
        std::string why;
        const auto compiled = cpu::NativePlan::build(plan.kernels, &why);
        REQUIRE_MESSAGE(compiled, why);
        Args args;
        args.buffer("keys", keys).scalar("n", n);
        args.a.native = compiled.get();
        cpu::ExecOptions two;
        two.threads = 2;
        const PlanResult r = cpu::run_plan(plan, args.a, two);
        CHECK(r.total.native_launches == r.total.launches);
        check_bits(output<float>(r, "out"), reference_sort(keys, {n}));
    }
}

// The auto tier's long first run: it starts the plan's build and, once the
// build is ready, runs the rest of its launches as native code (here the
// first launch is interpreted and the test waits for the build before the
// second, so that the switch happens at a known launch).
TEST_CASE("sort: a run that starts interpreted switches to native code between two launches, same bits") {
    if (!native::system_toolchain().why_not.empty()) return;
    LoweringOptions cpu;
    cpu.cpu_cores = 2;
    const int64_t n = 300007;
    auto keys = special_keys<float>(n, 48);
    PlanBuilder pb("sort");
    lower_sort(pb, "sort", vec("keys", ScalarType::F32), {}, "out", {}, cpu);
    auto plan = std::make_shared<LaunchPlan>(pb.finish());
    optimize(*plan);
    cpu::NativeTier tier(cpu::Tier::Auto);
    std::shared_ptr<const cpu::NativePlan> ready;
    int asked = 0;
    Args args;
    args.buffer("keys", keys).scalar("n", n);
    args.a.native_when_ready = [&](double) -> const cpu::NativePlan* {
        if (asked++ == 0) return nullptr;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
        while (!(ready = tier.when_ready(plan, 2 * cpu::NativeTier::kLongRun)) && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        return ready.get();
    };
    cpu::ExecOptions two;
    two.threads = 2;
    const PlanResult r = cpu::run_plan(*plan, args.a, two);
    REQUIRE(ready);
    CHECK(r.total.launches > 2);
    CHECK(r.total.native_launches == r.total.launches - 1);
    check_bits(output<float>(r, "out"), reference_sort(keys, {n}));
}

TEST_CASE("sort: a producer is fused into the first pass (keys = sqrt x - 1, NaN for x < 0)") {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{5000}}) {
        CAPTURE(n);
        auto x = random_vector<double>(n, 31, -4, 16);
        PullArray keys = map_array(vec("x", ScalarType::F64), ScalarType::F64, [](KernelBuilder&, ExprPtr v) {
            return binary(BinaryOp::Sub, call("sqrt", {v}, ScalarType::F64), const_float(1, ScalarType::F64));
        });
        PlanBuilder pb("fused");
        lower_sort(pb, "fused", keys, {}, "out", {});
        LaunchPlan plan = pb.finish();
        // 16 passes of 4 bits, 3 launches each, sharing 7 kernels: the first pass's
        // histogram and scatter, those of the passes in either ping-pong direction, the scan.
        CHECK(std::count_if(plan.steps.begin(), plan.steps.end(),
                            [](const PlanStep& s) { return s.kind == StepKind::Launch; }) == 48);
        CHECK(plan.kernels.size() == 7);
        // x is read by the first pass only: no temporary holds the producer's values.
        int readers = 0;
        for (const auto& k : plan.kernels)
            for (const auto& p : k.params) readers += p.name == "x";
        CHECK(readers == 2);
        auto r = run(plan, Args().buffer("x", x).scalar("n", n));
        std::vector<double> want(x.size());
        for (size_t i = 0; i < x.size(); ++i) want[i] = std::sqrt(x[i]) - 1;
        check_bits(output<double>(r, "out"), reference_sort(want, {n}));
    }
}

TEST_CASE("sort: the bits call prints as __float_as_uint / __double_as_longlong") {
    PlanBuilder pb("bits");
    lower_sort(pb, "bits", vec("x", ScalarType::F32), {}, "out", {});
    const std::string cuda = print_cuda(pb.finish().kernels);
    CHECK(cuda.find("__float_as_uint(") != std::string::npos);
    PlanBuilder pd("bits64");
    lower_sort(pd, "bits64", vec("x", ScalarType::F64), {}, "out", {});
    CHECK(print_cuda(pd.finish().kernels).find("__double_as_longlong(") != std::string::npos);
}
