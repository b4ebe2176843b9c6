// What the libFuzzer targets share (tests/fuzz/README.md): Shoal's own bugs
// become crashes libFuzzer keeps (an internal error, an error without a
// file:line:col location, an exception escaping the session, a failed
// statement that changed the bindings, a statement still running a second
// after it was asked to stop), and sessions start from one prelude.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lang/diagnostics.h"
#include "lang/session.h"

namespace shoal::fuzz {

[[noreturn]] inline void finding(const char* kind, const std::string& detail) {
    std::fprintf(stderr, "\n==shoal fuzz finding== %s: %s\n", kind, detail.substr(0, 2000).c_str());
    std::fflush(stderr);
    std::abort();
}

// Keeps nothing it is shown; an error that is a bug in Shoal is a finding
// (by default a crash libFuzzer keeps; the statement fuzzer's driver prints it).
class StrictOutput : public SessionOutput {
public:
    using OnFinding = std::function<void(const char* kind, const std::string& detail)>;
    explicit StrictOutput(OnFinding on_finding = [](const char* kind, const std::string& d) { finding(kind, d); })
        : on_finding_(std::move(on_finding)) {}
    int errors = 0;
    bool interrupted = false;
    void value(const Value&, const Type&, const std::string& text) override { sink_ += text.size(); }
    void text(const std::string& s) override { sink_ += s.size(); }
    void warning(const std::string& s) override { sink_ += s.size(); }
    void error(const Error& e) override {
        ++errors;
        const std::string shown = format_error(e);  // the caret rendering runs too
        sink_ += shown.size();
        if (e.kind == ErrorKind::Interrupted) {
            interrupted = true;
            return;
        }
        // (An internal error re-raised as another kind starts its message
        // with the words; elsewhere they may be the user's own text, quoted.)
        if (e.kind == ErrorKind::Internal || e.message.rfind("internal error", 0) == 0)
            on_finding_("internal", shown);
        else if (!e.loc.valid())
            on_finding_("no-location", shown);
    }

private:
    OnFinding on_finding_;
    size_t sink_ = 0;
};

// A few bindings of every shape and type, as a user's session has them.
inline constexpr const char* kPrelude = R"(let a = iota 10
let e = iota 0
let xs = [1.0, 2.5, -3.0, 0.0 / 0.0, 1.0 / 0.0]
let d = double xs
let m = generate (3, 4) (\i j -> float (i * 4 + j))
let m0 = fill (0, 3) 1
let m1 = fill (3, 0) 1.0
let t = generate (2, 3, 4) (\i j k -> i + j + k)
let b = [true, false, true]
let l = long a
let f x = x + 1
let g = \x y -> x * y
let p = (a, a)
let n = 5
let x = 2.5
)";

inline std::unique_ptr<Session> prelude_session(const std::string& settings = "") {
    auto s = std::make_unique<Session>();
    // :emit writes nothing.
    s->set_emit_writer([](const std::string&, const std::vector<EmittedFile>&, const Loc&) { return std::string(); });
    StrictOutput out;
    if (!s->execute(std::string(kPrelude) + settings, "<prelude>", out)) finding("prelude", "the prelude failed");
    return s;
}

// Asks a running statement to stop after `budget`; a statement still running
// `grace` later is a hang (Ctrl-C must stop anything within a second).
class Watchdog {
public:
    Watchdog(Session& s, std::chrono::milliseconds budget, std::chrono::milliseconds grace = std::chrono::seconds(2))
        : thread_([this, &s, budget, grace] {
              const auto start = std::chrono::steady_clock::now();
              bool asked = false;
              while (!done_.load()) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(5));
                  const auto elapsed = std::chrono::steady_clock::now() - start;
                  if (!asked && elapsed > budget) {
                      s.request_cancel();
                      asked = true;
                  }
                  if (elapsed > budget + grace && !done_.load())
                      finding("hang", "a statement still runs " + std::to_string(grace.count()) +
                                          " ms after it was asked to stop");
              }
          }) {}
    ~Watchdog() {
        done_.store(true);
        thread_.join();
    }

private:
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// "name : type" of every binding: what a failed statement must not change.
inline std::string bindings(const Session& s) {
    std::string out;
    for (const std::string& name : s.binding_names()) out += s.inspect(name) + "\n";
    return out;
}

}  // namespace shoal::fuzz
