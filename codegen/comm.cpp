// The folds of the collectives (comm.h), with Shoal's scalar semantics so
// that a fold across ranks computes what the same fold on one rank does.
#include "codegen/comm.h"

#include <cstring>
#include <type_traits>

#include "lang/diagnostics.h"
#include "lang/scalar_semantics.h"

namespace shoal::ir {

namespace {
template <class T>
void fold_typed(void* acc, const void* x, int64_t count, CommOp op) {
    for (int64_t i = 0; i < count; ++i) {
        T a, b;
        std::memcpy(&a, static_cast<const char*>(acc) + i * sizeof(T), sizeof(T));
        std::memcpy(&b, static_cast<const char*>(x) + i * sizeof(T), sizeof(T));
        T r{};
        if constexpr (std::is_same_v<T, bool>) {
            r = op == CommOp::Sum || op == CommOp::Max ? (a || b) : (a && b);
        } else {
            switch (op) {
                case CommOp::Sum: r = shoal::scalar::add(a, b); break;
                case CommOp::Product: r = shoal::scalar::mul(a, b); break;
                case CommOp::Min: r = shoal::scalar::min(a, b); break;
                case CommOp::Max: r = shoal::scalar::max(a, b); break;
            }
        }
        std::memcpy(static_cast<char*>(acc) + i * sizeof(T), &r, sizeof(T));
    }
}
}  // namespace

void fold_into(void* acc, const void* x, int64_t count, ScalarType type, CommOp op) {
    switch (type) {
        case ScalarType::Bool: return fold_typed<bool>(acc, x, count, op);
        case ScalarType::I32: return fold_typed<int32_t>(acc, x, count, op);
        case ScalarType::I64: return fold_typed<int64_t>(acc, x, count, op);
        case ScalarType::U32: return fold_typed<uint32_t>(acc, x, count, op);
        case ScalarType::U64: return fold_typed<uint64_t>(acc, x, count, op);
        case ScalarType::F32: return fold_typed<float>(acc, x, count, op);
        case ScalarType::F64: return fold_typed<double>(acc, x, count, op);
    }
    internal_error(__FILE__, __LINE__, "fold_into: unknown element type");
}

std::vector<std::string> gather_texts(Comm& comm, const std::string& mine) {
    std::vector<int64_t> offsets;
    const std::vector<char> all = comm.allgather(mine.data(), static_cast<int64_t>(mine.size()), offsets);
    std::vector<std::string> texts;
    for (size_t r = 0; r + 1 < offsets.size(); ++r) texts.emplace_back(all.data() + offsets[r], all.data() + offsets[r + 1]);
    return texts;
}

void fold_gathered(void* data, const std::vector<char>& all, const std::vector<int64_t>& offsets, int upto,
                   int64_t count, ScalarType type, CommOp op, const void* identity) {
    const size_t element = scalar_size(type);
    char* out = static_cast<char*>(data);
    if (upto == 0) {
        for (int64_t i = 0; i < count; ++i) std::memcpy(out + i * static_cast<int64_t>(element), identity, element);
        return;
    }
    std::memcpy(out, all.data(), static_cast<size_t>(count) * element);
    for (int r = 1; r < upto; ++r) fold_into(out, all.data() + offsets[static_cast<size_t>(r)], count, type, op);
}

}  // namespace shoal::ir
