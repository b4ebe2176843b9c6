// .npy and CSV files (lang/io).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "lang/diagnostics.h"
#include "lang/format.h"
#include "lang/io.h"
#include "lang/value.h"
#include "temp_files.h"

using namespace shoal;
namespace fs = std::filesystem;
using testing::TempDir;
using testing::read_bytes;
using testing::write_bytes;

namespace {

// The message of the Io error that `f` throws ("" and a failed check if none).
std::string io_error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        CHECK(e.kind == ErrorKind::Io);
        return e.message;
    }
    FAIL_CHECK("no error thrown");
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A .npy file with a hand-written header dict (no padding unless given).
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
    std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
    size_t n = dict.size();
    out += static_cast<char>(n & 0xff);
    out += static_cast<char>((n >> 8) & 0xff);
    if (major > 1) out += std::string{static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
    return out + dict + data;
}

std::string doubles(std::initializer_list<double> xs) {
    std::string out;
    for (double x : xs) out.append(reinterpret_cast<const char*>(&x), sizeof x);
    return out;
}

// Distinct, non-trivial elements: bools alternate, integers need their width,
// floating values are inexact in binary.
Scalar sample_element(Prim elem, int64_t k) {
    switch (elem) {
        case Prim::Bool: return Scalar::of_bool(k % 2 == 1);
        case Prim::Int: return Scalar::of_int(static_cast<int32_t>((k * 7 - 5) * 1000));
        case Prim::Long: return Scalar::of_long((k * 7 - 5) * 3000000000);
        case Prim::Float: return Scalar::of_float(static_cast<float>(k * 7 - 5) * 0.1f);
        case Prim::Double: return Scalar::of_double((k * 7 - 5) * 0.1);
    }
    return {};
}

ArrayPtr sample_array(Prim elem, Shape shape) {
    auto a = std::make_shared<Array>(elem, std::move(shape));
    for (int64_t k = 0; k < a->size(); ++k) a->set(k, sample_element(elem, k));
    return a;
}

void check_same(const Array& a, const Array& b) {
    CHECK(a.elem == b.elem);
    CHECK(a.shape == b.shape);
    CHECK(a.bytes == b.bytes);
}

const Loc kNoLoc{};

#ifdef SHOAL_SOURCE_DIR
std::string data_file(const std::string& name) { return std::string(SHOAL_SOURCE_DIR) + "/tests/data/npy/" + name; }
#endif

}  // namespace

// ---------------------------------------------------------------- .npy round trips

TEST_CASE("npy: save then load gives the same array, for every dtype and rank") {
    TempDir tmp("shoal-test-io-");
    for (Prim elem : {Prim::Bool, Prim::Int, Prim::Long, Prim::Float, Prim::Double}) {
        for (const Shape& shape : {Shape{5}, Shape{2, 3}, Shape{2, 3, 4}, Shape{0}, Shape{3, 0}, Shape{1, 1, 1}}) {
            CAPTURE(prim_name(elem));
            CAPTURE(shape_to_string(shape));
            std::string path = tmp / "a.npy";
            ArrayPtr a = sample_array(elem, shape);
            save_npy(path, *a, kNoLoc);
            check_same(*load_npy(path, kNoLoc), *a);
            NpyHeader h = read_npy_header(path, kNoLoc);
            CHECK(h.elem == elem);
            CHECK(h.shape == shape);
        }
    }
}

TEST_CASE("npy: the file layout is numpy's (version 1.0, 64-byte aligned header)") {
    TempDir tmp("shoal-test-io-");
    auto a = std::make_shared<Array>(Prim::Double, Shape{2, 3});
    save_npy(tmp / "m.npy", *a, kNoLoc);
    std::string bytes = read_bytes(tmp / "m.npy");
    REQUIRE(bytes.size() == 128 + 48);
    CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
    CHECK(static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]) == 118);
    const std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
    CHECK(bytes.substr(10, dict.size()) == dict);
    CHECK(bytes.find_first_not_of(' ', 10 + dict.size()) == 127);  // space padding, then a newline
    CHECK(bytes[127] == '\n');
}

TEST_CASE("npy: saving replaces a file atomically and leaves no temporary") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "x.npy";
    write_bytes(path, "old contents");
    save_npy(path, *sample_array(Prim::Int, {4}), kNoLoc);
    check_same(*load_npy(path, kNoLoc), *sample_array(Prim::Int, {4}));
    int files = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tmp.dir)) ++files;
    CHECK(files == 1);
}

TEST_CASE("npy: save errors name the file and the reason") {
    TempDir tmp("shoal-test-io-");
    std::string msg = io_error_of([&] { save_npy(tmp / "missing/dir/x.npy", *sample_array(Prim::Int, {2}), kNoLoc); });
    CHECK(msg == "cannot write '" + (tmp / "missing/dir/x.npy") + "': No such file or directory");
    fs::create_directory(tmp / "d.npy");
    msg = io_error_of([&] { save_npy(tmp / "d.npy", *sample_array(Prim::Int, {2}), kNoLoc); });
    CHECK(contains(msg, "cannot write '" + (tmp / "d.npy") + "'"));
    int files = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(tmp.dir)) ++files;
    CHECK(files == 1);  // the directory only: the temporary file was removed
}

#ifdef SHOAL_SOURCE_DIR
TEST_CASE("npy: files written by numpy load with the right values") {
    ArrayPtr b = load_npy(data_file("b1_3.npy"), kNoLoc);
    CHECK(format_value(Value(b)) == "[true, false, true]");
    CHECK(format_value(Value(load_npy(data_file("i4_4.npy"), kNoLoc))) == "[1, -2, 3, 2147483647]");
    ArrayPtr l = load_npy(data_file("i8_2x2x2.npy"), kNoLoc);
    CHECK(l->elem == Prim::Long);
    CHECK(format_value(Value(l)) ==
          "[[[-4000000000000, -3000000000000], [-2000000000000, -1000000000000]], "
          "[[0, 1000000000000], [2000000000000, 3000000000000]]]");
    ArrayPtr f = load_npy(data_file("f4_3.npy"), kNoLoc);
    CHECK(f->elem == Prim::Float);
    CHECK(format_value(Value(f)) == "[0.1, 0.33333334, -inf]");
    CHECK(format_value(Value(load_npy(data_file("f8_2x3.npy"), kNoLoc))) ==
          "[[0.1, 0.6, 1.1], [1.6, 2.1, 2.6]]");
    ArrayPtr empty = load_npy(data_file("f8_0.npy"), kNoLoc);
    CHECK(empty->shape == Shape{0});
    CHECK(format_value(Value(load_npy(data_file("f8_v2.npy"), kNoLoc))) == "[1.5, -2.5]");
    CHECK(format_value(Value(load_npy(data_file("f8_v3.npy"), kNoLoc))) == "[1.5, -2.5]");
}

TEST_CASE("npy: our files are byte-identical to numpy's") {
    TempDir tmp("shoal-test-io-");
    for (const char* name : {"b1_3.npy", "i4_4.npy", "i8_2x2x2.npy", "f4_3.npy", "f8_2x3.npy", "f8_0.npy"}) {
        CAPTURE(name);
        save_npy(tmp / name, *load_npy(data_file(name), kNoLoc), kNoLoc);
        CHECK(read_bytes(tmp / name) == read_bytes(data_file(name)));
    }
}

TEST_CASE("npy: numpy files Shoal cannot read give clear errors") {
    auto msg = [](const char* name) { return io_error_of([&] { load_npy(data_file(name), kNoLoc); }); };
    CHECK(contains(msg("fortran_2x3.npy"), "is stored in Fortran order"));
    CHECK(contains(msg("big_endian.npy"), ": big-endian dtype '>f8' is not supported"));
    CHECK(msg("u2.npy") == "'" + data_file("u2.npy") +
                               "': unsupported dtype '<u2' (Shoal reads bool, int32, int64, float32, float64)");
    CHECK(contains(msg("rank0.npy"), "holds a 0-dimensional array"));
    CHECK(contains(msg("rank4.npy"), "holds an array of rank 4 (shape (1, 1, 1, 2)); Shoal arrays have rank 1 to 3"));
    // The header alone is checked the same way (the type checker reads only it).
    CHECK_THROWS_AS(read_npy_header(data_file("u2.npy"), kNoLoc), Error);
}
#endif

// ---------------------------------------------------------------- malformed .npy

TEST_CASE("npy: missing files and non-.npy files") {
    TempDir tmp("shoal-test-io-");
    CHECK(io_error_of([&] { load_npy(tmp / "nope.npy", kNoLoc); }) ==
          "cannot open '" + (tmp / "nope.npy") + "': No such file or directory");
    CHECK(io_error_of([&] { read_npy_header(tmp / "nope.npy", kNoLoc); }) ==
          "cannot open '" + (tmp / "nope.npy") + "': No such file or directory");
    CHECK(io_error_of([&] { load_npy(tmp.dir.string(), kNoLoc); }) ==
          "cannot open '" + tmp.dir.string() + "': Is a directory");
    write_bytes(tmp / "text.npy", "hello, world\n");
    CHECK(io_error_of([&] { load_npy(tmp / "text.npy", kNoLoc); }) ==
          "'" + (tmp / "text.npy") + "' is not a .npy file (bad magic)");
    write_bytes(tmp / "empty.npy", "");
    CHECK(contains(io_error_of([&] { load_npy(tmp / "empty.npy", kNoLoc); }), "(bad magic)"));
    write_bytes(tmp / "short.npy", "\x93NUM");
    CHECK(contains(io_error_of([&] { load_npy(tmp / "short.npy", kNoLoc); }), "(bad magic)"));
}

TEST_CASE("npy: truncated headers and unsupported versions") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "t.npy";
    write_bytes(path, std::string("\x93NUMPY\x01", 7));
    CHECK(contains(io_error_of([&] { load_npy(path, kNoLoc); }), "truncated .npy header"));
    write_bytes(path, std::string("\x93NUMPY\x01\x00\x10", 9));
    CHECK(contains(io_error_of([&] { load_npy(path, kNoLoc); }), "truncated .npy header"));
    std::string full = npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }\n", doubles({1.0}));
    write_bytes(path, full.substr(0, 30));
    CHECK(io_error_of([&] { load_npy(path, kNoLoc); }) ==
          "'" + path + "': truncated .npy header (expected 58 bytes, found 20)");
    std::string v4 = full;
    v4[6] = 4;
    write_bytes(path, v4);
    CHECK(contains(io_error_of([&] { load_npy(path, kNoLoc); }), "unsupported .npy version 4.0 (Shoal reads 1.0 to 3.0)"));
}

TEST_CASE("npy: truncated data names expected and actual sizes") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "t.npy";
    write_bytes(path, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }\n",
                               doubles({1, 2, 3, 4, 5})));
    CHECK(io_error_of([&] { load_npy(path, kNoLoc); }) ==
          "'" + path + "' is truncated: shape (2, 3) of float64 needs 48 bytes of data, the file has 40");
    // The header alone is fine.
    CHECK(read_npy_header(path, kNoLoc).shape == Shape{2, 3});
    // A header promising an absurd size fails cleanly, without allocating it.
    write_bytes(path, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000,), }\n", ""));
    CHECK(contains(io_error_of([&] { load_npy(path, kNoLoc); }), "needs 800000000000 bytes of data, the file has 0"));
    write_bytes(path, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n", ""));
    CHECK(contains(io_error_of([&] { load_npy(path, kNoLoc); }), "is too large"));
}

TEST_CASE("npy: header parsing tolerates spacing, key order, quotes and commas") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "h.npy";
    std::string data = doubles({1.5, -2.0});
    for (const char* dict : {
             "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
             "{'shape':(2,),'fortran_order':False,'descr':'<f8'}",
             "{ \"descr\" : \"<f8\" , \"fortran_order\" : False , \"shape\" : ( 2 , ) , }   \n",
             "{'descr': '<f8', 'fortran_order': False, 'shape': (2L,), 'extra': [1, (2, 3), 'x'], }",
             "{'fortran_order': True, 'descr': '<f8', 'shape': (2,)}",  // rank 1: same layout either way
             "{'descr': '=f8', 'fortran_order': False, 'shape': (2,)}",
         }) {
        CAPTURE(dict);
        write_bytes(path, npy_bytes(dict, data));
        CHECK(format_value(Value(load_npy(path, kNoLoc))) == "[1.5, -2.0]");
    }
    write_bytes(path, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }", data, 2));
    CHECK(format_value(Value(load_npy(path, kNoLoc))) == "[[1.5, -2.0]]");
}

TEST_CASE("npy: malformed headers and unsupported contents") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "h.npy";
    auto msg = [&](const std::string& dict, const std::string& data = "") {
        write_bytes(path, npy_bytes(dict, data));
        return io_error_of([&] { load_npy(path, kNoLoc); });
    };
    CHECK(contains(msg("'descr': '<f8'"), "malformed .npy header: expected '{'"));
    CHECK(contains(msg("{'descr': '<f8', 'fortran_order': False"), "malformed .npy header: expected '}'"));
    CHECK(contains(msg("{'descr': '<f8', 'shape': (2,)}"), "malformed .npy header: no 'fortran_order' key"));
    CHECK(contains(msg("{'descr': '<f8', 'fortran_order': False}"), "no 'shape' key"));
    CHECK(contains(msg("{'fortran_order': False, 'shape': (2,)}"), "no 'descr' key"));
    CHECK(contains(msg("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}"), "bad extent in shape"));
    CHECK(contains(msg("{'descr': '<f8', 'fortran_order': False, 'shape': 2}"), "'shape' is not a tuple"));
    CHECK(contains(msg("{'descr': '<f8', 'fortran_order': 0, 'shape': (2,)}"), "'fortran_order' is not True or False"));
    CHECK(contains(msg("{'descr': '<f8, 'fortran_order': False, 'shape': (2,)}"), "malformed .npy header"));
    CHECK(contains(msg("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,)}"),
                   "unsupported dtype (structured arrays are not supported)"));
    CHECK(contains(msg("{'descr': '<c16', 'fortran_order': False, 'shape': (2,)}"), "unsupported dtype '<c16'"));
    CHECK(contains(msg("{'descr': '<f2', 'fortran_order': False, 'shape': (2,)}"), "unsupported dtype '<f2'"));
    CHECK(contains(msg("{'descr': '|u1', 'fortran_order': False, 'shape': (2,)}"), "unsupported dtype '|u1'"));
    CHECK(contains(msg("{'descr': '>i4', 'fortran_order': False, 'shape': (2,)}"), "big-endian dtype '>i4'"));
    CHECK(contains(msg("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2)}"), "Fortran order"));
    CHECK(contains(msg("{'descr': '<f8', 'fortran_order': False, 'shape': ()}"), "0-dimensional"));
    CHECK(contains(msg("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1)}"), "rank 4"));
}

TEST_CASE("npy: bool bytes other than 0/1 read as true") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "b.npy";
    write_bytes(path, npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,)}", std::string("\0\x01\x07", 3)));
    ArrayPtr a = load_npy(path, kNoLoc);
    CHECK(std::vector<uint8_t>(a->bytes.begin(), a->bytes.end()) == std::vector<uint8_t>{0, 1, 1});
}

TEST_CASE("npy: errors carry the source location") {
    TempDir tmp("shoal-test-io-");
    auto src = std::make_shared<const Source>("<stdin>", "load \"nope.npy\"");
    Loc loc{src, 1, 6, 10};
    try {
        load_npy(tmp / "nope.npy", loc);
        FAIL("no error");
    } catch (const Error& e) {
        CHECK(e.loc.line == 1);
        CHECK(e.loc.col == 6);
    }
}

// ---------------------------------------------------------------- CSV

TEST_CASE("csv: save then load a matrix of doubles") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "m.csv";
    auto a = std::make_shared<Array>(Prim::Double, Shape{2, 3});
    const double values[] = {0.1, -2.0, 1e-5, 6.02214076e23, -0.0, 1.0 / 3.0};
    for (int k = 0; k < 6; ++k) a->set(k, Scalar::of_double(values[k]));
    save_csv(path, *a, kNoLoc);
    CHECK(read_bytes(path) == "0.1,-2.0,1e-5\n6.02214076e23,-0.0,0.3333333333333333\n");
    check_same(*load_csv(path, kNoLoc), *a);
}

TEST_CASE("csv: inf and nan round trip") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "s.csv";
    auto a = std::make_shared<Array>(Prim::Double, Shape{1, 3});
    a->set(0, Scalar::of_double(std::numeric_limits<double>::infinity()));
    a->set(1, Scalar::of_double(-std::numeric_limits<double>::infinity()));
    a->set(2, Scalar::of_double(std::nan("")));
    save_csv(path, *a, kNoLoc);
    CHECK(read_bytes(path) == "inf,-inf,nan\n");
    ArrayPtr b = load_csv(path, kNoLoc);
    CHECK(std::isinf(b->get(0).d));
    CHECK(b->get(1).d < 0);
    CHECK(std::isnan(b->get(2).d));
}

TEST_CASE("csv: rank 1 writes one value per line, other element types") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "v.csv";
    save_csv(path, *sample_array(Prim::Int, {3}), kNoLoc);
    CHECK(read_bytes(path) == "-5000\n2000\n9000\n");
    auto v = std::make_shared<Array>(Prim::Float, Shape{3});
    v->set(0, Scalar::of_float(0.1f));
    v->set(1, Scalar::of_float(1.0f / 3.0f));
    v->set(2, Scalar::of_float(100.0f));
    save_csv(path, *v, kNoLoc);
    CHECK(read_bytes(path) == "0.1\n0.33333334\n100.0\n");
    ArrayPtr back = load_csv(path, kNoLoc);
    CHECK(back->shape == Shape{3, 1});
    CHECK(static_cast<float>(back->get(1).d) == 1.0f / 3.0f);
    save_csv(path, *sample_array(Prim::Bool, {2, 2}), kNoLoc);
    CHECK(read_bytes(path) == "0,1\n0,1\n");
    auto l = std::make_shared<Array>(Prim::Long, Shape{1, 2});
    l->set(0, Scalar::of_long(-9007199254740993));
    save_csv(path, *l, kNoLoc);
    CHECK(read_bytes(path) == "-9007199254740993,0\n");
}

TEST_CASE("csv: lenient about spacing, line endings, blank lines, signs") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "l.csv";
    write_bytes(path, "\xEF\xBB\xBF 1, 2.5 ,+3\r\n\n\t-4,5e2,  6  \r\n\n");
    ArrayPtr a = load_csv(path, kNoLoc);
    CHECK(a->elem == Prim::Double);
    CHECK(a->shape == Shape{2, 3});
    CHECK(format_value(Value(a)) == "[[1.0, 2.5, 3.0], [-4.0, 500.0, 6.0]]");
    write_bytes(path, "7");
    CHECK(format_value(Value(load_csv(path, kNoLoc))) == "[[7.0]]");
}

TEST_CASE("csv: malformed files name the file, line and field") {
    TempDir tmp("shoal-test-io-");
    std::string path = tmp / "bad.csv";
    std::string q = "'" + path + "'";
    auto msg = [&](const std::string& text) {
        write_bytes(path, text);
        return io_error_of([&] { load_csv(path, kNoLoc); });
    };
    CHECK(msg("1,2,3\n4,abc,6\n") == q + " line 2, field 2: 'abc' is not a number");
    // A first line with no number is a header (skipped); one with a number is data.
    CHECK(msg("x,y\n1,abc\n") == q + " line 2, field 2: 'abc' is not a number");
    CHECK(msg("x,1\n1,2\n") == q + " line 1, field 1: 'x' is not a number");
    CHECK(msg("x,y\n") == q + " is empty (no rows of numbers)");
    CHECK(msg("1\n2,3\n") == q + " line 2 has 2 fields, but line 1 has 1");
    CHECK(msg("1,2\n3\n") == q + " line 2 has 1 field, but line 1 has 2");
    CHECK(msg("1,2,3\n4,5\n") == q + " line 2 has 2 fields, but line 1 has 3");
    CHECK(msg("\n1,2\n\n3,4,5\n") == q + " line 4 has 3 fields, but line 2 has 2");
    CHECK(msg("1,2,\n") == q + " line 1, field 3: empty field");
    CHECK(msg("1;2\n") == q + " line 1, field 1: '1;2' is not a number");
    CHECK(msg("1.5.2\n") == q + " line 1, field 1: '1.5.2' is not a number");
    CHECK(msg("1e999\n") == q + " line 1, field 1: '1e999' is out of range for a double");
    CHECK(msg("") == q + " is empty (no rows of numbers)");
    CHECK(msg("\n  \n") == q + " is empty (no rows of numbers)");
    CHECK(io_error_of([&] { load_csv(tmp / "none.csv", kNoLoc); }) ==
          "cannot open '" + (tmp / "none.csv") + "': No such file or directory");
}

TEST_CASE("csv: saving needs rank 1 or 2 and a writable place") {
    TempDir tmp("shoal-test-io-");
    CHECK(contains(io_error_of([&] { save_csv(tmp / "c.csv", *sample_array(Prim::Double, {2, 2, 2}), kNoLoc); }),
                   "saveCsv writes rank 1 or 2 arrays, not shape (2, 2, 2)"));
    CHECK(io_error_of([&] { save_csv(tmp / "no/c.csv", *sample_array(Prim::Double, {2}), kNoLoc); }) ==
          "cannot write '" + (tmp / "no/c.csv") + "': No such file or directory");
}
