// Source text and locations. Every diagnostic points into a Source, which is
// kept alive (shared_ptr) by the AST nodes and closures that refer to it, so a
// runtime error in a function defined many statements ago still shows its line.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace shoal {

struct Source {
    std::string name;  // file name, or "<stdin>", "<cell 3>", ...
    std::string text;

    Source(std::string name, std::string text);
    // 1-based line number -> the text of that line without its newline.
    std::string_view line(int line) const;
    int line_count() const { return static_cast<int>(line_starts_.size()); }
    // 0-based byte offset -> (1-based line, 1-based column).
    void position(size_t offset, int& line, int& col) const;

private:
    std::vector<size_t> line_starts_;
};

using SourcePtr = std::shared_ptr<const Source>;

// A position in a Source (1-based line and column) with the length of the
// construct it names (for the caret underline). line == 0 means "no location".
struct Loc {
    SourcePtr source;
    int line = 0;
    int col = 0;
    int length = 1;

    bool valid() const { return source && line > 0; }
    // "file:line:col", as diagnostics and generated-code comments write it.
    std::string position() const;
};

}  // namespace shoal
