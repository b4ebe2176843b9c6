// A statement run again reuses its parsing and type checking
// (lang/front_end_cache.h) only while every name it reads means the same
// binding, and reports errors where it is now.
#include <doctest/doctest.h>

#include "lang/session.h"
#include "session_capture.h"

using shoal::Session;
using shoal::testing::printed;

TEST_CASE("front-end cache: a statement run again is checked once, its errors at the line it is on now") {
    Session s;
    CHECK(printed(s, "let x = [1.0, 2.0, 3.0]") == "");
    const uint64_t before = s.front_end_reuses();
    CHECK(printed(s, "let y = x[1] * 2.0\ny\nlet y = x[1] * 2.0\ny\nx[0]\nx[0]") == "4.0\n4.0\n1.0\n1.0\n");
    // The second `let y`, the second `y` (the binding the second `let y`
    // made, of the same type: pinned to it) and the second `x[0]`.
    CHECK(s.front_end_reuses() == before + 3);
    const std::string errors = printed(s, "let z = x[7]\n\n\nlet z = x[7]");
    INFO(errors);
    CHECK(errors.find("<t>:1:11: error: index 7 is out of bounds") != std::string::npos);
    CHECK(errors.find("<t>:4:11: error: index 7 is out of bounds") != std::string::npos);
    CHECK(printed(s, "y") == "4.0\n");  // the failed statements bound nothing
}

TEST_CASE("front-end cache: a name rebound to the same type is read anew, to another type checked anew") {
    Session s;
    CHECK(printed(s, "let x = [1, 2]\nlet y = x[0] + 1\ny") == "2\n");
    uint64_t before = s.front_end_reuses();
    CHECK(printed(s, "let x = [5, 6]\nlet y = x[0] + 1\ny") == "6\n");
    CHECK(s.front_end_reuses() == before + 2);  // `let y` and `y`, each pinned to the new binding
    before = s.front_end_reuses();
    CHECK(printed(s, "let x = [1.5, 2.5]\nlet y = x[0] + 1\ny") == "2.5\n");
    CHECK(s.front_end_reuses() == before);  // float, not int: both checked anew
    // An iteration typed again: each run reads the binding the last one made.
    CHECK(printed(s, "let w = [1.0, 2.0]\nlet w = w * 2.0\nlet w = w * 2.0\nlet w = w * 2.0\nw") == "[8.0, 16.0]\n");
    // A function rebound with the same type: the statement calls the new one.
    CHECK(printed(s, "let f (v : float) = v + 1.0\nf 1.0\nlet f (v : float) = v + 10.0\nf 1.0") == "2.0\n11.0\n");
}

TEST_CASE("front-end cache: a builtin shadowed by a binding is checked anew") {
    Session s;
    CHECK(printed(s, "let n = length [1, 2, 3]\nn") == "3\n");
    CHECK(printed(s, "let length = 7") == "");
    const std::string err = printed(s, "let n = length [1, 2, 3]");
    INFO(err);
    CHECK(err.find("error") != std::string::npos);
    CHECK(printed(s, "n") == "3\n");
    CHECK(printed(s, "let n = length\nn") == "7\n");
}

TEST_CASE("front-end cache: :time reuses a let checked as a plain statement, and :reset forgets it") {
    Session s;
    CHECK(printed(s, "let a = [1.0, 2.0]\nlet b = a * 2.0") == "");
    const uint64_t before = s.front_end_reuses();
    const std::string timed = printed(s, ":time let b = a * 2.0\nb");
    CHECK(timed.find("[2.0, 4.0]") != std::string::npos);
    CHECK(s.front_end_reuses() == before + 1);
    const std::string err = printed(s, "let c = a[9]\n:time let c = a[9]");
    INFO(err);
    CHECK(err.find("<t>:1:11: error") != std::string::npos);
    CHECK(err.find("<t>:2:17: error") != std::string::npos);  // the column moved with the text
    CHECK(printed(s, ":reset") == "");
    CHECK(printed(s, "let a = [5]\nlet b = a * 2\nb") == "[10]\n");
}
