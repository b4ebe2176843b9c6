// libFuzzer target: the type checker, through `:type` (parse and check one
// expression against the prelude's bindings, evaluating nothing).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.h"

using namespace shoal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static std::unique_ptr<Session> session = fuzz::prelude_session();
    std::string expr(reinterpret_cast<const char*>(data), size);
    for (char& c : expr)
        if (c == '\n' || c == '\r') c = ' ';  // one line: `:type`'s argument
    fuzz::StrictOutput out;
    session->execute(":type " + expr, "fuzz.shoal", out, true);
    if (session->quit_requested()) session = fuzz::prelude_session();
    return 0;
}
