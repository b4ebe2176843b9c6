#include "codegen/row_values.h"

#include <algorithm>
#include <iterator>

namespace shoal::compiled {

namespace {
constexpr size_t kMaxRecords = 256;

std::weak_ptr<const void> weak_of(const Value& v) {
    if (v.is_array()) return std::shared_ptr<const void>(v.array());
    return std::shared_ptr<const void>(v.delayed());
}
}  // namespace

const void* value_identity(const Value& v) {
    if (v.is_array()) return v.array().get();
    if (v.is_delayed()) return v.delayed().get();
    return nullptr;
}

void RowValues::note_reduction(const Value& v, AlignedSources of, std::string what, Loc at) {
    if (!value_identity(v)) return;
    if (records_.size() >= kMaxRecords) {
        std::erase_if(records_, [](const auto& r) { return r.second.value.expired(); });
        if (records_.size() >= kMaxRecords) records_.clear();
    }
    records_[value_identity(v)] = Reduction{weak_of(v), std::move(of), std::move(what), at};
}

const RowValues::Reduction* RowValues::find(const Value& v) const {
    auto it = records_.find(value_identity(v));
    return it == records_.end() || it->second.value.expired() ? nullptr : &it->second;
}

void RowValues::carry(const Value& from, const Value& to) {
    if (const Reduction* r = find(from)) {
        const Reduction copy = *r;  // note_reduction may rehash records_
        note_reduction(to, copy.of, copy.what, copy.at);
    }
}

std::string source_text(const Loc& at, const std::string& what) {
    if (!at.valid() || at.length <= 1) return "";
    const std::string_view line = at.source->line(at.line);
    const size_t from = static_cast<size_t>(at.col - 1);
    if (from >= line.size()) return "";
    const std::string text(line.substr(from, static_cast<size_t>(at.length)));
    return text.rfind(what, 0) == 0 ? text : "";
}

const RowValues::Reduction* RowValues::reduced_from(const Value& v, const AlignedSources& matrix) const {
    const Reduction* r = find(v);
    if (!r) return nullptr;
    const AlignedSources& of = r->of;
    const bool shared = std::any_of(of.begin(), of.end(), [&](const void* s) {
        return std::find(matrix.begin(), matrix.end(), s) != matrix.end();
    });
    return shared ? r : nullptr;
}

}  // namespace shoal::compiled
