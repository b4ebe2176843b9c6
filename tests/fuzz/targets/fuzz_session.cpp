// libFuzzer target: whole statements through a session that ran the prelude.
// The first byte picks the backend (the reference evaluator, or the array
// compiler on the CPU executor with checking mode on, which runs every kernel
// in the interpreter and checks its accesses) and whether the input is one
// statement (the REPL's continuation mode) or a script.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"

using namespace shoal;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    setenv("SHOAL_CPU_TIER", "interpret", 1);  // no C++ compiler per kernel: thousands of inputs a minute
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const bool compiled = data[0] & 1, single = data[0] & 2;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    auto session = fuzz::prelude_session(compiled ? ":set check on\n" : ":set backend reference\n");
    const std::string before = fuzz::bindings(*session);
    fuzz::StrictOutput out;
    bool ok = false;
    {
        fuzz::Watchdog watchdog(*session, std::chrono::milliseconds(500));
        try {
            ok = session->execute(text, "fuzz.shoal", out, single);
        } catch (const std::exception& e) {
            fuzz::finding("escaped exception", e.what());
        }
    }
    if (ok && out.errors > 0) fuzz::finding("ok with errors", "execute returned true after reporting an error");
    if (!ok && out.errors == 0 && !session->quit_requested())
        fuzz::finding("silent failure", "execute returned false without reporting an error");
    // One statement that failed leaves every binding as it was (`:load` commits
    // the statements of its script that succeeded, by design).
    if (!ok && single && !out.interrupted && text.find(":l") == std::string::npos &&
        fuzz::bindings(*session) != before)
        fuzz::finding("bindings changed", "a failed statement changed the bindings");
    return 0;
}
