// Values, conversions, printing and random numbers (lang/value, format, random).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "lang/diagnostics.h"
#include "lang/format.h"
#include "lang/random.h"
#include "lang/value.h"

using namespace shoal;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string fmt_f(float x) { return format_scalar(Scalar::of_float(x)); }
std::string fmt_d(double x) { return format_scalar(Scalar::of_double(x)); }

// A rank-n int array holding 0, 1, 2, ... in row-major order.
ArrayPtr iota_array(Shape shape, Prim elem = Prim::Int) {
    auto a = std::make_shared<Array>(elem, std::move(shape));
    for (int64_t k = 0; k < a->size(); ++k) a->set(k, convert_scalar(Scalar::of_long(k), elem));
    return a;
}

std::string fmt(Shape shape, int threshold = kDefaultPrintThreshold) {
    return format_value(Value(iota_array(std::move(shape))), threshold);
}

struct DummyFunction : Function {};

}  // namespace

// ---------------------------------------------------------------- scalars

TEST_CASE("Scalar widening accessors") {
    CHECK(Scalar::of_bool(true).as_double() == 1.0);
    CHECK(Scalar::of_bool(false).as_long() == 0);
    CHECK(Scalar::of_int(-7).as_long() == -7);
    CHECK(Scalar::of_long(int64_t{1} << 40).as_double() == 1099511627776.0);
    CHECK(Scalar::of_float(2.5f).as_double() == 2.5);
    CHECK(Scalar::of_double(-2.9).as_long() == -2);
    CHECK(Scalar::of_double(kNaN).as_long() == 0);
    CHECK(Scalar::of_double(1e300).as_long() == std::numeric_limits<int64_t>::max());
    CHECK(Scalar::of_int(3).as_bool());
    CHECK_FALSE(Scalar::of_long(0).as_bool());
}

TEST_CASE("convert_scalar: floating to integer truncates toward zero") {
    CHECK(convert_scalar(Scalar::of_double(3.7), Prim::Int).i == 3);
    CHECK(convert_scalar(Scalar::of_double(-3.7), Prim::Int).i == -3);
    CHECK(convert_scalar(Scalar::of_float(-0.5f), Prim::Int).i == 0);
    CHECK(convert_scalar(Scalar::of_double(1e15 + 0.5), Prim::Long).l == 1000000000000000);
    CHECK(convert_scalar(Scalar::of_double(3.7), Prim::Int).type == Prim::Int);
}

TEST_CASE("convert_scalar: NaN gives 0, out of range saturates") {
    constexpr int32_t imax = std::numeric_limits<int32_t>::max(), imin = std::numeric_limits<int32_t>::min();
    constexpr int64_t lmax = std::numeric_limits<int64_t>::max(), lmin = std::numeric_limits<int64_t>::min();
    CHECK(convert_scalar(Scalar::of_double(kNaN), Prim::Int).i == 0);
    CHECK(convert_scalar(Scalar::of_float(std::nanf("")), Prim::Long).l == 0);
    CHECK(convert_scalar(Scalar::of_double(1e10), Prim::Int).i == imax);
    CHECK(convert_scalar(Scalar::of_double(-1e10), Prim::Int).i == imin);
    CHECK(convert_scalar(Scalar::of_double(kInf), Prim::Int).i == imax);
    CHECK(convert_scalar(Scalar::of_double(-kInf), Prim::Long).l == lmin);
    CHECK(convert_scalar(Scalar::of_double(2147483647.9), Prim::Int).i == imax);
    CHECK(convert_scalar(Scalar::of_double(2147483648.0), Prim::Int).i == imax);
    CHECK(convert_scalar(Scalar::of_double(-2147483648.9), Prim::Int).i == imin);
    CHECK(convert_scalar(Scalar::of_double(-2147483649.0), Prim::Int).i == imin);
    CHECK(convert_scalar(Scalar::of_double(9.3e18), Prim::Long).l == lmax);
    CHECK(convert_scalar(Scalar::of_float(-9.3e18f), Prim::Long).l == lmin);
    CHECK(convert_scalar(Scalar::of_double(-9223372036854775808.0), Prim::Long).l == lmin);
}

TEST_CASE("convert_scalar: bool and integers") {
    CHECK(convert_scalar(Scalar::of_bool(true), Prim::Double).d == 1.0);
    CHECK(convert_scalar(Scalar::of_bool(true), Prim::Int).i == 1);
    CHECK(convert_scalar(Scalar::of_bool(false), Prim::Float).f == 0.0f);
    CHECK(convert_scalar(Scalar::of_int(-2), Prim::Bool).b);
    CHECK_FALSE(convert_scalar(Scalar::of_double(-0.0), Prim::Bool).b);
    CHECK(convert_scalar(Scalar::of_double(0.25), Prim::Bool).b);
    // long -> int keeps the low 32 bits (two's complement wrap).
    CHECK(convert_scalar(Scalar::of_long(4294967297), Prim::Int).i == 1);
    CHECK(convert_scalar(Scalar::of_long(-1), Prim::Int).i == -1);
    CHECK(convert_scalar(Scalar::of_int(-5), Prim::Long).l == -5);
    CHECK(convert_scalar(Scalar::of_int(16777217), Prim::Float).f == 16777216.0f);
    // Rounded once, directly to float (via double, 2^53 + 2^29 + 1 would end at 2^53).
    int64_t big = (int64_t{1} << 53) + (int64_t{1} << 29) + 1;
    CHECK(convert_scalar(Scalar::of_long(big), Prim::Float).f == static_cast<float>(big));
    CHECK(convert_scalar(Scalar::of_float(0.1f), Prim::Double).d == static_cast<double>(0.1f));
    CHECK(convert_scalar(Scalar::of_double(0.1), Prim::Float).f == 0.1f);
}

// ---------------------------------------------------------------- shapes and arrays

TEST_CASE("shape_size and shape_to_string") {
    CHECK(shape_size({3}) == 3);
    CHECK(shape_size({2, 3, 4}) == 24);
    CHECK(shape_size({5, 0}) == 0);
    CHECK(shape_size({}) == 1);
    CHECK(shape_to_string({3}) == "(3)");
    CHECK(shape_to_string({2, 3}) == "(2, 3)");
    CHECK(shape_to_string({1, 2, 3}) == "(1, 2, 3)");
    CHECK_THROWS_AS(shape_size({int64_t{1} << 40, int64_t{1} << 40}), Error);
}

TEST_CASE("Array is zero-filled and stores every element type") {
    Array a(Prim::Double, {2, 3});
    CHECK(a.rank() == 2);
    CHECK(a.size() == 6);
    CHECK(a.bytes.size() == 48);
    for (int64_t k = 0; k < a.size(); ++k) CHECK(a.get(k).d == 0.0);

    Array b(Prim::Bool, {3});
    CHECK(b.bytes.size() == 3);
    b.set(1, Scalar::of_bool(true));
    CHECK(b.bytes[1] == 1);
    CHECK(b.get(1).b);
    CHECK_FALSE(b.get(0).b);
    CHECK(b.get(1).type == Prim::Bool);

    Array i(Prim::Int, {2});
    i.set(1, Scalar::of_int(-42));
    CHECK(i.get(1).i == -42);
    CHECK(i.data<int32_t>()[1] == -42);

    Array l(Prim::Long, {1});
    l.set(0, Scalar::of_long(std::numeric_limits<int64_t>::min()));
    CHECK(l.get(0).l == std::numeric_limits<int64_t>::min());

    Array f(Prim::Float, {2, 1, 2});
    f.set(3, Scalar::of_float(0.1f));
    CHECK(f.get(3).f == 0.1f);
    CHECK(f.data<float>()[3] == 0.1f);
}

TEST_CASE("Array::set with the wrong element type is an internal error") {
    Array a(Prim::Int, {2});
    try {
        a.set(0, Scalar::of_double(1.0));
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.kind == ErrorKind::Internal);
    }
    CHECK_THROWS_AS(a.get(2), Error);
}

TEST_CASE("array-like values: arrays and tuples of equal-shape arrays") {
    Value xs(iota_array({3}));
    Value ys(iota_array({3}, Prim::Double));
    Value pair(std::vector<Value>{xs, ys});
    CHECK(is_array_like(xs));
    CHECK(is_array_like(pair));
    CHECK(array_like_shape(pair) == Shape{3});
    Value e = array_like_get(pair, 2);
    REQUIRE(e.is_tuple());
    CHECK(e.tuple()[0].scalar().i == 2);
    CHECK(e.tuple()[1].scalar().d == 2.0);
    CHECK(array_like_get(xs, 1).scalar().i == 1);

    Value nested(std::vector<Value>{xs, pair});
    CHECK(is_array_like(nested));
    CHECK(array_like_get(nested, 0).tuple()[1].is_tuple());

    CHECK_FALSE(is_array_like(Value(Scalar::of_int(1))));
    CHECK_FALSE(is_array_like(Value(std::vector<Value>{})));
    CHECK_FALSE(is_array_like(Value(std::vector<Value>{xs, Value(Scalar::of_int(1))})));
    CHECK_FALSE(is_array_like(Value(std::vector<Value>{xs, Value(iota_array({4}))})));
    CHECK_FALSE(is_array_like(Value(std::vector<Value>{xs, Value(iota_array({3, 1}))})));
}

// ---------------------------------------------------------------- printing scalars

TEST_CASE("format_scalar: integers and booleans") {
    CHECK(format_scalar(Scalar::of_int(45)) == "45");
    CHECK(format_scalar(Scalar::of_int(-2147483647 - 1)) == "-2147483648");
    CHECK(format_scalar(Scalar::of_long(9223372036854775807)) == "9223372036854775807");
    CHECK(format_scalar(Scalar::of_bool(true)) == "true");
    CHECK(format_scalar(Scalar::of_bool(false)) == "false");
}

TEST_CASE("format_scalar: doubles print shortest, always with '.' or an exponent") {
    CHECK(fmt_d(1.0) == "1.0");
    CHECK(fmt_d(3.0) == "3.0");
    CHECK(fmt_d(0.1) == "0.1");
    CHECK(fmt_d(100.0) == "100.0");
    CHECK(fmt_d(-2.5) == "-2.5");
    CHECK(fmt_d(0.1 + 0.2) == "0.30000000000000004");
    CHECK(fmt_d(1.0 / 3.0) == "0.3333333333333333");
    CHECK(fmt_d(1e-5) == "1e-5");
    CHECK(fmt_d(2.5e-7) == "2.5e-7");
    CHECK(fmt_d(1e10) == "10000000000.0");
    CHECK(fmt_d(2.5e10) == "25000000000.0");
    CHECK(fmt_d(1e16) == "1e16");
    CHECK(fmt_d(1e15) == "1000000000000000.0");
    CHECK(fmt_d(0.0001) == "0.0001");
    CHECK(fmt_d(1e100) == "1e100");
    CHECK(fmt_d(-1e-100) == "-1e-100");
    CHECK(fmt_d(1.7976931348623157e308) == "1.7976931348623157e308");
    CHECK(fmt_d(5e-324) == "5e-324");
    CHECK(fmt_d(123456789012.0) == "123456789012.0");
    CHECK(fmt_d(0.001) == "0.001");
    // Python's rule: scientific only for decimal exponents < -4 or >= 16.
    CHECK(fmt_d(10000.0) == "10000.0");
    CHECK(fmt_d(100000.0) == "100000.0");
    CHECK(fmt_d(150000.0) == "150000.0");
    CHECK(fmt_d(0.0) == "0.0");
    CHECK(fmt_d(-0.0) == "-0.0");
    CHECK(fmt_d(kInf) == "inf");
    CHECK(fmt_d(-kInf) == "-inf");
    CHECK(fmt_d(kNaN) == "nan");
    CHECK(fmt_d(-kNaN) == "nan");
    CHECK(fmt_d(static_cast<double>(0.1f)) == "0.10000000149011612");
}

TEST_CASE("format_scalar: floats print the shortest text of their own type") {
    CHECK(fmt_f(1.0f) == "1.0");
    CHECK(fmt_f(0.1f) == "0.1");
    CHECK(fmt_f(1.0f / 3.0f) == "0.33333334");
    CHECK(fmt_f(3.4028235e38f) == "3.4028235e38");
    CHECK(fmt_f(1e-45f) == "1e-45");  // the smallest denormal
    CHECK(fmt_f(1.1754944e-38f) == "1.1754944e-38");
    CHECK(fmt_f(16777216.0f) == "16777216.0");
    CHECK(fmt_f(1e10f) == "1e10");
    CHECK(fmt_f(123456789.0f) == "1.2345679e8");
    CHECK(fmt_f(12345678.0f) == "12345678.0");
    CHECK(fmt_f(-0.0f) == "-0.0");
    CHECK(fmt_f(std::numeric_limits<float>::infinity()) == "inf");
    CHECK(fmt_f(std::nanf("")) == "nan");
    CHECK(fmt_f(0.0f / std::numeric_limits<float>::infinity()) == "0.0");
}

TEST_CASE("printed floats read back to the same value") {
    for (double x : {0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-300, 6.02214076e23, 12345.678, 5e-324})
        CHECK(std::strtod(fmt_d(x).c_str(), nullptr) == x);  // strtod: stod rejects denormals
    for (float x : {0.1f, 1.0f / 3.0f, 2.0f / 3.0f, 1e-40f, 6.0221e23f, 12345.678f, 1e-45f})
        CHECK(std::strtof(fmt_f(x).c_str(), nullptr) == x);
}

// ---------------------------------------------------------------- printing values

TEST_CASE("format_value: scalars, unit, functions, strings, tuples") {
    CHECK(format_value(Value()) == "");
    CHECK(format_value(Value(Scalar::of_int(45))) == "45");
    CHECK(format_value(Value(std::make_shared<const DummyFunction>())) == "<function>");
    CHECK(format_value(Value::string("a.npy")) == "\"a.npy\"");
    CHECK(format_value(Value::string("say \"hi\"")) == "\"say \\\"hi\\\"\"");
    Value t(std::vector<Value>{Value(Scalar::of_int(1)), Value(Scalar::of_double(2.0))});
    CHECK(format_value(t) == "(1, 2.0)");
    Value nested(std::vector<Value>{t, Value(Scalar::of_bool(true))});
    CHECK(format_value(nested) == "((1, 2.0), true)");
}

TEST_CASE("format_value: arrays of rank 1 to 3") {
    CHECK(fmt({3}) == "[0, 1, 2]");
    CHECK(fmt({1}) == "[0]");
    CHECK(fmt({2, 2}) == "[[0, 1], [2, 3]]");
    CHECK(fmt({2, 2, 2}) == "[[[0, 1], [2, 3]], [[4, 5], [6, 7]]]");
    CHECK(format_value(Value(iota_array({3}, Prim::Double))) == "[0.0, 1.0, 2.0]");
    CHECK(format_value(Value(iota_array({2}, Prim::Float))) == "[0.0, 1.0]");
    CHECK(format_value(Value(iota_array({2}, Prim::Long))) == "[0, 1]");
    CHECK(format_value(Value(iota_array({3}, Prim::Bool))) == "[false, true, true]");
}

TEST_CASE("format_value: empty arrays") {
    CHECK(fmt({0}) == "[]");
    CHECK(fmt({0, 3}) == "[]");
    CHECK(fmt({2, 0}) == "[[], []]");
    CHECK(fmt({1, 0, 2}) == "[[]]");
}

TEST_CASE("format_value: summarising long axes") {
    CHECK(fmt({20}) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]");
    CHECK(fmt({21}) == "[0, 1, 2, ..., 18, 19, 20] (21)");
    CHECK(fmt({1000}) == "[0, 1, 2, ..., 997, 998, 999] (1000)");
    // The threshold is a parameter (`:set print N`).
    CHECK(fmt({8}, 7) == "[0, 1, 2, ..., 5, 6, 7] (8)");
    CHECK(fmt({8}, 8) == "[0, 1, 2, 3, 4, 5, 6, 7]");
    CHECK(fmt({50}, 100) == fmt({50}, 50));
    // An axis of six or fewer is never shortened: "..." would hide nothing.
    CHECK(fmt({6}, 2) == "[0, 1, 2, 3, 4, 5]");
    CHECK(fmt({7}, 2) == "[0, 1, 2, ..., 4, 5, 6] (7)");
}

TEST_CASE("format_value: summarising nested axes, shape printed once") {
    CHECK(fmt({2, 30}) == "[[0, 1, 2, ..., 27, 28, 29], [30, 31, 32, ..., 57, 58, 59]] (2, 30)");
    CHECK(fmt({30, 2}) == "[[0, 1], [2, 3], [4, 5], ..., [54, 55], [56, 57], [58, 59]] (30, 2)");
    CHECK(fmt({21, 21}) ==
          "[[0, 1, 2, ..., 18, 19, 20], [21, 22, 23, ..., 39, 40, 41], [42, 43, 44, ..., 60, 61, 62], ..., "
          "[378, 379, 380, ..., 396, 397, 398], [399, 400, 401, ..., 417, 418, 419], "
          "[420, 421, 422, ..., 438, 439, 440]] (21, 21)");
    CHECK(fmt({2, 1, 25}) == "[[[0, 1, 2, ..., 22, 23, 24]], [[25, 26, 27, ..., 47, 48, 49]]] (2, 1, 25)");
    CHECK(fmt({25, 0}) == "[[], [], [], ..., [], [], []] (25, 0)");
}

TEST_CASE("format_value: an array of tuples prints as a tuple of arrays") {
    Value pair(std::vector<Value>{Value(iota_array({3})), Value(iota_array({3}, Prim::Double))});
    CHECK(format_value(pair) == "([0, 1, 2], [0.0, 1.0, 2.0])");
    Value long_pair(std::vector<Value>{Value(iota_array({100})), Value(iota_array({100}))});
    CHECK(format_value(long_pair) ==
          "([0, 1, 2, ..., 97, 98, 99] (100), [0, 1, 2, ..., 97, 98, 99] (100))");
    Value mixed(std::vector<Value>{Value(Scalar::of_int(1)), Value(iota_array({1}, Prim::Double))});
    CHECK(format_value(mixed) == "(1, [0.0])");
}

// ---------------------------------------------------------------- random numbers

TEST_CASE("Philox-4x32-10 matches the Random123 known-answer vectors") {
    struct Kat {
        uint32_t counter[4];
        uint32_t key[2];
        uint32_t expected[4];
    };
    const Kat kats[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (const Kat& kat : kats) {
        uint32_t counter[4] = {kat.counter[0], kat.counter[1], kat.counter[2], kat.counter[3]};
        uint32_t out[4];
        philox4x32_10(counter, kat.key, out);
        for (int w = 0; w < 4; ++w) CHECK(out[w] == kat.expected[w]);
        for (int w = 0; w < 4; ++w) CHECK(counter[w] == kat.counter[w]);  // input untouched
    }
}

TEST_CASE("random_uniform is the documented function of (seed, stream, index)") {
    // Seed 0, stream 0, index 0 is the first KAT vector: word 0 = 0x6627e8d5.
    CHECK(random_uniform(0, 0, 0) == static_cast<float>(0x6627e8d5u >> 8) / 16777216.0f);
    // Element i of stream s under seed k: counter {lo i, hi i, lo s, hi s}, key {lo k, hi k}.
    uint64_t seed = 0x299f31d0a4093822, stream = 0x0370734413198a2e, index = 0x85a308d3243f6a88;
    CHECK(random_uniform(seed, stream, index) == static_cast<float>(0xd16cfe09u >> 8) / 16777216.0f);
    CHECK(random_uniform(42, 0, 7) == random_uniform(42, 0, 7));
    CHECK(random_uniform(42, 0, 7) != random_uniform(43, 0, 7));
    CHECK(random_uniform(42, 0, 7) != random_uniform(42, 1, 7));
    CHECK(random_uniform(42, 0, 7) != random_uniform(42, 0, 8));
}

TEST_CASE("random_uniform lies in [0, 1) and looks uniform") {
    const int n = 100000;
    double sum = 0;
    int low = 0;
    float lo = 1.0f, hi = 0.0f;
    for (int k = 0; k < n; ++k) {
        float u = random_uniform(42, 3, static_cast<uint64_t>(k));
        lo = std::min(lo, u);
        hi = std::max(hi, u);
        sum += u;
        low += u < 0.25f;
    }
    CHECK(lo >= 0.0f);
    CHECK(hi < 1.0f);
    CHECK(sum / n == doctest::Approx(0.5).epsilon(0.01));
    CHECK(static_cast<double>(low) / n == doctest::Approx(0.25).epsilon(0.02));
}
