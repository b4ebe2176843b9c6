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

inline bool backends_agree(const std::string& program, const std::string& settings) {
    return same_output(run(program, false, settings), run(program, true, settings));
}

// A smaller program on which the backends still disagree: statements (lines)
// are dropped one at a time while the mismatch stays (a dropped definition
// that a later line needs makes both backends report the same error, so it
// stays), until no single line can go.
inline std::string shrink(const std::string& program, const std::string& settings = "") {
    std::vector<std::string> lines;
    for (size_t from = 0; from < program.size();) {
        size_t end = program.find('\n', from);
        if (end == std::string::npos) end = program.size();
        lines.push_back(program.substr(from, end - from));
        from = end + 1;
    }
    auto join = [](const std::vector<std::string>& ls) {
        std::string out;
        for (const std::string& l : ls) out += l + "\n";
        return out;
    };
    for (bool smaller = true; smaller;) {
        smaller = false;
        for (size_t i = lines.size(); i-- > 0;) {
            std::vector<std::string> without = lines;
            without.erase(without.begin() + static_cast<std::ptrdiff_t>(i));
            if (!without.empty() && !backends_agree(join(without), settings)) {
                lines = std::move(without);
                smaller = true;
            }
        }
    }
    return join(lines);
}

// Runs `program` through both backends; on a mismatch the failure prints the
// program shrunk (shrink), both outputs on it, and the whole program.
// Returns whether they agreed.
inline bool differential(const std::string& program, const std::string& settings = "") {
    const std::string ref = run(program, false, settings), comp = run(program, true, settings);
    const bool same = same_output(ref, comp);
    if (!same) {
        const std::string small = shrink(program, settings);
        INFO("shrunk program:\n" << small << "settings: " << settings << "\nreference:\n" << run(small, false, settings)
                                  << "compiled:\n" << run(small, true, settings) << "whole program:\n" << program);
        CHECK(same);
    }
    return same;
}

}  // namespace shoal::testing
