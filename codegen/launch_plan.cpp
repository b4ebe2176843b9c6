#include "codegen/launch_plan.h"

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "codegen/cuda_printer.h"
#include "codegen/library_calls.h"
#include "codegen/scalar_eval.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

std::shared_ptr<LaunchPlan> relocatable_copy(const std::shared_ptr<const LaunchPlan>& plan) {
    auto copy = std::make_shared<LaunchPlan>(*plan);
    copy->relocated_from = plan->relocated_from ? plan->relocated_from : plan;
    return copy;
}

bool same_position(const Loc& a, const Loc& b) {
    return a.source == b.source && a.line == b.line && a.col == b.col && a.length == b.length;
}

void move_check_error(Error& e, const CheckMoves& moves) {
    if (!moves || e.kind != ErrorKind::Runtime) return;
    for (const auto& [from, to] : *moves)
        if (same_position(e.loc, from)) {
            e.loc = to;
            return;
        }
}

std::shared_ptr<const LaunchPlan> with_moved_checks(const std::shared_ptr<const LaunchPlan>& plan,
                                                    const CheckMoves& moves) {
    if (!moves || moves->empty()) return plan;
    auto copy = relocatable_copy(plan);
    for (Kernel& k : copy->kernels)
        for (Check& c : k.checks)
            for (const auto& [from, to] : *moves)
                if (same_position(c.loc, from)) {
                    c.loc = to;
                    break;
                }
    return copy;
}

const PlanScalar* LaunchPlan::find_scalar(const std::string& n) const {
    for (const auto& s : scalars)
        if (s.name == n) return &s;
    return nullptr;
}

const PlanBuffer* LaunchPlan::find_buffer(const std::string& n) const {
    for (const auto& b : buffers)
        if (b.name == n) return &b;
    return nullptr;
}

int64_t shared_bytes(const Kernel& k) {
    int64_t bytes = 0;
    for (const auto& a : k.shared) bytes += a.size * static_cast<int64_t>(scalar_size(a.type));
    return bytes;
}

// ---------------------------------------------------------------- PlanBuilder
PlanBuilder::PlanBuilder(std::string name) { plan_.name = std::move(name); }

std::string PlanBuilder::input_scalar(const std::string& name, ScalarType t) {
    if (const PlanScalar* s = plan_.find_scalar(name)) {
        SHOAL_INTERNAL_ASSERT(s->type == t, "plan scalar " + name + " redeclared with another type");
        return name;
    }
    SHOAL_INTERNAL_ASSERT(!plan_.find_buffer(name), "plan scalar " + name + " clashes with a buffer");
    plan_.scalars.push_back(PlanScalar{name, t, ScalarSource::Input, nullptr});
    return name;
}

std::string PlanBuilder::derived(const std::string& name, ExprPtr value) {
    SHOAL_INTERNAL_ASSERT(!plan_.find_scalar(name) && !plan_.find_buffer(name), "plan name " + name + " reused");
    register_host_params(value);
    ScalarType t = value->type;
    plan_.scalars.push_back(PlanScalar{name, t, ScalarSource::Derived, std::move(value)});
    return name;
}

std::string PlanBuilder::add_buffer(const std::string& name, ScalarType elem, BufferRole role, ExprPtr count) {
    for (auto& b : plan_.buffers)
        if (b.name == name) {
            SHOAL_INTERNAL_ASSERT(b.elem == elem, "plan buffer " + name + " redeclared with another type");
            // An input registered by a kernel before its size was known gets it now.
            if (!b.count) b.count = count;
            return name;
        }
    SHOAL_INTERNAL_ASSERT(!plan_.find_scalar(name), "plan buffer " + name + " clashes with a scalar");
    if (count) register_host_params(count);
    if (guard_ && count && role != BufferRole::Input) count = select(guard_, count, i64(0));
    plan_.buffers.push_back(PlanBuffer{name, elem, role, std::move(count)});
    return name;
}

std::string PlanBuilder::input_buffer(const std::string& name, ScalarType elem, ExprPtr count) {
    return add_buffer(name, elem, BufferRole::Input, std::move(count));
}
std::string PlanBuilder::output_buffer(const std::string& name, ScalarType elem, ExprPtr count) {
    return add_buffer(name, elem, BufferRole::Output, std::move(count));
}
std::string PlanBuilder::temp_buffer(const std::string& name, ScalarType elem, ExprPtr count) {
    return add_buffer(name, elem, BufferRole::Temp, std::move(count));
}

void PlanBuilder::set_role(const std::string& buffer, BufferRole role) {
    for (auto& b : plan_.buffers)
        if (b.name == buffer) {
            b.role = role;
            return;
        }
    internal_error(__FILE__, __LINE__, "set_role: no buffer " + buffer);
}

std::string PlanBuilder::fresh(const std::string& prefix) {
    for (;;) {
        int n = counters_[prefix]++;
        std::string name = n == 0 ? prefix : prefix + std::to_string(n);
        if (!plan_.find_scalar(name) && !plan_.find_buffer(name)) return name;
    }
}

void PlanBuilder::register_host_params(const ExprPtr& e) {
    if (e->kind == ExprKind::Param && !plan_.find_scalar(e->name)) input_scalar(e->name, e->type);
    for (const auto& a : e->args) register_host_params(a);
}

void PlanBuilder::register_params(const Kernel& k) {
    for (const auto& p : k.params) {
        if (p.kind == ParamKind::Scalar) input_scalar(p.name, p.type);
        else add_buffer(p.name, p.type, BufferRole::Input, nullptr);
    }
}

int PlanBuilder::add_kernel(Kernel k) {
    register_params(k);
    plan_.kernels.push_back(std::move(k));
    return static_cast<int>(plan_.kernels.size()) - 1;
}

void PlanBuilder::set_guard(ExprPtr cond) {
    if (cond) register_host_params(cond);
    guard_ = std::move(cond);
}

void PlanBuilder::launch(int kernel, ExprPtr grid, std::string comment) {
    register_host_params(grid);
    if (guard_) grid = select(guard_, grid, i64(0));
    PlanStep s;
    s.kind = StepKind::Launch;
    s.kernel = kernel;
    s.grid = std::move(grid);
    s.comment = std::move(comment);
    plan_.steps.push_back(std::move(s));
}

std::vector<std::string> LibraryCall::buffers() const {
    std::vector<std::string> all = reads;
    all.insert(all.end(), writes.begin(), writes.end());
    return all;
}

void PlanBuilder::call(LibraryCall c, std::string comment) {
    for (const ExprPtr& a : c.args) register_host_params(a);
    for (const std::string& b : c.buffers())
        SHOAL_INTERNAL_ASSERT(plan_.find_buffer(b), "call " + c.function + ": undeclared buffer " + b);
    PlanStep s;
    s.kind = StepKind::Call;
    s.grid = guard_;
    s.call = std::move(c);
    s.comment = std::move(comment);
    plan_.steps.push_back(std::move(s));
}

std::string PlanBuilder::read_back(const std::string& scalar, const std::string& buffer, ExprPtr index,
                                   std::string comment) {
    const PlanBuffer* b = plan_.find_buffer(buffer);
    SHOAL_INTERNAL_ASSERT(b, "read_back from unknown buffer " + buffer);
    SHOAL_INTERNAL_ASSERT(!guard_, "read_back under a guard: the buffer may not exist");
    SHOAL_INTERNAL_ASSERT(!plan_.find_scalar(scalar), "read_back redefines " + scalar);
    register_host_params(index);
    plan_.scalars.push_back(PlanScalar{scalar, b->elem, ScalarSource::ReadBack, nullptr});
    PlanStep s;
    s.kind = StepKind::ReadBack;
    s.scalar = scalar;
    s.buffer = buffer;
    s.index = std::move(index);
    s.comment = std::move(comment);
    plan_.steps.push_back(std::move(s));
    return scalar;
}

namespace {

// Turns the launches and read-backs a lowering recorded into the host
// program: each derived scalar computed and each buffer allocated right
// before its first use, each kernel's error record checked right after its
// launch, each temporary freed right after its last use.
class HostProgram {
public:
    explicit HostProgram(const LaunchPlan& plan) : plan_(plan) {
        for (const PlanScalar& s : plan.scalars)
            if (s.source == ScalarSource::Input) defined_.insert(s.name);
        for (const PlanBuffer& b : plan.buffers)
            if (b.role == BufferRole::Input) allocated_.insert(b.name);
    }

    std::vector<PlanStep> schedule() {
        for (const PlanStep& s : plan_.steps) {
            if (s.kind == StepKind::Launch) {
                const Kernel& k = plan_.kernels[static_cast<size_t>(s.kernel)];
                need_scalars(s.grid);
                for (const Param& p : k.params) {
                    if (p.kind == ParamKind::Scalar) need_scalar(p.name);
                    else need_buffer(p.name);
                }
                emit(s);
                for (const Param& p : k.params)
                    if (p.kind == ParamKind::Buffer) last_use_[p.name] = steps_.size() - 1;
                if (!k.checks.empty()) {
                    PlanStep check;
                    check.kind = StepKind::Check;
                    check.kernel = s.kernel;
                    emit(check);
                }
            } else if (s.kind == StepKind::Call) {
                need_scalars(s.grid);
                for (const ExprPtr& a : s.call.args) need_scalars(a);
                const std::vector<std::string> buffers = s.call.buffers();
                for (const std::string& b : buffers) need_buffer(b);
                emit(s);
                for (const std::string& b : buffers) last_use_[b] = steps_.size() - 1;
            } else {
                need_scalars(s.index);
                need_buffer(s.buffer);
                emit(s);
                last_use_[s.buffer] = steps_.size() - 1;
                defined_.insert(s.scalar);
            }
        }
        // An output no launch wrote (an empty result) still exists.
        for (const PlanBuffer& b : plan_.buffers)
            if (b.role == BufferRole::Output) need_buffer(b.name);
        return with_frees();
    }

private:
    void emit(PlanStep s) { steps_.push_back(std::move(s)); }

    // A Compute of scalar `name`, or an Alloc / Free of buffer `name`.
    static PlanStep host_step(StepKind kind, const std::string& name) {
        PlanStep s;
        s.kind = kind;
        (kind == StepKind::Compute ? s.scalar : s.buffer) = name;
        return s;
    }

    void need_scalar(const std::string& name) {
        if (defined_.count(name)) return;
        const PlanScalar* s = plan_.find_scalar(name);
        SHOAL_INTERNAL_ASSERT(s, "plan " + plan_.name + ": unknown scalar " + name);
        SHOAL_INTERNAL_ASSERT(s->source == ScalarSource::Derived,
                              "plan " + plan_.name + ": scalar " + name + " used before it is read back");
        need_scalars(s->value);
        emit(host_step(StepKind::Compute, name));
        defined_.insert(name);
    }

    void need_scalars(const ExprPtr& e) {
        if (!e) return;
        if (e->kind == ExprKind::Param) need_scalar(e->name);
        for (const ExprPtr& a : e->args) need_scalars(a);
    }

    void need_buffer(const std::string& name) {
        if (allocated_.count(name)) return;
        const PlanBuffer* b = plan_.find_buffer(name);
        SHOAL_INTERNAL_ASSERT(b && b->count, "plan " + plan_.name + ": buffer " + name + " has no size");
        need_scalars(b->count);
        emit(host_step(StepKind::Alloc, name));
        allocated_.insert(name);
    }

    std::vector<PlanStep> with_frees() const {
        std::map<size_t, std::vector<std::string>> frees;  // step index -> temporaries last used there
        for (const PlanBuffer& b : plan_.buffers)
            if (b.role == BufferRole::Temp)
                if (auto it = last_use_.find(b.name); it != last_use_.end()) frees[it->second].push_back(b.name);
        std::vector<PlanStep> out;
        for (size_t i = 0; i < steps_.size(); ++i) {
            out.push_back(steps_[i]);
            // A launch's temporaries stay until its error record is checked.
            if (i + 1 < steps_.size() && steps_[i + 1].kind == StepKind::Check) continue;
            const size_t used = steps_[i].kind == StepKind::Check ? i - 1 : i;
            if (auto it = frees.find(used); it != frees.end())
                for (const std::string& name : it->second) out.push_back(host_step(StepKind::Free, name));
        }
        return out;
    }

    const LaunchPlan& plan_;
    std::set<std::string> defined_, allocated_;
    std::map<std::string, size_t> last_use_;
    std::vector<PlanStep> steps_;
};

}  // namespace

void verify_host_program(const LaunchPlan& plan) {
    std::set<std::string> defined(plan.entry.scalars.begin(), plan.entry.scalars.end());
    std::set<std::string> live(plan.entry.inputs.begin(), plan.entry.inputs.end()), freed;
    auto fail = [&](size_t step, const std::string& what) {
        internal_error(__FILE__, __LINE__, "plan " + plan.name + ", step " + std::to_string(step + 1) + ": " + what);
    };
    auto use_scalar = [&](size_t i, const std::string& name) {
        if (!defined.count(name)) fail(i, "scalar " + name + " used before it is defined");
    };
    std::function<void(size_t, const ExprPtr&)> uses = [&](size_t i, const ExprPtr& e) {
        if (!e) return;
        if (e->kind == ExprKind::Param) use_scalar(i, e->name);
        for (const ExprPtr& a : e->args) uses(i, a);
    };
    auto use_buffer = [&](size_t i, const std::string& b) {
        if (!live.count(b)) fail(i, "buffer " + b + (freed.count(b) ? " used after it is freed" : " used before it is allocated"));
    };
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const PlanStep& s = plan.steps[i];
        switch (s.kind) {
            case StepKind::Compute:
                uses(i, plan.find_scalar(s.scalar)->value);
                defined.insert(s.scalar);
                break;
            case StepKind::Alloc:
                uses(i, plan.find_buffer(s.buffer)->count);
                if (live.count(s.buffer) || freed.count(s.buffer)) fail(i, "buffer " + s.buffer + " allocated twice");
                live.insert(s.buffer);
                break;
            case StepKind::Launch: {
                const Kernel& k = plan.kernels.at(static_cast<size_t>(s.kernel));
                uses(i, s.grid);
                for (const Param& p : k.params) {
                    if (p.kind == ParamKind::Scalar) use_scalar(i, p.name);
                    else use_buffer(i, p.name);
                }
                const bool checked = i + 1 < plan.steps.size() && plan.steps[i + 1].kind == StepKind::Check &&
                                     plan.steps[i + 1].kernel == s.kernel;
                if (!k.checks.empty() && !checked) fail(i, "the launch of " + k.name + " is not followed by its check");
                break;
            }
            case StepKind::Check: break;
            case StepKind::Call:
                verify_library_call(plan, s.call);
                uses(i, s.grid);
                for (const ExprPtr& a : s.call.args) uses(i, a);
                for (const std::string& b : s.call.buffers()) use_buffer(i, b);
                break;
            case StepKind::ReadBack:
                uses(i, s.index);
                use_buffer(i, s.buffer);
                defined.insert(s.scalar);
                break;
            case StepKind::Free:
                use_buffer(i, s.buffer);
                if (plan.find_buffer(s.buffer)->role != BufferRole::Temp) fail(i, "frees " + s.buffer + ", which is not a temporary");
                live.erase(s.buffer);
                freed.insert(s.buffer);
                break;
        }
    }
    for (const std::string& out : plan.entry.outputs)
        if (!live.count(out)) fail(plan.steps.size(), "output " + out + " is never allocated");
}

LaunchPlan PlanBuilder::finish() const {
    LaunchPlan plan = plan_;
    for (const PlanScalar& s : plan.scalars)
        if (s.source == ScalarSource::Input) plan.entry.scalars.push_back(s.name);
    for (const PlanBuffer& b : plan.buffers) {
        if (b.role == BufferRole::Input) plan.entry.inputs.push_back(b.name);
        if (b.role == BufferRole::Output) plan.entry.outputs.push_back(b.name);
    }
    plan.steps = HostProgram(plan).schedule();
    return plan;
}

// ---------------------------------------------------------------- host expressions
ExprPtr i64(int64_t v) { return const_int(v, ScalarType::I64); }

ExprPtr ceil_div(ExprPtr a, ExprPtr b) {
    auto one = const_int(1, a->type);
    return binary(BinaryOp::Div, binary(BinaryOp::Sub, binary(BinaryOp::Add, a, b), one), b);
}

ExprPtr min_expr(ExprPtr a, ExprPtr b) { return call("min", {a, b}, a->type); }
ExprPtr max_expr(ExprPtr a, ExprPtr b) { return call("max", {a, b}, a->type); }

ExprPtr product(const std::vector<ExprPtr>& xs) {
    if (xs.empty()) return i64(1);
    ExprPtr p = xs[0];
    for (size_t k = 1; k < xs.size(); ++k) p = binary(BinaryOp::Mul, p, xs[k]);
    return p;
}

namespace {

// A host value as the C++ value type T of its type (scalar_eval.h), and back.
template <class T> T value_as(const HostValue& v) {
    if constexpr (scalar::is_fp_v<T>) return static_cast<T>(v.f);
    else if constexpr (scalar::is_bool_v<T>) return v.i != 0;
    else return static_cast<T>(v.i);
}
template <class T> HostValue host_value(ScalarType t, T x) {
    if constexpr (scalar::is_fp_v<T>) return HostValue{t, 0, static_cast<double>(x)};
    else return HostValue{t, static_cast<int64_t>(x), 0};  // U64: the bit pattern
}

// Shoal's conversion of v to type `to` (scalar::convert).
HostValue convert(ScalarType to, const HostValue& v) {
    return with_type(v.type, [&](auto from_tag) {
        using From = typename decltype(from_tag)::type;
        return with_type(to, [&](auto to_tag) {
            using To = typename decltype(to_tag)::type;
            return host_value(to, scalar::convert<To>(value_as<From>(v)));
        });
    });
}

HostValue unary_value(UnaryOp op, const HostValue& a) {
    return with_type(a.type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if (std::optional<T> r = apply_unary(op, value_as<T>(a))) return host_value(a.type, *r);
        internal_error(__FILE__, __LINE__, std::string("host expression: no such operator on ") + scalar_name(a.type));
    });
}

HostValue binary_value(BinaryOp op, const HostValue& a, const HostValue& b) {
    return with_type(a.type, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T x = value_as<T>(a), y = value_as<T>(b);
        if (std::optional<bool> c = apply_comparison(op, x, y)) return HostValue{ScalarType::Bool, *c, 0};
        if (std::optional<T> r = apply_arithmetic(op, x, y)) return host_value(a.type, *r);
        internal_error(__FILE__, __LINE__, std::string("host expression: no such operator on ") + scalar_name(a.type));
    });
}

}  // namespace

// The operations are scalar_eval.h's, so host and kernel arithmetic agree.
HostValue eval_host(const ExprPtr& e, const std::function<HostValue(const std::string&)>& lookup) {
    auto arg = [&](size_t k) { return eval_host(e->args[k], lookup); };
    switch (e->kind) {
        case ExprKind::Const:
            return with_type(e->type, [&](auto tag) {
                return host_value(e->type, const_value<typename decltype(tag)::type>(*e));
            });
        case ExprKind::Param: return convert(e->type, lookup(e->name));
        case ExprKind::Unary: return unary_value(e->unary_op, arg(0));
        case ExprKind::Binary: return binary_value(e->binary_op, arg(0), arg(1));
        case ExprKind::Select: return arg(0).i ? arg(1) : arg(2);
        case ExprKind::Cast: return convert(e->type, arg(0));
        case ExprKind::Call:
            SHOAL_INTERNAL_ASSERT((e->name == "min" || e->name == "max") && e->args.size() == 2,
                                  "host expression: call of " + e->name);
            return binary_value(e->name == "min" ? BinaryOp::Min : BinaryOp::Max, arg(0), arg(1));
        default: internal_error(__FILE__, __LINE__, "host expression: device-only node " + host_expr_string(e));
    }
}

int64_t eval_host_int(const ExprPtr& e, const std::function<HostValue(const std::string&)>& lookup) {
    return convert(ScalarType::I64, eval_host(e, lookup)).i;
}

// ---------------------------------------------------------------- printing
namespace {

// Simplifies "(n + 2048 - 1) / 2048" to "(n + 2047) / 2048" for readability.
std::string binary_string(const ExprPtr& e) {
    const ExprPtr& a = e->args[0];
    const ExprPtr& b = e->args[1];
    if (e->binary_op == BinaryOp::Min || e->binary_op == BinaryOp::Max)
        return std::string(binary_op_symbol(e->binary_op)) + "(" + host_expr_string(a) + ", " + host_expr_string(b) + ")";
    if (e->binary_op == BinaryOp::Sub && a->kind == ExprKind::Binary && a->binary_op == BinaryOp::Add &&
        a->args[1]->kind == ExprKind::Const && b->kind == ExprKind::Const && !is_float(b->type))
        return "(" + host_expr_string(a->args[0]) + " + " + std::to_string(a->args[1]->i - b->i) + ")";
    return "(" + host_expr_string(a) + " " + binary_op_symbol(e->binary_op) + " " + host_expr_string(b) + ")";
}

std::string strip_parens(std::string s) {
    if (s.size() >= 2 && s.front() == '(' && s.back() == ')') {
        int depth = 0;
        for (size_t k = 0; k < s.size(); ++k) {
            depth += s[k] == '(' ? 1 : s[k] == ')' ? -1 : 0;
            if (depth == 0 && k + 1 < s.size()) return s;  // "(a) + (b)"
        }
        return s.substr(1, s.size() - 2);
    }
    return s;
}

}  // namespace

std::string host_expr_string(const ExprPtr& e) {
    switch (e->kind) {
        case ExprKind::Const: {
            if (e->type == ScalarType::Bool) return e->i ? "true" : "false";
            if (!is_float(e->type)) return std::to_string(e->i);
            std::ostringstream os;
            os << e->f;
            return os.str();
        }
        case ExprKind::Param:
        case ExprKind::Var: return e->name;
        case ExprKind::Unary:
            return std::string(e->unary_op == UnaryOp::Neg ? "-" : e->unary_op == UnaryOp::Not ? "!" : "~") +
                   host_expr_string(e->args[0]);
        case ExprKind::Binary: return binary_string(e);
        case ExprKind::Select:
            return "(" + host_expr_string(e->args[0]) + " ? " + host_expr_string(e->args[1]) + " : " +
                   host_expr_string(e->args[2]) + ")";
        case ExprKind::Cast: return std::string("(") + cuda_scalar_name(e->type) + ")" + host_expr_string(e->args[0]);
        case ExprKind::Call: {
            std::string s = e->name + "(";
            for (size_t k = 0; k < e->args.size(); ++k)
                s += (k ? ", " : "") + strip_parens(host_expr_string(e->args[k]));
            return s + ")";
        }
        default: return "<device " + std::to_string(static_cast<int>(e->kind)) + ">";
    }
}

namespace {

// eval_host's nodes only: a device node has no meaning on the host.
void require_host_expr(const ExprPtr& e) {
    const bool host = e->kind == ExprKind::Const || e->kind == ExprKind::Param || e->kind == ExprKind::Unary ||
                      e->kind == ExprKind::Binary || e->kind == ExprKind::Select || e->kind == ExprKind::Cast ||
                      (e->kind == ExprKind::Call && (e->name == "min" || e->name == "max"));
    SHOAL_INTERNAL_ASSERT(host, "host expression: device-only node " + host_expr_string(e));
    for (const auto& a : e->args) require_host_expr(a);
}

}  // namespace

std::string host_expr_cpp(const ExprPtr& e) {
    require_host_expr(e);
    return print_host_cpp(e);
}

namespace {

std::string buffers_with_access(const Kernel& k, bool written) {
    std::string s;
    for (const auto& p : k.params) {
        if (p.kind != ParamKind::Buffer) continue;
        bool w = p.access != Access::Read, r = p.access != Access::Write;
        if (written ? w : r) s += (s.empty() ? "" : ", ") + p.name;
    }
    return s.empty() ? "-" : s;
}

// "const float x[len_x]": a buffer as a parameter or an allocation.
std::string buffer_decl(const PlanBuffer& b) {
    return std::string(b.role == BufferRole::Input ? "const " : "") + cuda_scalar_name(b.elem) + " " + b.name + "[" +
           (b.count ? strip_parens(host_expr_string(b.count)) : "") + "]";
}

// plan saxpy(float c0, long long len_x, const float x[len_x], ...) -> float out[len_x]
std::string signature(const LaunchPlan& plan) {
    std::string s = "launch plan " + plan.name + "(";
    std::string sep;
    for (const std::string& n : plan.entry.scalars) {
        s += sep + cuda_scalar_name(plan.find_scalar(n)->type) + " " + n;
        sep = ", ";
    }
    for (const std::string& n : plan.entry.inputs) {
        s += sep + buffer_decl(*plan.find_buffer(n));
        sep = ", ";
    }
    s += ")";
    sep = " -> ";
    for (const std::string& n : plan.entry.outputs) {
        s += sep + buffer_decl(*plan.find_buffer(n));
        sep = ", ";
    }
    return s;
}

void print_step(std::ostringstream& os, const LaunchPlan& plan, const PlanStep& s, int number) {
    os << "  " << number << ". ";
    switch (s.kind) {
        case StepKind::Compute: {
            const PlanScalar* v = plan.find_scalar(s.scalar);
            os << cuda_scalar_name(v->type) << " " << s.scalar << " = " << strip_parens(host_expr_string(v->value));
            break;
        }
        case StepKind::Alloc: {
            const PlanBuffer* b = plan.find_buffer(s.buffer);
            os << "alloc " << buffer_decl(*b) << (b->role == BufferRole::Output ? "   // result" : "");
            break;
        }
        case StepKind::Launch: {
            const Kernel& k = plan.kernels[static_cast<size_t>(s.kernel)];
            os << "launch " << k.name << "<<<" << strip_parens(host_expr_string(s.grid)) << ", " << k.block_size
               << ">>>";
            if (!s.comment.empty()) os << "   // " << s.comment;
            os << "\n       shared " << shared_bytes(k) << " B";
            for (const auto& a : k.shared) os << (&a == &k.shared.front() ? " (" : ", ") << a.name << "[" << a.size << "]";
            if (!k.shared.empty()) os << ")";
            os << "; reads " << buffers_with_access(k, false) << "; writes " << buffers_with_access(k, true);
            break;
        }
        case StepKind::Check:
            os << "check the error record of " << plan.kernels[static_cast<size_t>(s.kernel)].name;
            break;
        case StepKind::Call: {
            if (s.grid) os << "if (" << strip_parens(host_expr_string(s.grid)) << ") ";
            os << "call " << s.call.function << "(";
            std::string sep;
            for (const ExprPtr& a : s.call.args) {
                os << sep << strip_parens(host_expr_string(a));
                sep = ", ";
            }
            for (const std::string& b : s.call.reads) os << sep << b, sep = ", ";
            for (const std::string& b : s.call.writes) os << sep << "&" << b, sep = ", ";
            os << ")";
            if (!s.comment.empty()) os << "   // " << s.comment;
            break;
        }
        case StepKind::ReadBack:
            os << "read back " << s.scalar << " = " << s.buffer << "[" << strip_parens(host_expr_string(s.index)) << "]";
            if (!s.comment.empty()) os << "   // " << s.comment;
            break;
        case StepKind::Free: os << "free " << s.buffer; break;
    }
    os << "\n";
}

}  // namespace

std::string to_string(const LaunchPlan& plan) {
    std::ostringstream os;
    os << signature(plan) << "\n";
    int number = 1;
    for (const auto& s : plan.steps) print_step(os, plan, s, number++);
    return os.str();
}

}  // namespace shoal::ir
