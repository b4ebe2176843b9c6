// Shared tiles for overlapping reads (shared_tiles.h): the affine analysis
// of a map's element code and the tiled kernel that serves the reads it
// finds from shared memory.
#include "codegen/shared_tiles.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/ir_visitor.h"
#include "codegen/lower_common.h"

namespace shoal::ir {

using namespace lowering;

namespace {

// ---------------------------------------------------------------- affine indices
// An I64 index as coeff[0] * index[0] + coeff[1] * index[1] + offset, every
// part a uniform expression (params and constants); null stands for 0.
struct Affine {
    ExprPtr coeff[2];
    ExprPtr offset;
};

ExprPtr add_terms(const ExprPtr& a, const ExprPtr& b, bool subtract) {
    if (!b) return a;
    if (!a) return subtract ? unary(UnaryOp::Neg, b) : b;
    return binary(subtract ? BinaryOp::Sub : BinaryOp::Add, a, b);
}

ExprPtr scale(const ExprPtr& a, const ExprPtr& by) { return a ? binary(BinaryOp::Mul, a, by) : nullptr; }

// Decomposes index expressions of the element code. Variables stand for
// their Let's value (names are unique per kernel and, unless assigned,
// immutable: ir_visitor.h), so `let x3 = n3 + gid * n4; x[x3]` is affine.
class AffineIndex {
public:
    AffineIndex(const std::vector<StmtPtr>& body, const std::vector<ExprPtr>& index) : index_(index) {
        collect(body);
    }

    std::optional<Affine> of(const ExprPtr& e) const {
        switch (e->kind) {
            case ExprKind::Const:
                if (is_float(e->type) || e->type == ScalarType::Bool) return std::nullopt;
                return Affine{{nullptr, nullptr}, e};
            case ExprKind::Param: return Affine{{nullptr, nullptr}, e};
            case ExprKind::Var: {
                for (size_t k = 0; k < index_.size() && k < 2; ++k)
                    if (index_[k]->name == e->name) {
                        Affine a{{nullptr, nullptr}, nullptr};
                        a.coeff[k] = const_int(1);
                        return a;
                    }
                auto it = lets_.find(e->name);
                if (it == lets_.end() || assigned_.count(e->name)) return std::nullopt;
                return of(it->second);
            }
            case ExprKind::Cast:
                // Only I64 -> I64: a narrower type wraps, which is not affine.
                if (e->type != ScalarType::I64 || e->args[0]->type != ScalarType::I64) return std::nullopt;
                return of(e->args[0]);
            case ExprKind::Binary: {
                if (e->type != ScalarType::I64) return std::nullopt;
                const auto a = of(e->args[0]), b = of(e->args[1]);
                if (!a || !b) return std::nullopt;
                const bool ua = uniform(*a), ub = uniform(*b);
                switch (e->binary_op) {
                    case BinaryOp::Add:
                    case BinaryOp::Sub: {
                        const bool sub = e->binary_op == BinaryOp::Sub;
                        Affine r;
                        for (int k = 0; k < 2; ++k) r.coeff[k] = add_terms(a->coeff[k], b->coeff[k], sub);
                        r.offset = add_terms(a->offset, b->offset, sub);
                        return r;
                    }
                    case BinaryOp::Mul: {
                        if (!ua && !ub) return std::nullopt;
                        const Affine& v = ua ? *b : *a;
                        const ExprPtr by = ua ? e->args[0] : e->args[1];
                        return Affine{{scale(v.coeff[0], by), scale(v.coeff[1], by)}, scale(v.offset, by)};
                    }
                    default:
                        if (ua && ub) return Affine{{nullptr, nullptr}, e};
                        return std::nullopt;
                }
            }
            default: return std::nullopt;
        }
    }

    static bool uniform(const Affine& a) { return !a.coeff[0] && !a.coeff[1]; }

private:
    void collect(const std::vector<StmtPtr>& body) {
        for (const StmtPtr& s : body) {
            if (s->kind == StmtKind::Let) lets_[s->name] = s->exprs[0];
            if (s->kind == StmtKind::Assign) assigned_.insert(s->name);
            if (s->kind == StmtKind::Atomic && !s->result.empty()) assigned_.insert(s->result);
            if (s->kind == StmtKind::For) assigned_.insert(s->name);  // a loop variable varies
            collect(s->body);
            collect(s->else_body);
        }
    }

    std::vector<ExprPtr> index_;
    std::map<std::string, ExprPtr> lets_;
    std::set<std::string> assigned_;
};

// Every global load of the element code, each node once.
class GlobalLoads : public IRVisitor {
public:
    std::vector<ExprPtr> loads;
    using IRVisitor::visit;
    void visit(const ExprPtr& e) override {
        if (e->kind == ExprKind::Load && e->space == MemSpace::Global && seen_.insert(e.get()).second) loads.push_back(e);
        IRVisitor::visit(e);
    }

private:
    std::set<const Expr*> seen_;
};

// ---------------------------------------------------------------- groups
struct Offset {
    int64_t row = 0, col = 0;
    bool operator<(const Offset& o) const { return row != o.row ? row < o.row : col < o.col; }
};

// One array read at overlapping offsets: its shared tile and the reads it serves.
struct Group {
    std::string buffer;
    ScalarType elem = ScalarType::F32;
    ExprPtr row_stride;  // rank 2: S
    int64_t stride_value = 0;
    std::map<const Expr*, Offset> reads;
    Offset lo, hi;       // the smallest and largest offsets
    size_t offsets = 0;  // how many distinct ones
    std::string shared;  // the tile's shared array
    int64_t tile_rows = 1, tile_cols = 0;  // with the halo

    std::string describe(int rank) const {
        auto range = [](int64_t a, int64_t b) {
            auto sgn = [](int64_t v) { return (v > 0 ? "+" : "") + std::to_string(v); };
            return a == b ? sgn(a) : sgn(a) + ".." + sgn(b);
        };
        std::string text = buffer + " is read at " + std::to_string(offsets) + " offsets (";
        text += rank == 1 ? range(lo.col, hi.col) : "rows " + range(lo.row, hi.row) + ", columns " + range(lo.col, hi.col);
        return text + "): its tile and halo are loaded into " + shared + " once";
    }
};

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

// The groups of overlapping reads of `map`'s element code for tiles of
// rows x cols elements (rank 1: rows = 1).
std::vector<Group> find_groups(KernelBuilder& kb, const MapBody& map, const LoweringFacts& facts, int64_t rows,
                               int64_t cols) {
    const int rank = static_cast<int>(map.index.size());
    const AffineIndex affine(map.body, map.index);
    GlobalLoads found;
    for (const StmtPtr& s : map.body) found.visit(s);
    std::map<std::string, Group> by_buffer;
    std::set<std::string> rejected;  // read somewhere the tile cannot serve consistently
    for (const ExprPtr& load : found.loads) {
        const auto a = affine.of(load->args[0]);
        if (!a) continue;
        const auto inner = known_value(a->coeff[rank - 1], facts);
        if (!inner || *inner != 1) continue;
        const auto offset = known_value(a->offset, facts);
        if (!offset) continue;
        Offset o;
        int64_t stride = 0;
        if (rank == 1) {
            o.col = *offset;
        } else {
            const auto s = known_value(a->coeff[0], facts);
            if (!s || *s < 1) continue;
            stride = *s;
            // offset = row * S + col with |col| <= S / 2
            o.row = floor_div(*offset + stride / 2, stride);
            o.col = *offset - o.row * stride;
        }
        Group& g = by_buffer[load->name];
        if (g.reads.empty()) {
            g.buffer = load->name;
            g.elem = load->type;
            g.row_stride = rank == 2 ? a->coeff[0] : nullptr;
            g.stride_value = stride;
        } else if (g.stride_value != stride) {
            rejected.insert(load->name);
        }
        g.reads[load.get()] = o;
    }
    std::vector<Group> groups;
    int64_t shared_bytes_used = 0;
    for (auto& [buffer, g] : by_buffer) {
        if (rejected.count(buffer)) continue;
        const Param* p = nullptr;
        for (const Param& q : kb.kernel().params)
            if (q.name == buffer) p = &q;
        if (!p || p->kind != ParamKind::Buffer || p->access != Access::Read) continue;  // the kernel writes it
        if (!facts.buffer_count(buffer)) continue;  // a buffer of unknown size cannot bound the halo
        std::set<Offset> distinct;
        for (const auto& [load, o] : g.reads) distinct.insert(o);
        if (distinct.size() < 2) continue;  // one offset: nothing to share (CSE merges equal reads)
        g.offsets = distinct.size();
        g.lo = g.hi = *distinct.begin();
        for (const Offset& o : distinct) {
            g.lo = {std::min(g.lo.row, o.row), std::min(g.lo.col, o.col)};
            g.hi = {std::max(g.hi.row, o.row), std::max(g.hi.col, o.col)};
        }
        // The overlap rule: the offsets span at most half the tile per dimension.
        if (g.hi.col - g.lo.col > cols / 2 || (rank == 2 && g.hi.row - g.lo.row > rows / 2)) continue;
        g.tile_rows = rank == 2 ? rows + g.hi.row - g.lo.row : 1;
        g.tile_cols = cols + g.hi.col - g.lo.col;
        const int64_t bytes = g.tile_rows * g.tile_cols * static_cast<int64_t>(scalar_size(g.elem));
        if (shared_bytes_used + bytes > 40 * 1024) continue;  // leave room under the 48 KiB static limit
        shared_bytes_used += bytes;
        if (g.row_stride) g.row_stride = use_params(kb, g.row_stride);
        groups.push_back(std::move(g));
    }
    return groups;
}

// Serves each grouped read from its tile: `local` is the element's position
// in the tile (rank 1: {column}; rank 2: {row, column}), I32.
class ServeFromTiles : public IRMutator {
public:
    ServeFromTiles(const std::vector<Group>& groups, std::vector<ExprPtr> local)
        : groups_(groups), local_(std::move(local)) {}
    using IRMutator::mutate;
    ExprPtr mutate(const ExprPtr& e) override {
        for (const Group& g : groups_) {
            auto it = g.reads.find(e.get());
            if (it == g.reads.end()) continue;
            const Offset& o = it->second;
            ExprPtr col = binary(BinaryOp::Add, local_.back(), i32(o.col - g.lo.col));
            if (local_.size() == 1) return load(g.shared, col, g.elem, MemSpace::Shared);
            ExprPtr row = binary(BinaryOp::Add, local_[0], i32(o.row - g.lo.row));
            return load(g.shared, binary(BinaryOp::Add, binary(BinaryOp::Mul, row, i32(g.tile_cols)), col), g.elem,
                        MemSpace::Shared);
        }
        return IRMutator::mutate(e);
    }

private:
    const std::vector<Group>& groups_;
    std::vector<ExprPtr> local_;
};

// Positions [0, count) of a tile shared out among the block's threads:
// thread t takes t, t + block, t + 2 * block, ... The trip count is a
// constant, so the loop is unrolled (each trip in its own scope; only the
// last, partial one is guarded): straight-line code for the CPU executor,
// what NVRTC would unroll anyway.
// body(k, at): k is the position (I32), at(base) the I64 base + k, written
// base + first + (long long)threadIdx so that executors see it rise by one
// per thread (the CPU executor then compares and addresses whole ranges).
void block_strided(KernelBuilder& kb, const std::string& prefix, int64_t count, int64_t block,
                   const std::function<void(ExprPtr k, const std::function<ExprPtr(ExprPtr)>& at)>& body) {
    for (int64_t first = 0; first < count; first += block) {
        kb.open();
        const std::string k = kb.fresh(prefix);
        kb.emit(let(k, first ? binary(BinaryOp::Add, thread_idx(), i32(first)) : thread_idx()));
        const ExprPtr kv = var(k, ScalarType::I32);
        auto at = [first](ExprPtr base) {
            return binary(BinaryOp::Add, first ? binary(BinaryOp::Add, std::move(base), i64(first)) : std::move(base),
                          cast(ScalarType::I64, thread_idx()));
        };
        if (first + block <= count) body(kv, at);
        else emit_if(kb, binary(BinaryOp::Lt, kv, i32(count)), [&] { body(kv, at); });
        kb.emit(seq(kb.close()));
    }
}

// For each position k of the tile: tile[k] = buffer[first(k)]
// when that index is inside the buffer (a halo may reach past either end;
// elements outside are never read).
void load_tile(KernelBuilder& kb, const Group& g, const LoweringFacts& facts,
               const std::function<ExprPtr(KernelBuilder&, ExprPtr k, const std::function<ExprPtr(ExprPtr)>& at)>& first) {
    const ExprPtr count = use_params(kb, facts.buffer_count(g.buffer));
    block_strided(kb, "k", g.tile_rows * g.tile_cols, kb.kernel().block_size,
                  [&](ExprPtr k, const std::function<ExprPtr(ExprPtr)>& position) {
        const ExprPtr at = kb.bind("src", first(kb, k, position));
        // One comparison per `if` (executors test a rising index against a
        // bound for a whole range of threads); no lower bound when no offset
        // reaches below the tile.
        auto copy = [&] {
            emit_if(kb, binary(BinaryOp::Lt, at, count),
                    [&] { kb.emit(store(g.shared, k, load(g.buffer, at, g.elem), MemSpace::Shared)); });
        };
        if (g.lo.row >= 0 && g.lo.col >= 0) copy();
        else emit_if(kb, binary(BinaryOp::Ge, at, i64(0)), copy);
    });
}

bool has_checks(const std::vector<StmtPtr>& body) {
    for (const StmtPtr& s : body)
        if (s->kind == StmtKind::Error || has_checks(s->body) || has_checks(s->else_body)) return true;
    return false;
}

// The kernel without the scalar parameters only the served reads used (the
// slices' starts: their offsets are constants in the tile reads now).
Kernel without_unused_scalars(Kernel k) {
    struct Used : IRVisitor {
        std::set<std::string> params;
        using IRVisitor::visit;
        void visit(const ExprPtr& e) override {
            if (e->kind == ExprKind::Param) params.insert(e->name);
            IRVisitor::visit(e);
        }
    } used;
    used.visit_kernel(k);
    std::erase_if(k.params, [&](const Param& p) { return p.kind == ParamKind::Scalar && !used.params.count(p.name); });
    return k;
}

}  // namespace

bool lower_map_shared_tiles(PlanBuilder& pb, KernelBuilder& kb, const MapBody& map, const LoweringOptions& opt) {
    const int rank = static_cast<int>(map.index.size());
    if (!opt.shared_memory || !opt.facts || !opt.facts->value || !opt.facts->buffer_count) return false;
    if (rank != 1 && rank != 2) return false;
    // Element code with run-time checks (an index out of bounds) keeps the
    // grid-stride kernel: executors report the lowest failing *thread*, and
    // tiles give threads other elements, so the error reported could differ
    // from the one without tiles (and from the reference evaluator's).
    if (has_checks(map.body)) return false;
    const int64_t block = opt.block_size;
    const int64_t rows = rank == 2 ? opt.tile_rows : 1;
    const int64_t cols = rank == 2 ? opt.tile_cols : block * opt.items_per_thread;
    std::vector<Group> groups = find_groups(kb, map, *opt.facts, rows, cols);
    if (groups.empty()) return false;

    for (Group& g : groups) g.shared = kb.shared_array("tile_" + g.buffer, g.elem, g.tile_rows * g.tile_cols);
    std::string why;
    for (const Group& g : groups) why += (why.empty() ? "" : "; ") + g.describe(rank);
    const ExprPtr n = use_params(kb, map.count);
    const std::string tile = kb.fresh("tile");
    ExprPtr grid;
    if (rank == 1) {
        // Tiles of `cols` consecutive elements; tile t0 needs [t0 + lo, t0 + cols + hi).
        kb.block_loop(tile, binary(BinaryOp::Mul, block_idx(), i64(cols)), n,
                      binary(BinaryOp::Mul, grid_dim(), i64(cols)), [&] {
                          const ExprPtr t0 = var(tile, ScalarType::I64);
                          kb.emit(comment(why));
                          for (const Group& g : groups)
                              load_tile(kb, g, *opt.facts,
                                        [&](KernelBuilder&, ExprPtr, const std::function<ExprPtr(ExprPtr)>& at) {
                                            return at(binary(BinaryOp::Add, t0, i64(g.lo.col)));
                                        });
                          kb.end_phase();
                          block_strided(kb, "e", cols, block, [&](ExprPtr e, const std::function<ExprPtr(ExprPtr)>& at) {
                              kb.emit(let(map.gid, at(t0)));
                              emit_if(kb, binary(BinaryOp::Lt, var(map.gid, ScalarType::I64), n), [&] {
                                  ServeFromTiles serve(groups, {e});
                                  for (const StmtPtr& s : map.body) kb.emit(serve.mutate(s));
                              });
                          });
                      });
        grid = capped_grid(map.count, cols, opt.max_blocks);
    } else {
        // Tiles of rows x cols elements, numbered row-major over the output;
        // threads walk a tile row by row, consecutive threads on consecutive
        // columns (coalesced), and so do the tile loads.
        const ExprPtr height = use_params(kb, map.shape[0]), width = use_params(kb, map.shape[1]);
        const ExprPtr across = ceil_div(map.shape[1], i64(cols));
        const ExprPtr tiles = binary(BinaryOp::Mul, ceil_div(map.shape[0], i64(rows)), across);
        kb.block_loop(tile, block_idx(), use_params(kb, tiles), grid_dim(), [&] {
            const ExprPtr t = var(tile, ScalarType::I64);
            kb.emit(comment(why));
            const ExprPtr row0 = kb.bind("row0", binary(BinaryOp::Mul, binary(BinaryOp::Div, t, use_params(kb, across)),
                                                        i64(rows)));
            const ExprPtr col0 = kb.bind("col0", binary(BinaryOp::Mul, binary(BinaryOp::Mod, t, use_params(kb, across)),
                                                        i64(cols)));
            for (const Group& g : groups)
                load_tile(kb, g, *opt.facts, [&](KernelBuilder& b, ExprPtr k, const std::function<ExprPtr(ExprPtr)>&) {
                    const ExprPtr r = b.bind("tr", binary(BinaryOp::Div, k, i32(g.tile_cols)));
                    const ExprPtr c = b.bind("tc", binary(BinaryOp::Mod, k, i32(g.tile_cols)));
                    const ExprPtr grow = binary(BinaryOp::Add, row0, i64(g.lo.row));
                    const ExprPtr gcol = binary(BinaryOp::Add, col0, i64(g.lo.col));
                    return binary(BinaryOp::Add,
                                  binary(BinaryOp::Mul, binary(BinaryOp::Add, grow, widen(r)), g.row_stride),
                                  binary(BinaryOp::Add, gcol, widen(c)));
                });
            kb.end_phase();
            block_strided(kb, "e", rows * cols, block, [&](ExprPtr e, const std::function<ExprPtr(ExprPtr)>&) {
                const ExprPtr r = kb.bind("r", binary(BinaryOp::Div, e, i32(cols)));
                const ExprPtr c = kb.bind("c", binary(BinaryOp::Mod, e, i32(cols)));
                kb.emit(let(map.index[0]->name, binary(BinaryOp::Add, row0, widen(r))));
                kb.emit(let(map.index[1]->name, binary(BinaryOp::Add, col0, widen(c))));
                const ExprPtr i = map.index[0], j = map.index[1];
                emit_if(kb, binary(BinaryOp::And, binary(BinaryOp::Lt, i, height), binary(BinaryOp::Lt, j, width)), [&] {
                    kb.emit(let(map.gid, binary(BinaryOp::Add, binary(BinaryOp::Mul, i, width), j)));
                    ServeFromTiles serve(groups, {r, c});
                    for (const StmtPtr& s : map.body) kb.emit(serve.mutate(s));
                });
            });
        });
        grid = capped_grid(tiles, 1, opt.max_blocks);
    }
    pb.launch(pb.add_kernel(without_unused_scalars(kb.finish(/*verify=*/false))), grid,
              "map: shared tiles of " + (rank == 1 ? std::to_string(cols) : std::to_string(rows) + "x" + std::to_string(cols)) +
                   " elements for overlapping reads");
    return true;
}

}  // namespace shoal::ir
