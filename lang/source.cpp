#include "source.h"

#include <algorithm>

namespace shoal {

Source::Source(std::string n, std::string t) : name(std::move(n)), text(std::move(t)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
        if (text[i] == '\n') line_starts_.push_back(i + 1);
}

std::string_view Source::line(int line) const {
    if (line < 1 || line > line_count()) return {};
    size_t begin = line_starts_[line - 1];
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string_view s(text.data() + begin, end - begin);
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    return s;
}

void Source::position(size_t offset, int& line, int& col) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    line = static_cast<int>(it - line_starts_.begin());
    col = static_cast<int>(offset - line_starts_[line - 1]) + 1;
}

std::string Loc::position() const {
    return source->name + ":" + std::to_string(line) + ":" + std::to_string(col);
}

}  // namespace shoal
