// Sorting (sort, sortByKey): a stable LSD radix sort (docs/compiler.md, "Sorting").
//
// The records being sorted are FIELDS moved together: the key in its own type
// (so sorted keys keep their exact bits: -0.0 and NaN payloads survive), plus
// an I64 payload: the original index for sortByKey (the permutation that then
// gathers the values), the row index for a per-row sort of a matrix (the most
// significant digits: rows are sorted by (row, key)). A pass sorts the records
// stably by one radix_bits-wide digit of one field, least significant first:
//   hist     block b counts the digits of its contiguous chunk (per-thread
//            counters in shared memory) -> hist[digit * blocks + b]
//   offsets  one block scans hist exclusively (digit-major order, so the
//            offset of (digit, block) is where block b's items of that digit go)
//   scatter  block b walks its chunk in tiles: a block-local stable sort of the
//            tile by the digit (threads own adjacent items; an exclusive scan of
//            the per-thread digit counts ranks them), then a coalesced write of
//            the sorted tile to offset[digit][b] + rank within the digit
// No atomics: the result is deterministic. Ping-pong buffers alternate so that
// the last pass writes the output. The first pass reads the keys through the
// PullArray, so a producer is fused into it.
//
// The CPU form (LoweringOptions::cpu_cores > 0, native code) is the textbook
// parallel radix sort of a multicore CPU: a few blocks of one thread each, as
// many as the cores can share, walk their contiguous chunks sequentially with
// 11-bit digits (3 passes for 32-bit keys, not 8): hist counts in one pass over the chunk,
// offsets is a sequential scan, scatter places each record at its digit's
// next slot. Both forms are stable LSD sorts by the same digits' order, and a
// stable sort's result is unique: the same records, bit for bit.
#include <algorithm>
#include <map>
#include <tuple>

#include "codegen/lower_common.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

using namespace lowering;

namespace {

ExprPtr add(ExprPtr a, ExprPtr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
ExprPtr mul(ExprPtr a, ExprPtr b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }
ExprPtr shared_i32(const std::string& mem, ExprPtr i) { return load(mem, std::move(i), ScalarType::I32, MemSpace::Shared); }

ExprPtr zero_of(ScalarType t) {
    if (t == ScalarType::Bool) return const_bool(false);
    return is_float(t) ? const_float(0, t) : const_int(0, t);
}

// Shared arrays indexed through `padded` need this many slots for `count` elements.
int64_t padded_size(int64_t count) { return count + count / 32; }

// The key as an unsigned integer in the reference's order (less_nan_last):
// integers with the sign bit flipped; floats with all bits flipped when
// negative, else the sign bit set; every NaN is the largest value and -0.0 is
// +0.0, so NaNs tie with each other and zeros with zeros (stability decides).
// Floats are decided on their bits by integer selects: with float compares
// the CPU form's passes took 1.5x as long.
ExprPtr ordered_bits(KernelBuilder& kb, ExprPtr x) {
    switch (x->type) {
        case ScalarType::Bool: return cast(ScalarType::U32, x);
        case ScalarType::I32: return binary(BinaryOp::Xor, cast(ScalarType::U32, x), const_int(0x80000000, ScalarType::U32));
        case ScalarType::I64: return binary(BinaryOp::Xor, cast(ScalarType::U64, x), const_int(INT64_MIN, ScalarType::U64));
        case ScalarType::U32:
        case ScalarType::U64: return x;
        case ScalarType::F32:
        case ScalarType::F64: {
            const bool wide = x->type == ScalarType::F64;
            const ScalarType u = wide ? ScalarType::U64 : ScalarType::U32, s = wide ? ScalarType::I64 : ScalarType::I32;
            const ExprPtr sign = const_int(wide ? INT64_MIN : int64_t{0x80000000}, u);
            const ExprPtr ones = const_int(wide ? int64_t{-1} : int64_t{0xFFFFFFFF}, u);
            const ExprPtr magnitude_mask = const_int(wide ? INT64_MAX : int64_t{0x7FFFFFFF}, u);
            const ExprPtr infinity = const_int(wide ? int64_t{0x7FF0000000000000} : int64_t{0x7F800000}, u);
            ExprPtr b = kb.bind("key_bits", call("bits", {x}, u));
            ExprPtr magnitude = kb.bind("magnitude", binary(BinaryOp::And, b, magnitude_mask));
            // b >> (width - 1), arithmetic: all ones for a negative key, else 0.
            ExprPtr negative = cast(u, binary(BinaryOp::Shr, cast(s, b), const_int(wide ? 63 : 31, s)));
            ExprPtr finite = binary(BinaryOp::Xor, b, binary(BinaryOp::Or, negative, sign));
            return select(binary(BinaryOp::Gt, magnitude, infinity), ones,
                          select(binary(BinaryOp::Eq, magnitude, const_int(0, u)), sign, finite));
        }
    }
    internal_error(__FILE__, __LINE__, "sort: unknown key type");
}

int key_bits(ScalarType t) { return t == ScalarType::Bool ? 1 : static_cast<int>(scalar_size(t)) * 8; }

// One component of the records being sorted.
struct Field {
    ScalarType type;
    bool is_key;  // digits of ordered_bits; else of a non-negative index
    std::function<ExprPtr(KernelBuilder&, ExprPtr g)> initial;  // element g before the first pass
};

struct Pass {
    size_t field;                       // the field whose digit orders this pass
    int shift;                          // the digit is bits [shift, shift + radix_bits) (for comments)
    std::vector<std::string> from, to;  // per field: buffer read ("" = Field::initial), buffer written
    ExprPtr active;                     // host Bool: whether the pass runs; null: always
};

class RadixSort {
public:
    RadixSort(PlanBuilder& pb, std::string name, ExprPtr n, std::vector<Field> fields, const LoweringOptions& opt)
        : pb_(pb), name_(std::move(name)), n_(std::move(n)), fields_(std::move(fields)), opt_(opt),
          chunked_(opt.cpu_cores > 0), bits_(radix_bits(opt)), bs_(chunked_ ? 1 : opt.block_size), radix_(1 << bits_),
          tile_(int64_t{opt.block_size} * opt.sort_items_per_thread) {
        SHOAL_INTERNAL_ASSERT(chunked_ || (bits_ >= 1 && radix_ < bs_ && bs_ % radix_ == 0),
                              "sort: 2^radix_bits digits must be fewer than the threads of a block");
        SHOAL_INTERNAL_ASSERT(opt.sort_items_per_thread >= 1, "sort: sort_items_per_thread >= 1");
        if (chunked_) {
            // A few chunks per core (a slow core does not hold up the pass), none
            // shorter than kCpuMinChunk (each clears and writes its radix counters).
            const ExprPtr most = i64(int64_t{kCpuChunksPerCore} * opt.cpu_cores);
            blocks_ = param(pb.derived(pb.fresh(name_ + "_blocks"), min_expr(ceil_div(n_, i64(kCpuMinChunk)), most)),
                            ScalarType::I64);
            chunk_ = param(pb.derived(pb.fresh(name_ + "_chunk"), ceil_div(n_, blocks_)), ScalarType::I64);
        } else {
            // Chunks of whole tiles, at most max_blocks of them (as in scans).
            const ExprPtr tiles = param(pb.derived(pb.fresh(name_ + "_tiles"), ceil_div(n_, i64(tile_))), ScalarType::I64);
            blocks_ = param(pb.derived(pb.fresh(name_ + "_blocks"), min_expr(tiles, i64(opt.max_blocks))), ScalarType::I64);
            chunk_ = param(pb.derived(pb.fresh(name_ + "_chunk"), mul(ceil_div(tiles, blocks_), i64(tile_))),
                           ScalarType::I64);
        }
        hist_ = pb.temp_buffer(pb.fresh(name_ + "_hist"), ScalarType::I64, mul(i64(radix_), blocks_));
        offsets_ = pb.temp_buffer(pb.fresh(name_ + "_offsets"), ScalarType::I64, mul(i64(radix_), blocks_));
        pass_ = pb.temp_buffer(pb.fresh(name_ + "_pass"), ScalarType::I32, i64(1));
        scan_kernel_ = chunked_ ? add_sequential_offsets_kernel() : add_offsets_kernel();
    }

    // Bits per pass: the CPU form's 2^11 counters (16 KiB) still fit a core's L1
    // cache, and 3 passes over 32-bit keys move a quarter less memory than 4
    // (2^22 floats: 44 -> 30 ms, measured against 8 bits).
    static int radix_bits(const LoweringOptions& opt) { return opt.cpu_cores > 0 ? 11 : opt.radix_bits; }

    // Passes that differ only in their digit share kernels: those read the
    // pass number from the device (set by the first pass, advanced by the
    // offsets kernel), so a sort has a handful of kernels, not three per pass.
    void run(const std::vector<Pass>& passes) {
        for (size_t p = 0; p < passes.size(); ++p) {
            const Pass& ps = passes[p];
            if (!first_pass_.count(ps.field)) first_pass_[ps.field] = static_cast<int>(p);
            const auto key = std::make_tuple(ps.field, ps.from[ps.field], ps.to[ps.field]);
            if (!kernels_.count(key)) {
                const std::string id = std::to_string(kernels_.size());
                const std::string hist = name_ + "_histogram" + id, scatter = name_ + "_scatter" + id;
                kernels_[key] = chunked_ ? std::pair{add_chunk_hist_kernel(hist, ps), add_chunk_scatter_kernel(scatter, ps)}
                                         : std::pair{add_hist_kernel(hist, ps), add_scatter_kernel(scatter, ps)};
            }
            auto when = [&](ExprPtr grid) { return ps.active ? select(ps.active, grid, i64(0)) : grid; };
            const std::string what = "pass " + std::to_string(p) + " (" + (fields_[ps.field].is_key ? "key" : "row") +
                                     " bits " + std::to_string(ps.shift) + "+): ";
            pb_.launch(kernels_[key].first, when(blocks_), what + "digit counts of each block's chunk");
            pb_.launch(scan_kernel_, when(min_expr(blocks_, i64(1))), what + "exclusive scan of the digit counts");
            pb_.launch(kernels_[key].second, when(blocks_),
                       what + (chunked_ ? "each chunk scattered in order" : "block-local sort, coalesced scatter"));
        }
    }

private:
    // Element g of a field: from the pass's source buffer, or computed before the first pass.
    ExprPtr read(KernelBuilder& kb, size_t f, const std::string& buffer, ExprPtr g) const {
        if (buffer.empty()) return fields_[f].initial(kb, std::move(g));
        kb.buffer_param(buffer, fields_[f].type, Access::Read);
        return load(buffer, std::move(g), fields_[f].type);
    }

    // The pass's digit shift (I32): 0 in the first pass, else from the pass
    // number on the device; `lag` is 1 after the offsets kernel advanced it.
    ExprPtr digit_shift(KernelBuilder& kb, const Pass& ps, int lag) const {
        if (ps.from[ps.field].empty()) return i32(0);
        kb.buffer_param(pass_, ScalarType::I32, Access::Read);
        ExprPtr pass = binary(BinaryOp::Sub, load(pass_, i64(0), ScalarType::I32), i32(first_pass_.at(ps.field) + lag));
        return kb.bind("shift", mul(pass, i32(bits_)));
    }

    // The digit of a field value at this shift, as I32.
    ExprPtr digit(KernelBuilder& kb, const Pass& ps, ExprPtr shift, ExprPtr x) const {
        ExprPtr bits = fields_[ps.field].is_key ? ordered_bits(kb, x) : cast(ScalarType::U64, x);
        const ScalarType u = bits->type;
        ExprPtr shifted = binary(BinaryOp::Shr, bits, cast(u, shift));
        ExprPtr d = cast(ScalarType::I32, binary(BinaryOp::And, shifted, const_int(radix_ - 1, u)));
        // Shifts wrap; the row digits above bit 63 (a pair's second pass) are 0.
        if (!fields_[ps.field].is_key) d = select(binary(BinaryOp::Lt, shift, i32(64)), d, i32(0));
        return kb.bind("digit", d);
    }

    // The pass number on the device (see digit_shift): the first pass's
    // histogram starts it, each offsets kernel advances it.
    void start_pass_count(KernelBuilder& kb, const Pass& ps) const {
        if (!ps.from[ps.field].empty()) return;
        kb.buffer_param(pass_, ScalarType::I32, Access::Write);
        ExprPtr first = binary(BinaryOp::And, binary(BinaryOp::Eq, block_idx(), i64(0)),
                               binary(BinaryOp::Eq, thread_idx(), i32(0)));
        emit_if(kb, first, [&] { kb.emit(store(pass_, i64(0), i32(0))); });
    }
    void advance_pass_count(KernelBuilder& kb) const {
        kb.buffer_param(pass_, ScalarType::I32, Access::ReadWrite);
        kb.emit(store(pass_, i64(0), add(load(pass_, i64(0), ScalarType::I32), i32(1))));
    }

    // Where hist and offsets keep digit d (I32) of this block: digit-major.
    ExprPtr hist_slot(KernelBuilder& kb, ExprPtr d) const {
        return add(mul(cast(ScalarType::I64, d), use_params(kb, blocks_)), block_idx());
    }

    // This block's chunk [lo, hi) (uniform expressions).
    std::pair<ExprPtr, ExprPtr> chunk(KernelBuilder& kb) const {
        ExprPtr lo = mul(block_idx(), use_params(kb, chunk_));
        return {lo, min_expr(add(lo, chunk_), use_params(kb, n_))};
    }

    // counts[digit][thread]: each thread counts in its own column, so the
    // counting needs no atomics and no barriers.
    std::string counts_array(KernelBuilder& kb) const {
        return kb.shared_array("counts", ScalarType::I32, padded_size(int64_t{radix_} * bs_));
    }
    ExprPtr column_slot(ExprPtr d) const { return padded(add(mul(d, i32(bs_)), thread_idx())); }
    void clear_column(KernelBuilder& kb, const std::string& counts) const {
        thread_loop(kb, "d", i32(0), i32(radix_), i32(1),
                    [&](ExprPtr d) { kb.emit(store(counts, column_slot(d), i32(0), MemSpace::Shared)); });
    }
    void count(KernelBuilder& kb, const std::string& counts, ExprPtr d) const {
        ExprPtr slot = kb.bind("slot", column_slot(d));
        kb.emit(store(counts, slot, add(shared_i32(counts, slot), i32(1)), MemSpace::Shared));
    }
    // Digit-major, thread t owns the radix adjacent counters [t * radix, (t + 1) * radix);
    // their sum goes to partials[t] (a phase of its own).
    void thread_partials(KernelBuilder& kb, const std::string& counts, const std::string& partials) const {
        ExprPtr sum = kb.bind("partial", i32(0));
        thread_loop(kb, "k", i32(0), i32(radix_), i32(1), [&](ExprPtr k) {
            ExprPtr c = shared_i32(counts, padded(add(mul(thread_idx(), i32(radix_)), k)));
            kb.emit(assign(sum->name, add(sum, c)));
        });
        kb.emit(store(partials, thread_idx(), sum, MemSpace::Shared));
        kb.end_phase();
    }

    int add_hist_kernel(const std::string& kname, const Pass& ps) {
        KernelBuilder kb(kname, bs_);
        const std::string counts = counts_array(kb);
        const std::string partials = kb.shared_array("partials", ScalarType::I32, bs_);
        kb.buffer_param(hist_, ScalarType::I64, Access::Write);
        start_pass_count(kb, ps);
        const std::pair<ExprPtr, ExprPtr> range = chunk(kb);
        const ExprPtr lo = range.first, hi = range.second;
        ExprPtr shift = digit_shift(kb, ps, 0);
        clear_column(kb, counts);
        thread_loop(kb, "g", add(lo, tid64()), hi, i64(bs_), [&](ExprPtr g) {
            count(kb, counts, digit(kb, ps, shift, kb.bind("x", read(kb, ps.field, ps.from[ps.field], g))));
        });
        kb.end_phase();
        thread_partials(kb, counts, partials);
        // The partials of digit d are those of threads [d * bs / radix, (d + 1) * bs / radix).
        const int per_digit = bs_ / radix_;
        emit_if(kb, binary(BinaryOp::Lt, thread_idx(), i32(radix_)), [&] {
            ExprPtr total = kb.bind("total", i32(0));
            thread_loop(kb, "q", i32(0), i32(per_digit), i32(1), [&](ExprPtr q) {
                ExprPtr part = shared_i32(partials, add(mul(thread_idx(), i32(per_digit)), q));
                kb.emit(assign(total->name, add(total, part)));
            });
            kb.emit(store(hist_, hist_slot(kb, thread_idx()), cast(ScalarType::I64, total)));
        });
        return pb_.add_kernel(kb.finish(/*verify=*/false));
    }

    // One kernel for every pass (hist and offsets are the same buffers each
    // time); it also advances the pass number.
    int add_offsets_kernel() {
        KernelBuilder kb(name_ + "_scan", bs_);
        kb.buffer_param(offsets_, ScalarType::I64, Access::Write);
        const Combine plus = known_combine(AssocOp::Add, ScalarType::I64);
        auto element = [&](KernelBuilder& b, ExprPtr g) {
            b.buffer_param(hist_, ScalarType::I64, Access::Read);
            return std::vector<ExprPtr>{load(hist_, g, ScalarType::I64)};
        };
        auto output = [&](KernelBuilder& b, ExprPtr g, const std::vector<ExprPtr>& v) { b.emit(store(offsets_, g, v[0])); };
        TileScan ts{plus, opt_.scan_items_per_thread, element, output, ScanKind::Exclusive, {}, {}, {}};
        ts.prepare(kb);
        std::vector<ExprPtr> carry = declare_vars(kb, "carry", plus.neutral);
        ts.emit(kb, i64(0), use_params(kb, mul(i64(radix_), blocks_)), carry);
        emit_if(kb, binary(BinaryOp::Eq, thread_idx(), i32(0)), [&] { advance_pass_count(kb); });
        return pb_.add_kernel(kb.finish(/*verify=*/false));
    }

    // Exclusive scan of the counters in digit-major order: counter (d, t)
    // becomes the tile-local position of thread t's first item with digit d,
    // and start[d] the tile-local start of digit d (start[radix] = valid).
    void scan_counters(KernelBuilder& kb, const std::string& counts, const std::string& scan_a,
                       const std::string& scan_b, const std::string& start, ExprPtr valid) const {
        const ExprPtr tid = thread_idx();
        thread_partials(kb, counts, scan_a);
        const std::string* src = &scan_a;
        const std::string* dst = &scan_b;
        for (int d = 1; d < bs_; d *= 2) {  // Hillis-Steele over the thread partials
            ExprPtr v = kb.bind("hs", shared_i32(*src, tid));
            emit_if(kb, binary(BinaryOp::Ge, tid, i32(d)),
                    [&] { kb.emit(assign(v->name, add(v, shared_i32(*src, binary(BinaryOp::Sub, tid, i32(d)))))); });
            kb.emit(store(*dst, tid, v, MemSpace::Shared));
            kb.end_phase();
            std::swap(src, dst);
        }
        ExprPtr run = kb.bind("run", i32(0));
        emit_if(kb, binary(BinaryOp::Gt, tid, i32(0)),
                [&] { kb.emit(assign(run->name, shared_i32(*src, binary(BinaryOp::Sub, tid, i32(1))))); });
        const int per_digit = bs_ / radix_;  // threads whose counters start a digit record its start
        emit_if(kb, binary(BinaryOp::Eq, binary(BinaryOp::Mod, tid, i32(per_digit)), i32(0)), [&] {
            kb.emit(store(start, binary(BinaryOp::Div, tid, i32(per_digit)), run, MemSpace::Shared));
        });
        emit_if(kb, binary(BinaryOp::Eq, tid, i32(0)), [&] { kb.emit(store(start, i32(radix_), valid, MemSpace::Shared)); });
        thread_loop(kb, "k", i32(0), i32(radix_), i32(1), [&](ExprPtr k) {
            ExprPtr slot = kb.bind("slot", padded(add(mul(tid, i32(radix_)), k)));
            ExprPtr c = kb.bind("c", shared_i32(counts, slot));
            kb.emit(store(counts, slot, run, MemSpace::Shared));
            kb.emit(assign(run->name, add(run, c)));
        });
        kb.end_phase();
    }

    int add_scatter_kernel(const std::string& kname, const Pass& ps) {
        const int ipt = opt_.sort_items_per_thread;
        const size_t f = ps.field;
        const ScalarType t = fields_[f].type;
        const bool payloads = fields_.size() > 1;
        const ExprPtr tid = thread_idx();
        KernelBuilder kb(kname, bs_);
        const std::string counts = counts_array(kb);
        const std::string scan_a = kb.shared_array("scan_a", ScalarType::I32, bs_);
        const std::string scan_b = kb.shared_array("scan_b", ScalarType::I32, bs_);
        const std::string stage = kb.shared_array("stage", t, padded_size(tile_));
        const std::string source = payloads ? kb.shared_array("source", ScalarType::I32, padded_size(tile_)) : "";
        const std::string base = kb.shared_array("digit_base", ScalarType::I64, radix_);    // global start, this tile
        const std::string start = kb.shared_array("digit_start", ScalarType::I32, radix_ + 1);  // tile-local start
        kb.buffer_param(offsets_, ScalarType::I64, Access::Read);
        for (size_t c = 0; c < fields_.size(); ++c) kb.buffer_param(ps.to[c], fields_[c].type, Access::Write);
        auto digit_thread = [&](const std::function<void()>& body) { emit_if(kb, binary(BinaryOp::Lt, tid, i32(radix_)), body); };

        ExprPtr shift = digit_shift(kb, ps, 1);
        clear_column(kb, counts);
        digit_thread([&] {
            kb.emit(store(base, tid, load(offsets_, hist_slot(kb, tid), ScalarType::I64), MemSpace::Shared));
        });
        emit_if(kb, binary(BinaryOp::Le, tid, i32(radix_)), [&] { kb.emit(store(start, tid, i32(0), MemSpace::Shared)); });
        const std::pair<ExprPtr, ExprPtr> range = chunk(kb);
        const ExprPtr lo = range.first, hi = range.second;
        const std::string t0_name = kb.fresh("tile");
        const ExprPtr t0 = var(t0_name, ScalarType::I64);
        kb.block_loop(t0_name, lo, hi, i64(tile_), [&] {
            // Load the tile coalesced; the digit bases advance past the previous tile.
            ExprPtr valid = kb.bind("valid", cast(ScalarType::I32, min_expr(binary(BinaryOp::Sub, hi, t0), i64(tile_))));
            digit_thread([&] {
                ExprPtr size = binary(BinaryOp::Sub, shared_i32(start, add(tid, i32(1))), shared_i32(start, tid));
                kb.emit(store(base, tid, add(load(base, tid, ScalarType::I64, MemSpace::Shared), cast(ScalarType::I64, size)),
                              MemSpace::Shared));
            });
            thread_loop(kb, "j", i32(0), i32(ipt), i32(1), [&](ExprPtr j) {
                ExprPtr k = kb.bind("k", add(mul(j, i32(bs_)), tid));
                emit_if(kb, binary(BinaryOp::Lt, k, valid), [&] {
                    ExprPtr x = read(kb, f, ps.from[f], add(t0, cast(ScalarType::I64, k)));
                    kb.emit(store(stage, padded(k), x, MemSpace::Shared));
                });
            });
            kb.end_phase();
            // Each thread takes its ipt adjacent items (kept in registers) and counts their digits.
            std::vector<ExprPtr> item(ipt), key(ipt), dig(ipt);
            for (int j = 0; j < ipt; ++j) {
                item[j] = kb.bind("item", add(mul(tid, i32(ipt)), i32(j)));
                key[j] = kb.bind("x", zero_of(t));
                dig[j] = kb.bind("d", i32(0));
                emit_if(kb, binary(BinaryOp::Lt, item[j], valid), [&] {
                    kb.emit(assign(key[j]->name, load(stage, padded(item[j]), t, MemSpace::Shared)));
                    kb.emit(assign(dig[j]->name, digit(kb, ps, shift, key[j])));
                    count(kb, counts, dig[j]);
                });
            }
            kb.end_phase();
            scan_counters(kb, counts, scan_a, scan_b, start, valid);
            // Walking its items in order, a thread places each at its counter and
            // bumps it: equal digits keep their order (stability).
            for (int j = 0; j < ipt; ++j) {
                emit_if(kb, binary(BinaryOp::Lt, item[j], valid), [&] {
                    ExprPtr slot = kb.bind("slot", column_slot(dig[j]));
                    ExprPtr rank = kb.bind("rank", shared_i32(counts, slot));
                    kb.emit(store(counts, slot, add(rank, i32(1)), MemSpace::Shared));
                    kb.emit(store(stage, padded(rank), key[j], MemSpace::Shared));
                    if (payloads) kb.emit(store(source, padded(rank), item[j], MemSpace::Shared));
                });
            }
            kb.end_phase();
            // Write the sorted tile coalesced: runs of one digit go to consecutive addresses.
            thread_loop(kb, "j", i32(0), i32(ipt), i32(1), [&](ExprPtr j) {
                ExprPtr k = kb.bind("k", add(mul(j, i32(bs_)), tid));
                emit_if(kb, binary(BinaryOp::Lt, k, valid), [&] {
                    ExprPtr x = kb.bind("x", load(stage, padded(k), t, MemSpace::Shared));
                    ExprPtr d = digit(kb, ps, shift, x);
                    ExprPtr within = cast(ScalarType::I64, binary(BinaryOp::Sub, k, shared_i32(start, d)));
                    ExprPtr dest = kb.bind("dest", add(load(base, d, ScalarType::I64, MemSpace::Shared), within));
                    kb.emit(store(ps.to[f], dest, x));
                    if (!payloads) return;
                    ExprPtr from = kb.bind("src", add(t0, cast(ScalarType::I64, shared_i32(source, padded(k)))));
                    for (size_t c = 0; c < fields_.size(); ++c)
                        if (c != f) kb.emit(store(ps.to[c], dest, read(kb, c, ps.from[c], from)));
                });
            });
            clear_column(kb, counts);
        });
        return pb_.add_kernel(kb.finish(/*verify=*/false));
    }

    // ---- the CPU form: one thread per block walks its chunk

    int add_chunk_hist_kernel(const std::string& kname, const Pass& ps) {
        KernelBuilder kb(kname, 1);
        const std::string counts = kb.shared_array("counts", ScalarType::I64, radix_);
        kb.buffer_param(hist_, ScalarType::I64, Access::Write);
        start_pass_count(kb, ps);
        const std::pair<ExprPtr, ExprPtr> range = chunk(kb);
        const ExprPtr lo = range.first, hi = range.second;
        ExprPtr shift = digit_shift(kb, ps, 0);
        thread_loop(kb, "d", i32(0), i32(radix_), i32(1),
                    [&](ExprPtr d) { kb.emit(store(counts, d, i64(0), MemSpace::Shared)); });
        thread_loop(kb, "g", lo, hi, i64(1), [&](ExprPtr g) {
            ExprPtr d = digit(kb, ps, shift, kb.bind("x", read(kb, ps.field, ps.from[ps.field], g)));
            kb.emit(store(counts, d, add(load(counts, d, ScalarType::I64, MemSpace::Shared), i64(1)), MemSpace::Shared));
        });
        thread_loop(kb, "d", i32(0), i32(radix_), i32(1), [&](ExprPtr d) {
            kb.emit(store(hist_, hist_slot(kb, d), load(counts, d, ScalarType::I64, MemSpace::Shared)));
        });
        return pb_.add_kernel(kb.finish(/*verify=*/false));
    }

    // offsets = the exclusive scan of hist, in digit-major order; advances the pass number.
    int add_sequential_offsets_kernel() {
        KernelBuilder kb(name_ + "_scan", 1);
        kb.buffer_param(hist_, ScalarType::I64, Access::Read);
        kb.buffer_param(offsets_, ScalarType::I64, Access::Write);
        ExprPtr run = kb.bind("run", i64(0));
        thread_loop(kb, "k", i64(0), use_params(kb, mul(i64(radix_), blocks_)), i64(1), [&](ExprPtr k) {
            ExprPtr c = kb.bind("c", load(hist_, k, ScalarType::I64));
            kb.emit(store(offsets_, k, run));
            kb.emit(assign(run->name, add(run, c)));
        });
        advance_pass_count(kb);
        return pb_.add_kernel(kb.finish(/*verify=*/false));
    }

    // Each record in chunk order goes to its digit's next slot: equal digits keep their order.
    int add_chunk_scatter_kernel(const std::string& kname, const Pass& ps) {
        const size_t f = ps.field;
        KernelBuilder kb(kname, 1);
        const std::string next = kb.shared_array("next", ScalarType::I64, radix_);
        kb.buffer_param(offsets_, ScalarType::I64, Access::Read);
        for (size_t c = 0; c < fields_.size(); ++c) kb.buffer_param(ps.to[c], fields_[c].type, Access::Write);
        ExprPtr shift = digit_shift(kb, ps, 1);
        thread_loop(kb, "d", i32(0), i32(radix_), i32(1), [&](ExprPtr d) {
            kb.emit(store(next, d, load(offsets_, hist_slot(kb, d), ScalarType::I64), MemSpace::Shared));
        });
        const std::pair<ExprPtr, ExprPtr> range = chunk(kb);
        const ExprPtr lo = range.first, hi = range.second;
        thread_loop(kb, "g", lo, hi, i64(1), [&](ExprPtr g) {
            ExprPtr x = kb.bind("x", read(kb, f, ps.from[f], g));
            ExprPtr d = digit(kb, ps, shift, x);
            ExprPtr dest = kb.bind("dest", load(next, d, ScalarType::I64, MemSpace::Shared));
            kb.emit(store(next, d, add(dest, i64(1)), MemSpace::Shared));
            kb.emit(store(ps.to[f], dest, x));
            for (size_t c = 0; c < fields_.size(); ++c)
                if (c != f) kb.emit(store(ps.to[c], dest, read(kb, c, ps.from[c], g)));
        });
        return pb_.add_kernel(kb.finish(/*verify=*/false));
    }

    static constexpr int64_t kCpuMinChunk = 16384;
    static constexpr int kCpuChunksPerCore = 4;

    PlanBuilder& pb_;
    std::string name_;
    ExprPtr n_;
    std::vector<Field> fields_;
    const LoweringOptions& opt_;
    bool chunked_;
    int bits_, bs_, radix_;
    int64_t tile_;
    ExprPtr blocks_, chunk_;
    std::string hist_, offsets_, pass_;
    int scan_kernel_ = -1;
    std::map<size_t, int> first_pass_;  // by field
    std::map<std::tuple<size_t, std::string, std::string>, std::pair<int, int>> kernels_;  // (field, from, to) -> hist, scatter
};

// The rows of vals gathered by perm (I64 original indices), fused into map
// kernels: one per set of values with the same inner extents.
void gather_values(PlanBuilder& pb, const std::string& name, const std::string& perm, ExprPtr n,
                   const std::vector<PullArray>& vals, const std::vector<std::string>& outs, const LoweringOptions& opt) {
    auto inner = [](const PullArray& a) { return std::vector<ExprPtr>(a.shape.begin() + 1, a.shape.end()); };
    std::vector<std::vector<size_t>> groups;
    for (size_t v = 0; v < vals.size(); ++v) {
        auto same = [&](const std::vector<size_t>& g) { return inner(vals[g[0]]) == inner(vals[v]); };
        auto it = std::find_if(groups.begin(), groups.end(), same);
        if (it == groups.end()) groups.push_back({v});
        else it->push_back(v);
    }
    for (const auto& g : groups) {
        std::vector<PullArray> moved;
        std::vector<std::string> group_outs;
        for (size_t v : g) {
            PullArray a = vals[v];
            a.shape[0] = n;
            a.at = [src = vals[v], perm](KernelBuilder& kb, const std::vector<ExprPtr>& index) {
                kb.buffer_param(perm, ScalarType::I64, Access::Read);
                std::vector<ExprPtr> from = index;
                from[0] = kb.bind("from", load(perm, index[0], ScalarType::I64));
                return src.at(kb, from);
            };
            moved.push_back(std::move(a));
            group_outs.push_back(outs[v]);
        }
        lower_map(pb, pb.fresh(name + "_values"), tuple_of(moved), group_outs, opt);
    }
}

// The CPU form of a per-row sort (a matrix's rows, no values): each block
// (one thread, a few per core) sorts whole rows, one after another: runs of
// 16 by insertion, then a stable bottom-up merge sort on the keys' ordered
// bits, ping-ponging between the output row and a scratch row. The radix sort by (row, key)
// moved every record of the matrix through 5 global passes and took
// 100x NumPy's per-row sort (20000 x 256 floats: 1.03 s); rows that fit a
// core's cache sort in it. A stable sort's result is unique: the same bits
// as the radix form.
void lower_cpu_row_sort(PlanBuilder& pb, const std::string& name, const PullArray& keys, const std::string& out,
                        const LoweringOptions& opt) {
    const ScalarType t = keys.elem;
    const ExprPtr cols = keys.shape.back();
    const ExprPtr rows = element_count(std::vector<ExprPtr>(keys.shape.begin(), keys.shape.end() - 1));
    const ExprPtr n = element_count(keys.shape);
    const std::string scratch = pb.temp_buffer(pb.fresh(name + "_scratch"), t, n);
    // The rows go in batches, one launch each (the batch number on the
    // device, advanced between them), so that the auto tier can move to
    // native code after the first batch: a single launch ran interpreted
    // to its end (20000 x 256: 13 s).
    constexpr int64_t kBatches = 16, kChunksPerCore = 4, kRun = 16;
    const ExprPtr batch_rows = param(pb.derived(pb.fresh(name + "_batch_rows"), ceil_div(rows, i64(kBatches))), ScalarType::I64);
    const ExprPtr blocks = param(pb.derived(pb.fresh(name + "_blocks"),
                                            min_expr(batch_rows, i64(kChunksPerCore * std::max(1, opt.cpu_cores)))),
                                 ScalarType::I64);
    const ExprPtr per_block = param(pb.derived(pb.fresh(name + "_rows_per_block"), ceil_div(batch_rows, blocks)), ScalarType::I64);
    const std::string batch = pb.temp_buffer(pb.fresh(name + "_batch"), ScalarType::I64, i64(1));
    auto counter_kernel = [&](const std::string& kname, bool advance) {
        KernelBuilder k(kname, 1);
        k.buffer_param(batch, ScalarType::I64, advance ? Access::ReadWrite : Access::Write);
        k.emit(store(batch, i64(0), advance ? add(load(batch, i64(0), ScalarType::I64), i64(1)) : i64(0)));
        return pb.add_kernel(k.finish());
    };
    const int start = counter_kernel(name + "_first_batch", false), next = counter_kernel(name + "_next_batch", true);
    const PullTuple kt = tuple_of(keys);
    KernelBuilder kb(name + "_rows", 1);
    kb.buffer_param(out, t, Access::ReadWrite);
    kb.buffer_param(scratch, t, Access::ReadWrite);
    kb.buffer_param(batch, ScalarType::I64, Access::Read);
    const ExprPtr c = kb.bind("cols", use_params(kb, cols));
    const ExprPtr batch_first = kb.bind("batch_first", mul(load(batch, i64(0), ScalarType::I64), use_params(kb, batch_rows)));
    const ExprPtr batch_last = kb.bind("batch_last", min_expr(add(batch_first, use_params(kb, batch_rows)), use_params(kb, rows)));
    const ExprPtr first_row = kb.bind("first_row", add(batch_first, mul(block_idx(), use_params(kb, per_block))));
    const ExprPtr last_row = kb.bind("last_row", min_expr(add(first_row, use_params(kb, per_block)), batch_last));
    auto less = [&](ExprPtr a, ExprPtr b) { return binary(BinaryOp::Lt, ordered_bits(kb, a), ordered_bits(kb, b)); };
    // Runs [lo, lo + w) and [lo + w, lo + 2w) of the row at `base` merged from `from` into `to`.
    auto merge_pass = [&](const std::string& from, const std::string& to, ExprPtr base, ExprPtr w) {
        thread_loop(kb, "lo", i64(0), c, mul(w, i64(2)), [&](ExprPtr lo) {
            const ExprPtr mid = kb.bind("mid", min_expr(add(lo, w), c));
            const ExprPtr hi = kb.bind("hi", min_expr(add(mid, w), c));
            const ExprPtr i = kb.bind("i", lo), j = kb.bind("j", mid);
            thread_loop(kb, "k", lo, hi, i64(1), [&](ExprPtr k) {
                // Clamped reads: a run that is used up is never chosen.
                const ExprPtr a = kb.bind("a", load(from, add(base, min_expr(i, binary(BinaryOp::Sub, mid, i64(1)))), t));
                const ExprPtr b = kb.bind("b", load(from, add(base, min_expr(j, binary(BinaryOp::Sub, hi, i64(1)))), t));
                // The left run's element unless the right one is strictly less (stable).
                const ExprPtr left = kb.bind(
                    "left", binary(BinaryOp::And, binary(BinaryOp::Lt, i, mid),
                                   binary(BinaryOp::Or, binary(BinaryOp::Ge, j, hi), unary(UnaryOp::Not, less(b, a)))));
                kb.emit(store(to, add(base, k), select(left, a, b)));
                kb.emit(assign(i->name, add(i, select(left, i64(1), i64(0)))));
                kb.emit(assign(j->name, add(j, select(left, i64(0), i64(1)))));
            });
        });
    };
    thread_loop(kb, "row", first_row, last_row, i64(1), [&](ExprPtr row) {
        const ExprPtr base = kb.bind("base", mul(row, c));
        thread_loop(kb, "e", i64(0), c, i64(1), [&](ExprPtr e) {
            kb.emit(store(out, add(base, e), flat_at(kb, kt, add(base, e))[0]));
        });
        // Runs of kRun sorted in place by insertion (stable: an element moves
        // past strictly greater ones only), which saves the first merge passes.
        thread_loop(kb, "run", i64(0), c, i64(kRun), [&](ExprPtr lo) {
            const ExprPtr hi = kb.bind("run_end", min_expr(add(lo, i64(kRun)), c));
            thread_loop(kb, "i", add(lo, i64(1)), hi, i64(1), [&](ExprPtr i) {
                const ExprPtr x = kb.bind("x", load(out, add(base, i), t));
                const ExprPtr j = kb.bind("j", i);
                // Before j, clamped to the run (the condition is false there anyway).
                auto moves = [&] {
                    const ExprPtr before = load(out, add(base, binary(BinaryOp::Max, binary(BinaryOp::Sub, j, i64(1)), lo)), t);
                    return binary(BinaryOp::And, binary(BinaryOp::Gt, j, lo), less(x, before));
                };
                const ExprPtr go = kb.bind("go", moves());
                kb.open();
                kb.emit(store(out, add(base, j), load(out, add(base, binary(BinaryOp::Sub, j, i64(1))), t)));
                kb.emit(assign(j->name, binary(BinaryOp::Sub, j, i64(1))));
                kb.emit(assign(go->name, moves()));
                kb.emit(while_loop(go, kb.close()));
                kb.emit(store(out, add(base, j), x));
            });
        });
        // Pass p merges runs of kRun 2^p, from out to scratch when p is even.
        const ExprPtr passes = kb.bind("passes", i64(0));
        thread_loop(kb, "p", i64(0), i64(58), i64(1), [&](ExprPtr p) {
            const ExprPtr w = kb.bind("w", binary(BinaryOp::Shl, i64(kRun), p));
            emit_if(kb, binary(BinaryOp::Lt, w, c), [&] {
                emit_if(kb, binary(BinaryOp::Eq, binary(BinaryOp::And, p, i64(1)), i64(0)),
                        [&] { merge_pass(out, scratch, base, w); }, [&] { merge_pass(scratch, out, base, w); });
                kb.emit(assign(passes->name, add(p, i64(1))));
            });
        });
        // An odd number of passes left the row in scratch.
        emit_if(kb, binary(BinaryOp::Eq, binary(BinaryOp::And, passes, i64(1)), i64(1)), [&] {
            thread_loop(kb, "e", i64(0), c, i64(1), [&](ExprPtr e) {
                kb.emit(store(out, add(base, e), load(scratch, add(base, e), t)));
            });
        });
    });
    const int sorter = pb.add_kernel(kb.finish());
    const ExprPtr any = select(binary(BinaryOp::Gt, rows, i64(0)), i64(1), i64(0));
    pb.launch(start, any, "the first batch of rows");
    for (int64_t b = 0; b < kBatches; ++b) {
        // A batch past the last row launches no blocks.
        const ExprPtr live = binary(BinaryOp::Lt, mul(i64(b), batch_rows), rows);
        pb.launch(sorter, select(live, blocks, i64(0)),
                  "batch " + std::to_string(b) + ": each block sorts whole rows by a stable merge sort (the CPU form)");
        if (b + 1 < kBatches) pb.launch(next, select(live, i64(1), i64(0)), "the next batch of rows");
    }
}

}  // namespace

void lower_sort(PlanBuilder& pb, const std::string& name, const PullArray& keys, const std::vector<PullArray>& vals,
                const std::string& keys_out, const std::vector<std::string>& vals_out, const LoweringOptions& opt,
                ExprPtr max_key) {
    SHOAL_INTERNAL_ASSERT(keys.rank() >= 1 && vals.size() == vals_out.size(), "sort: keys of rank >= 1, one output per value");
    SHOAL_INTERNAL_ASSERT(vals.empty() || keys.rank() == 1, "sortByKey: rank-1 keys");
    for (const auto& v : vals) SHOAL_INTERNAL_ASSERT(v.rank() >= 1, "sortByKey: values of rank >= 1");
    const ScalarType t = keys.elem;
    const ExprPtr n = element_count(keys.shape);
    const PullTuple kt = tuple_of(keys);
    pb.output_buffer(keys_out, t, n);
    if (opt.cpu_cores > 0 && vals.empty() && keys.rank() > 1 && !max_key) {
        lower_cpu_row_sort(pb, name, keys, keys_out, opt);
        return;
    }

    std::vector<Field> fields = {{t, true, [kt](KernelBuilder& kb, ExprPtr g) { return flat_at(kb, kt, g)[0]; }}};
    ExprPtr rows;  // a per-row sort: the row index is an I64 field
    if (!vals.empty()) {
        fields.push_back({ScalarType::I64, false, [](KernelBuilder&, ExprPtr g) { return g; }});
    } else if (keys.rank() > 1) {
        rows = element_count(std::vector<ExprPtr>(keys.shape.begin(), keys.shape.end() - 1));
        const ExprPtr cols = keys.shape.back();
        fields.push_back({ScalarType::I64, false, [cols](KernelBuilder& kb, ExprPtr g) {
                              return binary(BinaryOp::Div, g, use_params(kb, cols));
                          }});
    }

    // Key digits first, then the row digits in pairs: a pair runs only when
    // some row index has a bit at or above its first digit, and skipping whole
    // pairs keeps the number of passes' parity, so the last one always writes keys_out.
    // Key digits above max_key are skipped in pairs too, the same way (the
    // skipped passes are always the last key passes, and no row passes
    // follow with vals); an odd number of key passes is never skipped.
    const int rb = RadixSort::radix_bits(opt);
    SHOAL_INTERNAL_ASSERT(!max_key || (!is_float(t) && !rows), "sort: max_key bounds integer keys of a vector");
    const int key_passes = (key_bits(t) + rb - 1) / rb;
    std::vector<Pass> passes;
    for (int k = 0; k < key_passes; ++k) {
        // Pairs of passes from the top: an odd count starts with a pass of its own.
        const int group_start = key_passes % 2 == 1 ? std::max(0, k - (k + 1) % 2) : k - k % 2;
        ExprPtr needed = max_key && group_start > 0
                             ? binary(BinaryOp::Ge, max_key, i64(int64_t{1} << (group_start * rb)))
                             : nullptr;
        passes.push_back({0, k * rb, {}, {}, needed});
    }
    if (rows) {
        for (int shift = 0; shift < 63; shift += 2 * rb) {
            ExprPtr needed = binary(BinaryOp::Ge, binary(BinaryOp::Sub, rows, i64(1)), i64(int64_t{1} << shift));
            for (int s : {shift, shift + rb}) passes.push_back({1, s, {}, {}, needed});
        }
    }
    const std::string key_tmp = pb.temp_buffer(pb.fresh(name + "_keys"), t, n);
    std::vector<std::string> payload;  // the I64 field's ping-pong; the last pass writes payload[0]
    for (size_t k = 0; fields.size() > 1 && k < 2; ++k)
        payload.push_back(pb.temp_buffer(pb.fresh(name + (rows ? "_rows" : "_perm")), ScalarType::I64, n));
    for (size_t p = 0; p < passes.size(); ++p) {
        const size_t from_end = passes.size() - 1 - p;
        passes[p].to.push_back(from_end % 2 == 0 ? keys_out : key_tmp);
        if (!payload.empty()) passes[p].to.push_back(payload[from_end % 2]);
        passes[p].from = p == 0 ? std::vector<std::string>(fields.size()) : passes[p - 1].to;
    }
    RadixSort(pb, name, n, fields, opt).run(passes);
    if (!vals.empty()) gather_values(pb, name, payload[0], n, vals, vals_out, opt);
}

}  // namespace shoal::ir
