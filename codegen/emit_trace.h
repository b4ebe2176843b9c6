// `:emit`'s trace (docs/emit.md, "How a function becomes C++"): a Shoal
// function is run through the ordinary evaluator and fusion engine on
// placeholder arguments whose scalars carry symbols. Nothing executes: the
// engine's plans go to a TracingExecutor that records them, and what the
// host computes between plans (rmse's sqrt (s / float n)) is recorded as
// formulas over the wrapper's variables. The recorded plans plus formulas
// are the host program the wrapper prints (codegen/emit_program.h).
//
// Symbols ride on scalar Values (lang/value.h ScalarSymbol) through the
// evaluator, which asks the tracer before it decides anything (lang/eval.h
// Tracer): a branch, loop count or index computed from the parameters is
// refused with the reason. Inside the engine extents and lifted constants are
// plain numbers, so the tracer finds their formulas by value: every size
// the trace invents (a parameter's extent, a read-back) is a distinct random
// probe, every symbolic result is remembered with its value, and small
// integers are constants. emit_program traces twice with different probes
// and insists on the same program, so a coincidence cannot go unnoticed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codegen/launch_plan.h"
#include "codegen/plan_executor.h"
#include "lang/eval.h"

namespace shoal::emit {

// Integers below this magnitude are constants when looked up by value
// (probes and the sizes computed from them are far larger).
constexpr int64_t kSmallInteger = 4096;

// A scalar's symbol: a host formula (launch_plan.h host expressions, plus
// math calls) whose Params are the wrapper's variables: scalar parameters by
// name, extents len_x (len_x0, len_x1 for a matrix), read-backs by the name
// the wrapper gives them.
struct Formula final : ScalarSymbol {
    explicit Formula(ir::ExprPtr e) : expr(std::move(e)) {}
    ir::ExprPtr expr;
};
ir::ExprPtr formula_of(const Value& v);  // its symbol's, or its value as a constant

class EmitTracer;

// An array in the trace: a parameter, or an output of a recorded plan. It
// has no elements; reading one on the host is refused, except a single
// element, which the wrapper reads back (a reduction's total).
class TracedArray final : public ir::DeviceArray {
public:
    TracedArray(EmitTracer& tracer, ir::ScalarType elem, int64_t count) : DeviceArray(elem, count), tracer_(&tracer) {}
    const void* device() const override { return tracer_; }
    void read(void* host) const override;

    std::string param;   // a parameter's name, or
    int plan = -1;       // the recorded plan (index) and its Output buffer
    std::string buffer;

private:
    EmitTracer* tracer_;
};

// One plan the engine ran during the trace.
struct RecordedPlan {
    std::shared_ptr<const ir::LaunchPlan> plan;  // as run: canonical names
    ir::LaunchPlan shown;                        // as `:cuda` shows it: the user's names
    std::map<std::string, ir::ExprPtr> scalars;  // every Input scalar: its formula
    std::map<std::string, std::shared_ptr<const TracedArray>> inputs;   // every Input buffer
    std::map<std::string, std::string> read_backs;  // ReadBack scalar -> the wrapper variable it defines

    // A scalar's or buffer's name in `shown` (the plans match position for position).
    std::string shown_scalar(const std::string& name) const;
    std::string shown_buffer(const std::string& name) const;
};

// A single element read on the host (TracedArray::read): its wrapper
// variable, from which plan's buffer at which index.
struct HostRead {
    std::string variable;
    ir::ScalarType type;
    int plan;
    std::string buffer;
};

class EmitTracer final : public Tracer {
public:
    explicit EmitTracer(uint64_t seed) : rng_(seed) {}

    // ---------------------------------------------------------- atoms
    // A scalar parameter: a random probe carrying the parameter's symbol.
    Value scalar_param(const std::string& name, Prim p);
    // The extents of an array parameter: random probes, or for an extent
    // known to equal a formula (`aliases`), that formula's value.
    std::vector<int64_t> extents_param(const std::string& name, int rank);
    // Extents the trace found must equal another parameter's (a shape
    // mismatch between independent probes): len_y -> len_x. Set before
    // extents_param.
    std::map<std::string, ir::ExprPtr> aliases;
    // The formula an integer extent of this value has, if any.
    ir::ExprPtr extent_formula(int64_t n) const;
    // The formula a scalar of this value has: remembered, else a constant
    // (`exact`: the symbol the engine passed along, if any).
    ir::ExprPtr scalar_formula(const ir::HostValue& v, const SymbolPtr& exact) const;

    // ---------------------------------------------------------- Tracer
    Value builtin_result(std::string_view name, std::span<const Value> args, Value result, const Loc& loc) override;
    void decide(const Value& v, std::string_view what, const Loc& loc) override;
    void slice(const Value* lo, const Value* hi, const Value* step, int64_t n, int64_t start, int64_t step_taken,
               int64_t count, const Loc& loc) override;

    // ---------------------------------------------------------- the record
    std::vector<RecordedPlan> plans;
    std::vector<ir::LaunchPlan> shown;   // filled by the engine as it runs plans (FusionEngine::trace)
    std::vector<HostRead> host_reads;    // every single element read back on the host
    // A read-back on the host (TracedArray::read): its probe value, and the
    // symbol the builtin returning it will carry.
    void read_element(const TracedArray& a, void* host);
    // A fresh random value for a read-back (ReadBack steps, host reads).
    ir::HostValue probe(ir::ScalarType t, const std::string& variable);
    std::string fresh_variable(const std::string& prefix);

private:
    void remember(const ir::HostValue& v, const ir::ExprPtr& f);
    void remember_extent(int64_t n, const ir::ExprPtr& f);
    static std::pair<ir::ScalarType, uint64_t> key_of(const ir::HostValue& v);
    // Probes: a size (distinct, far from any constant of a program, small
    // enough that a product of two stays in range) and a float in [1, 2)
    // with random mantissa bits (a product or quotient of probes never looks
    // like a constant).
    int64_t random_size() { return 3 * kSmallInteger + static_cast<int64_t>(rng_() % 20000); }
    double random_unit() { return 1.0 + static_cast<double>(rng_() >> 11) / 9007199254740992.0; }

    std::mt19937_64 rng_;
    std::map<std::pair<ir::ScalarType, uint64_t>, ir::ExprPtr> known_;  // value -> first formula with it
    std::vector<std::pair<ir::HostValue, SymbolPtr>> pending_;  // host reads not yet returned by a builtin
    std::map<std::string, int> counters_;
    std::map<std::string, int64_t> atoms_;  // extent atoms -> probe
};

// Thrown when the trace meets something the wrapper cannot do; the driver
// turns it into the user's error (emit_program.cpp).
struct Refusal {
    Loc loc;
    std::string message;
    std::vector<std::string> notes;
};
[[noreturn]] void refuse(const Loc& loc, std::string message, std::vector<std::string> notes = {});

// Runs plans by recording them (no kernel runs): outputs are TracedArrays
// whose counts are evaluated on the probes; ReadBack steps get probes.
std::shared_ptr<ir::PlanExecutor> make_tracing_executor(EmitTracer& tracer);

}  // namespace shoal::emit
