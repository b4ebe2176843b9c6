// Shared by the differential tests (test_compiled.cpp, test_random_programs.cpp):
// run the same statements through the reference evaluator and the compiled
// backend (both with `:set check on`) and compare the printed outputs,
// integers, booleans and errors exactly, floats within a relative 1e-4.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "lang/session.h"
#include "codegen/compiled_backend.h"
#include "runtime/executors.h"

namespace shoal::testing {

struct Capture : SessionOutput {
    std::string all;
    void value(const Value&, const Type&, const std::string& t) override { all += t + "\n"; }
    void text(const std::string& s) override { all += s + "\n"; }
    void error(const Error& e) override { all += "error: " + e.message + "\n"; }
    void warning(const std::string&) override {}
};

// `settings`: statements run first in both sessions (`:set sharedmem off`).
inline std::string run(const std::string& program, bool compiled, const std::string& settings = "") {
    runtime::install_compiled_backend();
    Session s;
    Capture out;
    s.execute(":set check on", "<t>", out);
    if (!settings.empty()) s.execute(settings, "<t>", out);
    s.execute(compiled ? ":set backend compiled" : ":set backend reference", "<t>", out);
    s.execute(program, "<t>", out);
    return out.all;
}

// Token-wise comparison: numbers with a decimal point or exponent within a
// relative 1e-4, everything else exactly. 1e-5 is not reachable for float32
// reductions: the reference sums sequentially (error grows with n), the
// kernels in a tree, so e.g. the sum of 100000 sines differs by 1.4e-5.
inline bool same_output(const std::string& a, const std::string& b) {
    auto split = [](const std::string& s) {
        std::vector<std::string> t;
        std::string cur;
        for (char c : s) {
            if (std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == '[' || c == ']' || c == '(' || c == ')') {
                if (!cur.empty()) t.push_back(cur);
                cur.clear();
                t.push_back(std::string(1, c));
            } else {
                cur += c;
            }
        }
        if (!cur.empty()) t.push_back(cur);
        return t;
    };
    auto ta = split(a), tb = split(b);
    if (ta.size() != tb.size()) return false;
    for (size_t k = 0; k < ta.size(); ++k) {
        if (ta[k] == tb[k]) continue;
        const bool floaty = ta[k].find_first_of(".eE") != std::string::npos;
        char* ea = nullptr;
        char* eb = nullptr;
        const double x = std::strtod(ta[k].c_str(), &ea), y = std::strtod(tb[k].c_str(), &eb);
        if (!floaty || *ea || *eb) return false;
        if (std::fabs(x - y) > 1e-4 * std::max({std::fabs(x), std::fabs(y), 1e-30})) return false;
    }
    return true;
}

// Runs `program` through both backends; on a mismatch the failure prints the
// program and both outputs. Returns whether they agreed.
inline bool differential(const std::string& program, const std::string& settings = "") {
    const std::string ref = run(program, false, settings), comp = run(program, true, settings);
    const bool same = same_output(ref, comp);
    INFO("program:\n" << program << "\nsettings: " << settings << "\nreference:\n" << ref << "compiled:\n" << comp);
    CHECK(same);
    return same;
}

}  // namespace shoal::testing
