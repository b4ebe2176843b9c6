// .npy files of sharded arrays (sharding.h): `load` reads only each rank's
// rows of the file, and `save` of a sharded array writes each rank's rows
// into one file (rank 0 begins it and renames it into place). The files
// must be at the same path on every rank (a shared file system on a cluster).
#include <sstream>

#include "codegen/sharding.h"
#include "lang/io.h"
#include "lang/types.h"

namespace shoal::compiled {

std::optional<Value> ShardingBackend::load_blocks(const Type& type, std::span<const Value> args, const Loc& loc) {
    if (threshold_ <= 0 || args.size() != 1 || !args[0].is_string() || !type) return std::nullopt;
    const std::string& path = args[0].str();
    const NpyHeader header = read_npy_header(path, loc);  // the errors `load` gives alone
    const Type expected = func_result(type);
    if (header.elem != prim_of(expected) || static_cast<int>(header.shape.size()) != array_rank(expected) ||
        header.shape.empty() || header.shape[0] < 1 || shape_size(header.shape) < threshold_)
        return std::nullopt;  // the engine's load: whole, or its error
    const Layout layout{header.shape, comm_->size()};
    const int r = comm_->rank();
    return sharded(layout, Value(load_npy(path, loc, layout.begin(r), layout.end(r) - layout.begin(r))));
}

std::optional<Value> ShardingBackend::save_blocks(std::span<const Value> args, const ShardedArray& x, const Loc& loc) {
    if (args.size() != 2 || !args[0].is_string() || x.shape().size() > 3) return std::nullopt;
    const std::string& path = args[0].str();
    const int me = comm_->rank();
    // Rank 0 begins the file and tells the others where it is, or its error.
    std::string begun;
    NpyInParts file;
    if (me == 0) {
        try {
            file = begin_npy_in_parts(path, x.elem(), x.shape(), loc);
            begun = file.temporary.empty() ? "whole" : "parts\n" + file.target + "\n" + file.temporary + "\n" +
                                                           std::to_string(file.data_offset);
        } catch (const Error& e) {
            begun = "error\n" + e.message;
        }
    }
    std::istringstream said(ir::gather_texts(*comm_, begun)[0]);
    std::string kind, offset;
    std::getline(said, kind);
    if (kind == "whole") return std::nullopt;  // a device or a FIFO: rank 0 writes the gathered array
    if (kind == "error") user_error(ErrorKind::Io, loc, said.str().substr(kind.size() + 1));
    std::getline(said, file.target);
    std::getline(said, file.temporary);
    std::getline(said, offset);
    file.path = path;
    file.data_offset = std::stoll(offset);
    // Every rank writes its rows; then all learn whether every rank did.
    std::string failure;
    try {
        const ArrayPtr block = force(x.local()).array();
        const int64_t offset = x.layout().begin(me) * x.layout().row_elements() * static_cast<int64_t>(prim_size(x.elem()));
        write_npy_part(file, offset, block->bytes.data(), static_cast<int64_t>(block->bytes.size()), loc);
    } catch (const Error& e) {
        if (e.kind != ErrorKind::Io) throw;  // Ctrl-C and the like: the statement's agreement removes nothing
        failure = e.message;
    }
    std::string first_failure;
    for (const std::string& f : ir::gather_texts(*comm_, failure))
        if (first_failure.empty()) first_failure = f;
    if (me == 0) end_npy_in_parts(file, first_failure.empty(), loc);
    if (!first_failure.empty()) user_error(ErrorKind::Io, loc, first_failure);
    return Value();
}

}  // namespace shoal::compiled
