// Hostile input: limits, extreme integers, special files, deep nesting. Each
// case must be a clear error (or a correct result), never a crash, a hang, an
// internal error or a lost binding. tests/programs/hostile_limits.shoal has the
// cases a script can express; tests/fuzz/ finds new ones.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "lang/array_ops.h"
#include "lang/io.h"
#include "lang/parser.h"
#include "lang/session.h"

using namespace shoal;

namespace {

struct Capture : SessionOutput {
    std::vector<std::string> values, errors;
    std::vector<ErrorKind> kinds;
    void value(const Value&, const Type&, const std::string& text) override { values.push_back(text); }
    void text(const std::string& s) override { values.push_back(s); }
    void error(const Error& e) override {
        errors.push_back(format_error(e));
        kinds.push_back(e.kind);
    }
    void warning(const std::string&) override {}
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string temp_path(const char* suffix) {
    static int n = 0;
    return "/tmp/shoal_hostile_test_" + std::to_string(getpid()) + "_" + std::to_string(n++) + suffix;
}

// Runs one failing statement; checks it reported exactly one non-internal
// error containing `part` and that `keep` survived.
void expect_error(Session& s, const std::string& text, const std::string& part) {
    Capture out;
    CHECK_MESSAGE(!s.execute(text, "<test>", out), text);
    REQUIRE_MESSAGE(out.errors.size() == 1, text);
    CHECK_MESSAGE(has(out.errors[0], part), out.errors[0]);
    CHECK_MESSAGE(out.kinds[0] != ErrorKind::Internal, out.errors[0]);
    CHECK_MESSAGE(!has(out.errors[0], "internal error"), out.errors[0]);
    Capture after;
    CHECK(s.execute("keep", "<test>", after));
    CHECK(after.values == std::vector<std::string>{"7"});
}

}  // namespace

TEST_CASE("select_slice: steps and bounds at the ends of int64") {
    const Loc loc;
    constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    ops::AxisSelect a = ops::select_slice(std::nullopt, std::nullopt, kMin, 10, loc);
    CHECK(a.start == 9);
    CHECK(a.count == 1);
    a = ops::select_slice(std::nullopt, std::nullopt, kMax, 10, loc);
    CHECK(a.start == 0);
    CHECK(a.count == 1);
    a = ops::select_slice(kMin, kMax, 1, 10, loc);
    CHECK(a.start == 0);
    CHECK(a.count == 10);
    a = ops::select_slice(kMax, kMin, -1, 10, loc);
    CHECK(a.start == 9);
    CHECK(a.count == 10);
    a = ops::select_slice(kMax, kMin, kMin, 10, loc);
    CHECK(a.count == 1);
}

TEST_CASE("arrays that do not fit the memory left are refused before allocating") {
    CHECK_THROWS_WITH_AS(Array(Prim::Int, Shape{2000000000, 1000}), doctest::Contains("of memory is free (Shoal holds "),
                         Error);  // 7.3 TiB: more than any machine of ours has
    CHECK_THROWS_AS(Array(Prim::Double, Shape{3037000500, 3037000500}), Error);
    CHECK_THROWS_AS(Array(Prim::Int, Shape{int64_t{1} << 40}), Error);  // an extent beyond int
    // A device's room, as its executor answers it.
    const MemoryRoomQuery gpu = [] { return MemoryRoom{"GPU memory", int64_t{100} << 20, int64_t{10} << 20}; };
    CHECK_NOTHROW(check_array_size(Prim::Float, Shape{20 << 20}, gpu));  // 80 MiB of the 90 usable
    CHECK_THROWS_WITH_AS(check_array_size(Prim::Float, Shape{25 << 20}, gpu),
                         "array of shape (26214400) is too large: it needs 100.0 MiB, but only 100.0 MiB of GPU memory "
                         "is free (Shoal holds 10.0 MiB)",
                         Error);
    // :set memlimit caps what Shoal holds, whatever the machine has.
    CHECK(memory_limit() == 0);
    const int64_t held = host_memory_room().held;
    set_memory_limit(held + (int64_t{16} << 20));
    CHECK_NOTHROW(Array(Prim::Double, Shape{1 << 20}));  // 8 MiB
    CHECK_THROWS_WITH_AS(Array(Prim::Double, Shape{4 << 20}), doctest::Contains("of its limit of"), Error);
    Session s;
    Capture out;
    CHECK(s.execute("let keep = 7", "<test>", out));
    expect_error(s, "iota 100000000", "1:1: error: iota: array of shape (100000000) is too large: it needs 381.5 MiB");
    set_memory_limit(0);
    CHECK(parse_byte_size("512MiB") == int64_t{512} << 20);
    CHECK(parse_byte_size("8 GiB") == int64_t{8} << 30);
    CHECK(parse_byte_size("1000") == 1000);
    CHECK(parse_byte_size("lots") == -1);
    CHECK(parse_byte_size("99999999999999999999") == -1);
}

TEST_CASE("hostile statements are clear errors and keep the bindings") {
    Session s;
    Capture out;
    REQUIRE(s.execute("let keep = 7\nlet a = iota 10", "<test>", out));
    expect_error(s, "fill (100000, 100000, 100000) 0", "is too large");  // more than any machine has
    expect_error(s, "fill (100000, 100000) 0", "is too large");
    expect_error(s, "random (-1)", "negative extent");
    expect_error(s, "a[::0]", "slice step cannot be zero");
    std::string chain = "1";
    for (int i = 0; i < 5000; ++i) chain += "+1";
    expect_error(s, chain, "expression nested too deeply");
    expect_error(s, std::string(100000, '(') + "1" + std::string(100000, ')'), "nested too deeply");
    // A type error the checker once let escape as a non-Error exception.
    Capture bad;
    CHECK(!s.execute("random \"x\"", "<test>", bad));
    CHECK(bad.errors.size() == 1);
    expect_error(s, "a with [20] = 1", "out of bounds");
}

TEST_CASE("scripts: binary files, directories and devices") {
    Session s;
    Capture out;
    REQUIRE(s.execute("let keep = 7", "<test>", out));
    const std::string bin = temp_path(".shoal");
    {
        std::ofstream f(bin, std::ios::binary);
        f << "let keep = 8\n" << std::string(1, '\0') << "garbage\n";
    }
    expect_error(s, ":load " + bin, "is not a Shoal script: it holds a NUL byte at offset 13");
    expect_error(s, ":load /tmp", "1:7: error: cannot open '/tmp': Is a directory");
    expect_error(s, ":load /dev/zero", "is not a Shoal script");
    Capture direct;
    CHECK(!s.execute_file(bin, direct));
    REQUIRE(direct.errors.size() == 1);
    CHECK(has(direct.errors[0], "NUL byte"));
    std::remove(bin.c_str());
}

TEST_CASE("I/O: special files are read and written in place, never replaced") {
    const Loc loc;
    CHECK_THROWS_WITH_AS(load_csv("/dev/zero", loc), doctest::Contains("is not a text file"), Error);
    Array a(Prim::Double, Shape{2});
    // Writing to a symbolic link writes its target; the link stays a link.
    const std::string target = temp_path(".csv"), link = temp_path(".csv");
    {
        std::ofstream f(target);
        f << "0\n";
    }
    REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
    save_csv(link, a, loc);
    struct stat st;
    REQUIRE(::lstat(link.c_str(), &st) == 0);
    CHECK(S_ISLNK(st.st_mode));
    ArrayPtr back = load_csv(target, loc);
    CHECK(back->shape == Shape{2, 1});
    std::remove(link.c_str());
    std::remove(target.c_str());
    // A full device reports the failure and stays a device.
    if (::stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode) && ::access("/dev/full", W_OK) == 0) {
        CHECK_THROWS_WITH_AS(save_csv("/dev/full", a, loc), doctest::Contains("No space left on device"), Error);
        REQUIRE(::stat("/dev/full", &st) == 0);
        CHECK(S_ISCHR(st.st_mode));
    }
}
