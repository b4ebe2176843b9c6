#include "codegen/plan_memo.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#include "codegen/kernel_builder.h"
#include "codegen/structural_key.h"

namespace shoal::compiled {

namespace {

using ir::same_position;

bool same_positions(const CheckPositions& a, const CheckPositions& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same_position);
}

}  // namespace

void PlanMemo::store(const std::string& key, std::shared_ptr<const ir::LaunchPlan> plan, FactQueries facts,
                     CheckPositions positions) {
    std::vector<Entry>* found = entries_.find(key);
    std::vector<Entry>& entries = found ? *found : entries_.insert(key, {});
    // An extent that crosses a threshold every time would add entries without end.
    if (entries.size() >= 8) entries.erase(entries.begin());
    entries.push_back(Entry{std::move(facts), std::move(plan), std::move(positions), {}});
}

FoundPlan PlanMemo::at_positions(Entry& e, const CheckPositions& positions) {
    if (same_positions(e.lowered_at, positions)) return {e.plan, nullptr};
    for (const auto& [at, moves] : e.moved)
        if (same_positions(at, positions)) return {e.plan, moves};
    if (e.lowered_at.size() != positions.size()) return {};  // not the same structure after all: lower
    auto moves = std::make_shared<std::vector<std::pair<Loc, Loc>>>();
    for (size_t j = 0; j < positions.size(); ++j)
        if (!same_position(e.lowered_at[j], positions[j])) moves->emplace_back(e.lowered_at[j], positions[j]);
    // A long session types the same statement on many lines: keep a few.
    if (e.moved.size() >= 16) e.moved.clear();
    e.moved.emplace_back(positions, moves);
    return {e.plan, std::move(moves)};
}

namespace {

// The symbolic index d of operand k, and operand j of combine k's sides a
// and b: named once (every plan a statement runs is probed).
const ir::ExprPtr& probe_param(char side, size_t k, size_t d, ir::ScalarType t) {
    thread_local std::map<std::tuple<char, size_t, size_t, ir::ScalarType>, ir::ExprPtr> made;
    ir::ExprPtr& p = made[{side, k, d, t}];
    if (!p) {
        const std::string name = side == 'i' ? "probe_" + std::to_string(k) + "_" + std::to_string(d)
                                             : std::string("probe_") + side + std::to_string(k) + "_" + std::to_string(d);
        p = ir::param(name, t);
    }
    return p;
}

}  // namespace

Probe probe_operands(std::span<const ir::PullTuple> operands, std::span<const ir::Combine> combines) {
    ir::KernelBuilder kb("probe");
    // The key's bytes (structural_key.h): the operands' element types,
    // shapes and reads at symbolic indices, then the combines.
    std::string key;
    std::vector<Loc> checks;
    {
        ir::KeyWriter w(key);
        for (size_t k = 0; k < operands.size(); ++k) {
            const ir::PullTuple& x = operands[k];
            w.bytes("operand", 7);
            w.count(x.elems.size());
            for (ir::ScalarType t : x.elems) w.byte(static_cast<int>(t));
            w.exprs(x.shape);
            std::vector<ir::ExprPtr> index;
            for (int d = 0; d < x.rank(); ++d)
                index.push_back(probe_param('i', k, static_cast<size_t>(d), ir::ScalarType::I64));
            w.exprs(x.at(kb, index));
        }
        for (size_t k = 0; k < combines.size(); ++k) {
            const ir::Combine& c = combines[k];
            w.bytes("combine", 7);
            w.byte(c.commutative ? 'c' : '-');
            w.byte(c.known ? static_cast<int>(*c.known) : '-');
            std::vector<ir::ExprPtr> a, b;
            w.count(c.types.size());
            for (size_t j = 0; j < c.types.size(); ++j) {
                w.byte(static_cast<int>(c.types[j]));
                a.push_back(probe_param('a', k, j, c.types[j]));
                b.push_back(probe_param('b', k, j, c.types[j]));
            }
            w.exprs(c.neutral);
            w.exprs(c.fn(kb, a, b));
        }
        // The statements the reads emitted (lets, loops), the parameters they
        // declared and their checks.
        const ir::Kernel probe = kb.finish(false);
        w.kernel(probe);
        for (const ir::Check& c : probe.checks) checks.push_back(c.loc);
    }
    return Probe{std::move(key), std::move(checks)};
}

std::string options_key(const ir::LoweringOptions& o) {
    const std::array<int64_t, 15> values = {
        o.block_size,     o.items_per_thread, o.reduce_items_per_thread, o.scan_items_per_thread, o.max_blocks,
        o.transpose_tile, o.transpose_rows,   o.radix_bits,              o.sort_items_per_thread, o.cpu_cores,
        o.shared_memory,  o.tile_rows,        o.tile_cols,               o.matmul_tile,           o.library_gemm};
    // Asked for every plan a loop runs, nearly always with the same options.
    thread_local std::array<int64_t, 15> last_values{};
    thread_local std::string last_key;
    if (!last_key.empty() && values == last_values) return last_key;
    std::string s;
    for (int64_t v : values) s += std::to_string(v) + ",";
    last_values = values;
    last_key = s;
    return s;
}

bool check_plan_memo() {
    static const bool on = [] {
        const char* v = std::getenv("SHOAL_CHECK_PLAN_CACHE");
        return v && std::strcmp(v, "0") != 0 && *v;
    }();
    return on;
}

}  // namespace shoal::compiled
