// Session: statements, commands, atomic commits, completion, cancellation.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "lang/session.h"
#include "session_capture.h"

using namespace shoal;

namespace {

// Displays fall back to their text, as in the REPL.
using Capture = shoal::testing::SessionCapture;

// Runs text in the session and returns what it printed (values only);
// fails the test if any statement failed.
std::vector<std::string> run_ok(Session& s, const std::string& text) {
    Capture out;
    bool ok = s.execute(text, "<test>", out);
    CHECK_MESSAGE(ok, text);
    CHECK_MESSAGE(out.errors.empty(), (out.errors.empty() ? std::string() : out.errors[0]));
    return out.values;
}

std::string one_value(Session& s, const std::string& text) {
    auto v = run_ok(s, text);
    REQUIRE(v.size() == 1);
    return v[0];
}

std::string command_text(Session& s, const std::string& command) {
    Capture out;
    CHECK(s.execute(command, "<test>", out));
    REQUIRE_MESSAGE(out.texts.size() == 1, (out.errors.empty() ? command : out.errors[0]));
    return out.texts[0];
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

std::string temp_path(const char* suffix) {
    static int n = 0;
    return "/tmp/shoal_session_test_" + std::to_string(getpid()) + "_" + std::to_string(n++) + suffix;
}

}  // namespace

TEST_CASE("session: statements run in order and print their values") {
    Session s;
    auto v = run_ok(s, "let x = 1\nlet y = x + 2\ny * 10\nsum (iota 10)\n");
    CHECK(v == std::vector<std::string>{"30", "45"});
    CHECK(s.binding_names() == std::vector<std::string>{"x", "y"});
}

TEST_CASE("session: continuation lines belong to their statement") {
    Session s;
    auto v = run_ok(s, "let f x =\n  x + 1\n\n-- a comment\nf 41\n");
    CHECK(v == std::vector<std::string>{"42"});
}

TEST_CASE("session: single_statement treats all lines as one statement") {
    Session s;
    Capture out;
    CHECK(s.execute("let g x =\n  x * 2", "<stdin>", out, true));
    CHECK(one_value(s, "g 21") == "42");
    CHECK(s.execute("   \n-- only a comment\n", "<stdin>", out, true));
    CHECK(out.errors.empty());
}

TEST_CASE("session: unit values print nothing, let prints nothing") {
    Session s;
    CHECK(run_ok(s, "let a = [1, 2, 3]").empty());
}

TEST_CASE("session: a failed statement leaves the bindings as they were") {
    Session s;
    run_ok(s, "let x = 1");
    Capture out;
    CHECK_FALSE(s.execute("let x = [1] ++ 2.0", "<test>", out));
    REQUIRE(out.kinds.size() == 1);
    CHECK(out.kinds[0] == ErrorKind::Type);
    CHECK(one_value(s, "x") == "1");

    SUBCASE("runtime error in a tuple binding binds neither name") {
        Capture o;
        CHECK_FALSE(s.execute("let (a, b) = (5, [1, 2][7])", "<test>", o));
        REQUIRE(o.kinds.size() == 1);
        CHECK(o.kinds[0] == ErrorKind::Runtime);
        CHECK(s.binding_names() == std::vector<std::string>{"x"});
    }
    SUBCASE("later statements still run, and the result reports the failure") {
        Capture o;
        CHECK_FALSE(s.execute("let y = x + true\nlet z = x + 1\nz", "<test>", o));
        CHECK(o.errors.size() == 1);
        CHECK(o.values == std::vector<std::string>{"2"});
        CHECK(s.binding_names() == std::vector<std::string>{"x", "z"});
    }
}

TEST_CASE("session: errors carry the source name, line and column") {
    Session s;
    Capture out;
    CHECK_FALSE(s.execute("let a = 1\n\nlet b = a + true\n", "script.shoal", out));
    REQUIRE(out.errors.size() == 1);
    CHECK(out.errors[0].rfind("script.shoal:3:", 0) == 0);
    CHECK(out.errors[0].find("let b = a + true") != std::string::npos);
    CHECK(out.errors[0].find('^') != std::string::npos);
}

TEST_CASE("session: syntax errors and incomplete input are errors in a script") {
    Session s;
    Capture out;
    CHECK_FALSE(s.execute("1 + )\nlet f x =\n", "<test>", out));
    CHECK(out.errors.size() == 2);
    CHECK(out.kinds[0] == ErrorKind::Syntax);
}

TEST_CASE("session: polymorphic functions are generalised") {
    Session s;
    run_ok(s, "let twice f x = f (f x)");
    CHECK(one_value(s, "twice (\\x -> x + 1) 1") == "3");
    CHECK(one_value(s, "twice (\\x -> x * 2.0) 1.5") == "6.0");
}

TEST_CASE("session: a definition keeps the bindings it was defined with") {
    Session s;
    run_ok(s, "let sq x = x * x\nlet quad x = sq (sq x)\nlet sq x = x + 1000");
    CHECK(one_value(s, "quad 2") == "16");
    CHECK(one_value(s, "sq 1") == "1001");

    run_ok(s, "let y = 1\nlet f x = x + y\nlet y = 2.5");
    CHECK(one_value(s, "f 1") == "2");
    CHECK(one_value(s, "y") == "2.5");

    run_ok(s, "let n = 1\nlet n = n + 1\nlet n = n * 10");
    CHECK(one_value(s, "n") == "20");

    // Only the current names are visible.
    CHECK(s.binding_names() == std::vector<std::string>{"f", "n", "quad", "sq", "y"});
    CHECK(command_text(s, ":env").find('~') == std::string::npos);
}

TEST_CASE("session: locals shadow session bindings") {
    Session s;
    run_ok(s, "let k = 100\nlet i = 100\nlet acc = 100");
    CHECK(one_value(s, "(\\k -> k + 1) 1") == "2");
    CHECK(one_value(s, "let k = 5 in k + 1") == "6");
    CHECK(one_value(s, "let k = k + 1 in k") == "101");
    CHECK(one_value(s, "loop acc = 0 for i < 3 do acc + i") == "3");
    CHECK(one_value(s, "loop acc = 0 while acc < 5 do acc + 1") == "5");
    CHECK(one_value(s, "(\\(k, i) -> k * i) (2, 3)") == "6");
}

TEST_CASE("session: :type prints the type only") {
    Session s;
    CHECK(command_text(s, ":type 1.5") == "float");
    CHECK(command_text(s, ":type [1, 2, 3]") == "[int]");
    CHECK(command_text(s, ":t sqrt 2.0") == "float");
    run_ok(s, "let dot (a : [float]) (b : [float]) = sum (a * b)");
    CHECK(command_text(s, ":type dot") == "[float] -> [float] -> float");
    CHECK(command_text(s, ":type dot [1.0]") == "[float] -> float");
    // lambdas, sections and partial applications read as `let` would bind them
    CHECK(command_text(s, ":type (+ 1)") == "Num a => a -> a  (also elementwise over arrays)");
    CHECK(command_text(s, ":type \\x -> x * 2.0") == "Floating a => a -> a  (also elementwise over arrays)");
    CHECK(command_text(s, ":type map (\\x -> x + 1)") == "Num a => [a] -> [a]  (also elementwise over arrays)");

    Capture out;
    CHECK_FALSE(s.execute(":type", "<test>", out));
    REQUIRE(out.kinds.size() == 1);
    CHECK(out.kinds[0] == ErrorKind::Usage);
    out.clear();
    CHECK_FALSE(s.execute(":type 1 + true", "<test>", out));
    REQUIRE(out.kinds.size() == 1);
    CHECK(out.kinds[0] == ErrorKind::Type);
}

TEST_CASE("session: :env lists bindings with types and shapes") {
    Session s;
    CHECK(command_text(s, ":env") == "no bindings");
    run_ok(s, "let x = iota 1000\nlet s = 2.5\nlet m = fill (2, 3) 1.0");
    std::string env = command_text(s, ":env");
    CHECK(env.find("x : [int]  (1000)") != std::string::npos);
    CHECK(env.find("s : float") != std::string::npos);
    CHECK(env.find("m : [[float]]  (2, 3)") != std::string::npos);
}

TEST_CASE("session: :seed makes random reproducible") {
    Session s;
    run_ok(s, ":seed 7");
    std::string a = one_value(s, "random 5");
    std::string b = one_value(s, "random 5");
    CHECK(a != b);  // the stream advances
    run_ok(s, ":seed 7");
    CHECK(one_value(s, "random 5") == a);
    CHECK(one_value(s, "random 5") == b);
    run_ok(s, ":seed 8");
    CHECK(one_value(s, "random 5") != a);
    CHECK(s.settings().seed == 8);

    Session fresh;  // the default seed is fixed
    Session other;
    CHECK(one_value(fresh, "random 3") == one_value(other, "random 3"));

    Capture out;
    CHECK_FALSE(s.execute(":seed banana", "<test>", out));
    REQUIRE(out.kinds.size() == 1);
    CHECK(out.kinds[0] == ErrorKind::Usage);
}

TEST_CASE("session: :set print changes the summary threshold") {
    Session s;
    CHECK(one_value(s, "iota 25") == "[0, 1, 2, ..., 22, 23, 24] (25)");
    run_ok(s, ":set print 30");
    CHECK(s.settings().print_threshold == 30);
    CHECK(one_value(s, "iota 25").find("...") == std::string::npos);
    Capture out;
    CHECK_FALSE(s.execute(":set print 3", "<test>", out));
    CHECK_FALSE(s.execute(":set print", "<test>", out));
    CHECK_FALSE(s.execute(":set colour on", "<test>", out));
    CHECK(out.kinds == std::vector<ErrorKind>(3, ErrorKind::Usage));
    CHECK(s.settings().print_threshold == 30);
    run_ok(s, ":set check on");
    CHECK(s.settings().check);
}

TEST_CASE("session: :reset drops bindings and settings") {
    Session s;
    run_ok(s, "let x = 1\n:set print 40\n:seed 3");
    run_ok(s, ":reset");
    CHECK(s.binding_names().empty());
    CHECK(s.settings().print_threshold == 20);
    CHECK(s.settings().seed == kDefaultSeed);
}

TEST_CASE("session: commands") {
    Session s;
    SUBCASE("unknown command") {
        Capture out;
        CHECK_FALSE(s.execute(":frobnicate", "<test>", out));
        REQUIRE(out.errors.size() == 1);
        CHECK(out.kinds[0] == ErrorKind::Usage);
        CHECK(out.errors[0].find("unknown command ':frobnicate' (try :help)") != std::string::npos);
    }
    SUBCASE(":help lists commands and builtins") {
        std::string h = command_text(s, ":help");
        CHECK(h.find(":type") != std::string::npos);
        CHECK(h.find(":quit") != std::string::npos);
        CHECK(h.find("iota") != std::string::npos);
        std::string sum = command_text(s, ":help sum");
        CHECK(sum.rfind("sum : ", 0) == 0);
        CHECK(command_text(s, ":help :seed").find(":seed") != std::string::npos);
        Capture out;
        CHECK_FALSE(s.execute(":help nosuchthing", "<test>", out));
    }
    SUBCASE(":quit") {
        CHECK_FALSE(s.quit_requested());
        run_ok(s, ":quit");
        CHECK(s.quit_requested());
    }
    SUBCASE(":quit stops the rest of the input") {
        Capture out;
        s.execute(":quit\n1 + 1", "<test>", out);
        CHECK(out.values.empty());
    }
}

TEST_CASE("session: :load and execute_file") {
    Session s;
    std::string path = temp_path(".shoal");
    {
        std::ofstream f(path);
        f << "-- a script\nlet loaded = 40\nloaded + 2\n";
    }
    CHECK(run_ok(s, ":load " + path) == std::vector<std::string>{"42"});
    CHECK(one_value(s, "loaded") == "40");

    {
        std::ofstream f(path);
        f << "let p = 1\nlet q = p + true\nlet r = 3\n";
    }
    Capture out;
    CHECK_FALSE(s.execute_file(path, out));
    REQUIRE(out.errors.size() == 1);
    CHECK(out.errors[0].rfind(path + ":2:", 0) == 0);
    CHECK(contains(s.binding_names(), "p"));
    CHECK(contains(s.binding_names(), "r"));
    std::remove(path.c_str());

    out.clear();
    CHECK_FALSE(s.execute_file("/nonexistent/x.shoal", out));
    REQUIRE(out.errors.size() == 1);
    CHECK(out.kinds[0] == ErrorKind::Io);
    CHECK(out.errors[0].find("cannot open '/nonexistent/x.shoal': No such file or directory") != std::string::npos);

    out.clear();
    CHECK_FALSE(s.execute(":load /nonexistent/x.shoal", "<test>", out));
    REQUIRE(out.kinds.size() == 1);
    CHECK(out.kinds[0] == ErrorKind::Io);

    SUBCASE("a script that loads itself stops") {
        std::string self = temp_path(".shoal");
        {
            std::ofstream f(self);
            f << ":load " << self << "\n";
        }
        Capture o;
        CHECK_FALSE(s.execute_file(self, o));
        CHECK_FALSE(o.errors.empty());
        std::remove(self.c_str());
    }
}

TEST_CASE("session: Ctrl-C cancels the running statement and the rest") {
    Session s;
    run_ok(s, "let k = 3");
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        s.request_cancel();
    });
    Capture out;
    bool ok = s.execute("loop x = 0 while true do x + 1\nlet k = 4\nk", "<test>", out);
    canceller.join();
    CHECK_FALSE(ok);
    REQUIRE(out.kinds.size() == 1);
    CHECK(out.kinds[0] == ErrorKind::Interrupted);
    CHECK(out.values.empty());
    // The next execute starts afresh.
    CHECK(one_value(s, "k") == "3");
}

TEST_CASE("session: a pending cancel between statements stops the input") {
    Session s;
    struct CancelOnValue : Capture {
        Session* session = nullptr;
        void value(const Value& v, const Type& t, const std::string& text) override {
            Capture::value(v, t, text);
            session->request_cancel();
        }
    } out;
    out.session = &s;
    CHECK_FALSE(s.execute("1\n2\n3", "<test>", out));
    CHECK(out.values == std::vector<std::string>{"1"});
    REQUIRE(out.kinds.size() == 1);
    CHECK(out.kinds[0] == ErrorKind::Interrupted);
}

TEST_CASE("session: check_input") {
    Session s;
    CHECK(s.check_input("1 + 2") == InputStatus::Complete);
    CHECK(s.check_input("let f x =", true) == InputStatus::Incomplete);
    CHECK(s.check_input("(1 + ", true) == InputStatus::Incomplete);
    CHECK(s.check_input("[1, 2,", true) == InputStatus::Incomplete);
    CHECK(s.check_input("let f x =\n  x + 1", true) == InputStatus::Complete);
    CHECK(s.check_input("1 + )", true) == InputStatus::Invalid);
}

TEST_CASE("session: completion") {
    Session s;
    run_ok(s, "let myvalue = 1\nlet myother = 2");
    size_t start = 99;
    auto c = s.complete("myv", 3, start);
    CHECK(c == std::vector<std::string>{"myvalue"});
    CHECK(start == 0);

    c = s.complete("1 + my", 6, start);
    CHECK(c == std::vector<std::string>{"myother", "myvalue"});
    CHECK(start == 4);

    c = s.complete("sum (io", 7, start);
    CHECK(contains(c, "iota"));
    CHECK(start == 5);

    c = s.complete("le", 2, start);
    CHECK(contains(c, "let"));

    c = s.complete(":ty", 3, start);
    CHECK(c == std::vector<std::string>{":type"});
    CHECK(start == 0);

    c = s.complete("  :", 3, start);
    CHECK(contains(c, ":help"));
    CHECK(contains(c, ":quit"));

    c = s.complete("myvalue + su", 10, start);  // an empty word: every name
    CHECK(contains(c, "myvalue"));
    CHECK(contains(c, "sum"));
    CHECK(start == 10);
    c = s.complete("1 + 12", 6, start);  // numbers complete to nothing
    CHECK(c.empty());
}

TEST_CASE("session: inspect") {
    Session s;
    run_ok(s, "let xs = iota 4");
    CHECK(s.inspect("xs") == "xs : [int]  (4)");
    CHECK(s.inspect("xs", true).find("let xs = iota 4") != std::string::npos);
    CHECK(s.inspect("sum").rfind("sum : ", 0) == 0);
    CHECK(s.inspect("sum").find('\n') != std::string::npos);
    CHECK(s.inspect("nosuchname").empty());
}

TEST_CASE("session: the random stream is a session setting, not per statement") {
    Session a, b;
    run_ok(a, "let r = random 4");
    std::string second_a = one_value(a, "random 4");
    run_ok(b, "random 4");
    CHECK(one_value(b, "random 4") == second_a);
}

TEST_CASE("session: :help is laid out for the terminal's width, breaking lines between words") {
    for (int columns : {80, 100, 140}) {
        INFO("columns = " << columns);
        Session s;
        s.set_columns(columns);
        Capture out;
        s.execute(":help", "<t>", out);
        REQUIRE(out.texts.size() == 1);
        const std::string& help = out.texts[0];
        // The banner and the overview above the commands fit 100 columns whatever the terminal.
        for (size_t at = 0, stop = help.find("Commands"); at < stop;) {
            const size_t nl = help.find('\n', at);
            CHECK(nl - at <= size_t{100});
            at = nl + 1;
        }
        size_t start = help.find("Commands");
        const size_t end = help.find("Builtins");
        REQUIRE(start != std::string::npos);
        REQUIRE(end != std::string::npos);
        // Every command line fits, and no word of a summary is cut: each
        // summary's words appear in the text with single blanks between them.
        for (size_t at = start; at < end;) {
            const size_t nl = help.find('\n', at);
            CHECK(nl - at <= static_cast<size_t>(columns));
            at = nl + 1;
        }
        std::string joined;
        for (size_t k = start; k < end; ++k) {
            const char ch = help[k] == '\n' ? ' ' : help[k];
            if (!(ch == ' ' && !joined.empty() && joined.back() == ' ')) joined += ch;
        }
        for (const char* phrase : {"shared-memory races, divergent barriers and shuffles", "alone, show the settings",
                                   "write the functions as CUDA kernels with C++ wrappers"})
            CHECK_MESSAGE(joined.find(phrase) != std::string::npos, phrase);
    }
}
