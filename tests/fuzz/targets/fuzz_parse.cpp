// libFuzzer target: the layout rule, the lexer and the parser on any bytes.
// Every span must parse or fail with a located Syntax/Incomplete error, and
// the completeness check (the REPL's and Jupyter's) must agree with it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fuzz_common.h"
#include "lang/parser.h"

using namespace shoal;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto src = std::make_shared<const Source>("fuzz.shoal", std::string(reinterpret_cast<const char*>(data), size));
    for (const bool single : {false, true}) check_input(src->text, single);
    std::vector<StatementSpan> spans;
    try {
        spans = split_statements(*src);
    } catch (const Error& e) {
        if (e.kind == ErrorKind::Internal) fuzz::finding("internal error", format_error(e));
        return 0;
    }
    for (const StatementSpan& span : spans) {
        if (span.begin > span.end || span.end > src->text.size()) fuzz::finding("span", "a span outside the text");
        try {
            parse_statement(src, span);
        } catch (const Error& e) {
            if (e.kind != ErrorKind::Syntax && e.kind != ErrorKind::Incomplete && e.kind != ErrorKind::Usage)
                fuzz::finding("parse error kind", format_error(e));
            if (!e.loc.valid()) fuzz::finding("error without a location", format_error(e));
            if (auto unclosed = find_unclosed_bracket(*src, span)) {
                if (unclosed->resume > span.end || unclosed->bracket >= unclosed->resume)
                    fuzz::finding("unclosed bracket", "a resume point outside the statement");
            }
        }
    }
    return 0;
}
