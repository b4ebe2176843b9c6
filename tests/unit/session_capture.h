// A SessionOutput that records what a session printed, for tests that run
// statements through shoal::Session (test_session.cpp, test_display.cpp).
#pragma once
#include <string>
#include <vector>

#include "lang/diagnostics.h"
#include "lang/session.h"
#include "runtime/executors.h"

namespace shoal::testing {

struct SessionCapture : SessionOutput {
    std::vector<std::string> values, texts, errors, warnings;
    std::vector<ErrorKind> kinds;
    std::vector<DisplayData> displays;
    void value(const Value&, const Type&, const std::string& text) override { values.push_back(text); }
    void text(const std::string& s) override { texts.push_back(s); }
    void error(const Error& e) override {
        errors.push_back(format_error(e));
        kinds.push_back(e.kind);
    }
    void warning(const std::string& w) override { warnings.push_back(w); }
    void clear() { *this = SessionCapture{}; }
};

// What running `text` in `s` printed: its values, then its texts (displays
// among them), then its errors, a line each.
inline std::string printed(Session& s, const std::string& text) {
    SessionCapture out;
    s.execute(text, "<t>", out);
    std::string all;
    for (const auto& v : out.values) all += v + "\n";
    for (const auto& t : out.texts) all += t + "\n";
    for (const auto& e : out.errors) all += e + "\n";
    return all;
}

// The warnings `statement` gives after `setup` in a fresh compiled session.
inline std::vector<std::string> warnings_of(const std::string& setup, const std::string& statement) {
    shoal::runtime::install_compiled_backend();
    Session s;
    SessionCapture out;
    s.execute(setup, "<t>", out);
    out.warnings.clear();
    s.execute(statement, "<t>", out);
    return out.warnings;
}

}  // namespace shoal::testing
