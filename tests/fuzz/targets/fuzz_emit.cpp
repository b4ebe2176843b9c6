// libFuzzer target: `:emit`'s trace. The input is a definition (or several);
// every function it binds is emitted as a CUDA kernel with a C++ wrapper
// (written nowhere). A function :emit cannot trace is a located error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"

using namespace shoal;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    setenv("SHOAL_CPU_TIER", "interpret", 1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto session = fuzz::prelude_session();
    const std::string before = fuzz::bindings(*session);
    fuzz::StrictOutput out;
    fuzz::Watchdog watchdog(*session, std::chrono::milliseconds(500));
    session->execute(text, "fuzz.shoal", out);
    for (const std::string& name : session->binding_names()) {
        if (before.find(name + " :") == 0 || before.find("\n" + name + " :") != std::string::npos) continue;
        session->execute(":emit " + name + " to \"fuzz_out\"", "fuzz.shoal", out, true);
    }
    return 0;
}
