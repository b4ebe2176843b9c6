// Printing an `:emit` unit (emit_program.h): the header with one documented
// declaration per function, and the .cu with Shoal's helpers, the kernels
// (each once, in the unit's namespace) and the wrappers, which walk the
// traced plans' host programs on the caller's stream.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "codegen/cuda_printer.h"
#include "codegen/emit_program.h"
#include "lang/diagnostics.h"

namespace shoal::emit {

using ir::ExprPtr;

namespace {

// Kernels with C++ linkage: they live in the unit's namespace, so two
// emitted units never clash at link time.
class EmitCudaPrinter final : public ir::CudaPrinter {
public:
    EmitCudaPrinter() {
        kernel_linkage_ = "";
        polls_cancel_ = false;
    }
};

std::string cpp_type(Prim p) { return ir::cuda_scalar_name(ir::scalar_of(p)); }

std::string view_type(Prim p, int rank, bool constant) {
    return "shoal::view<" + std::string(constant ? "const " : "") + cpp_type(p) +
           (rank > 1 ? ", " + std::to_string(rank) : "") + ">";
}

std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out + "\"";
}

std::string cpp(const ExprPtr& e) { return ir::print_host_cpp(e); }

// The helpers of the kernel printer that host code may call too (integer
// arithmetic, division by zero, float -> integer) are marked __host__ as
// well: the wrappers compute sizes and scalar results with them.
std::string host_device_prelude() {
    static const char* const host_safe[] = {"shoal_add", "shoal_sub", "shoal_mul", "shoal_neg", "shoal_shl",
                                            "shoal_div", "shoal_mod", "shoal_abs", "shoal_saturate", "shoal_to_"};
    std::istringstream in(ir::cuda_full_prelude());
    std::string out, line;
    const std::string device = "__device__ __forceinline__ ";
    while (std::getline(in, line)) {
        if (line.rfind(device, 0) == 0)
            for (const char* name : host_safe)
                if (line.find(std::string(" ") + name) != std::string::npos) {
                    line = "__host__ " + line;
                    break;
                }
        out += line + "\n";
    }
    return out;
}

// Kernels shared by several plans or functions are printed once: two
// kernels with the same text but for their name are one.
class KernelTable {
public:
    std::string add(const ir::Kernel& k) {
        ir::Kernel anonymous = k;
        anonymous.name = "kernel";
        anonymous.comment.clear();
        const std::string key = ir::print_cuda({anonymous});
        if (auto it = by_text_.find(key); it != by_text_.end()) return it->second;
        std::string name = k.name;
        for (int n = 1; used_.count(name); ++n) name = k.name + "_" + std::to_string(n);
        used_.insert(name);
        ir::Kernel named = k;
        named.name = name;
        kernels_.push_back(named);
        by_text_[key] = name;
        return name;
    }
    const std::vector<ir::Kernel>& kernels() const { return kernels_; }

private:
    std::map<std::string, std::string> by_text_;
    std::set<std::string> used_;
    std::vector<ir::Kernel> kernels_;
};

class WrapperPrinter {
public:
    WrapperPrinter(const TracedFunction& f, KernelTable& kernels)
        : f_(f), kernels_(kernels), temporaries_(find_temporaries()) {
        for (const Temporary& t : temporaries_) {
            if (!t.sized_by_data) params_in(t.count, workspace_inputs_);
            if (t.sized_by_data) sized_by_data_.insert({t.plan, t.buffer});
        }
    }

    // In the header, the workspace defaults to none.
    std::string declaration(bool in_header) const {
        std::vector<std::string> params = input_params({});
        for (const EmitResult& r : f_.results) {
            if (r.rank == 0)
                params.push_back(cpp_type(r.elem) + "* " + r.name);
            else if (r.owned)
                params.push_back("shoal::device_array<" + cpp_type(r.elem) + ">& " + r.name);
            else
                params.push_back(view_type(r.elem, r.rank, false) + " " + r.name);
        }
        params.push_back("cudaStream_t stream");
        params.push_back(std::string("shoal::workspace workspace") + (in_header ? " = {}" : ""));
        return "shoal::status " + f_.request.cpp_name + "(" + joined(params) + ")";
    }

    // The workspace query: the bytes of the temporaries whose size the
    // arguments fix, summed in the order the wrapper carves them.
    std::string workspace_query_declaration() const {
        return "size_t " + f_.request.cpp_name + kWorkspaceQuery + "(" + joined(input_params(workspace_inputs_)) + ")";
    }
    std::string workspace_query_documentation() const {
        bool by_data = false;
        for (const Temporary& t : temporaries_) by_data |= t.sized_by_data;
        return "// " + f_.request.cpp_name + kWorkspaceQuery + ": the device memory " + f_.request.cpp_name +
               "'s temporaries take, for a\n// workspace lent to it (0: it needs none)" +
               (by_data ? "; those sized by the data are allocated on\n// the stream all the same" : "") + ".\n";
    }
    std::string workspace_query() const {
        std::string s = workspace_query_declaration() + " {\n";
        for (const EmitParam& p : f_.params)
            for (size_t d = 0; d < p.extents.size(); ++d)
                if (workspace_inputs_.count(p.extents[d]))
                    s += "    const long long " + p.extents[d] + " = " + p.name + ".extent[" + std::to_string(d) + "];\n";
        s += "    size_t bytes = 0;\n";
        for (const Temporary& t : temporaries_)
            if (!t.sized_by_data)
                s += "    bytes += shoal::detail::workspace_share<" + t.type + ">(" + cpp(t.count) + ");  // " + t.what + "\n";
        return s + "    return bytes;\n}\n";
    }

    // What the header says about each parameter and result.
    std::string documentation() const {
        std::string s = "// " + f_.request.cpp_name +
                        (f_.request.cpp_name != f_.request.name ? " (Shoal: " + f_.request.name + ")" : "") + " : " +
                        type_to_string(f_.request.type) + "\n";
        for (const EmitParam& p : f_.params) {
            if (p.rank == 0) {
                s += "//   " + p.name + ": a " + cpp_type(p.elem) + "\n";
                continue;
            }
            s += "//   " + p.name + ": device memory, ";
            for (size_t d = 0; d < p.extents.size(); ++d) s += (d ? " x " : "") + p.extents[d];
            s += p.rank == 1 ? " elements" : "";
            for (const EmitConstraint& c : f_.constraints)
                if (std::find(p.extents.begin(), p.extents.end(), c.extent) != p.extents.end())
                    s += "; " + c.extent + " must equal " + ir::host_expr_string(c.equals);
            s += "\n";
        }
        for (const EmitResult& r : f_.results) {
            s += "//   " + r.name + ": ";
            if (r.rank == 0) {
                s += "the " + cpp_type(r.elem) + " result, written on the host" +
                     (f_.host_reads.empty() ? "" : " once the device has computed it (the call waits for `stream`)") +
                     "\n";
                continue;
            }
            std::string extents;
            for (size_t d = 0; d < r.extents.size(); ++d) extents += (d ? " x " : "") + ir::host_expr_string(r.extents[d]);
            s += r.owned ? "allocated by the call on `stream` (" + extents + " elements; the size depends on the data, "
                           "so the call waits for `stream` to read it)\n"
                         : "device memory of " + extents + " elements, written by the call\n";
        }
        s += "//   stream: every copy and kernel is queued on it";
        s += f_.checks || !f_.host_reads.empty() || has_read_backs() ? "; the call waits for it before returning\n"
                                                                     : "; the call does not wait for it\n";
        s += "//   workspace: optional device memory for its temporaries (" + f_.request.cpp_name + kWorkspaceQuery +
             "); without one it allocates them on `stream`\n";
        return s;
    }

    std::string definition() {
        out_.str("");
        out_ << "// " << f_.request.cpp_name << ": " << f_.plans.size() << (f_.plans.size() == 1 ? " plan" : " plans")
             << " traced from the Shoal function '" << f_.request.name << "'.\n";
        out_ << declaration(false) << " {\n";
        indent_ = 1;
        for (const EmitParam& p : f_.params)
            for (size_t d = 0; d < p.extents.size(); ++d)
                line("const long long " + p.extents[d] + " = " + p.name + ".extent[" + std::to_string(d) + "];");
        for (const EmitConstraint& c : f_.constraints)
            line("if (" + c.extent + " != " + cpp(c.equals) + ") return shoal::detail::shape_mismatch(" +
                 quoted(f_.request.cpp_name + ": " + c.extent + " must equal " + ir::host_expr_string(c.equals) + " (" + c.where + ")") +
                 ", " + c.extent + ", " + cpp(c.equals) + ");");
        for (const EmitResult& r : f_.results)
            if (r.rank > 0 && !r.owned)
                for (size_t d = 0; d < r.extents.size(); ++d)
                    line("if (" + r.name + ".extent[" + std::to_string(d) + "] != " + cpp(r.extents[d]) +
                         ") return shoal::detail::shape_mismatch(" +
                         quoted(f_.request.cpp_name + ": " + r.name + " must have " + ir::host_expr_string(r.extents[d]) +
                                (r.rank > 1 ? " elements along axis " + std::to_string(d) : " elements")) +
                         ", " + r.name + ".extent[" + std::to_string(d) + "], " + cpp(r.extents[d]) + ");");
        line("// What the call allocates is freed on every return path (stream-ordered).");
        line("shoal::detail::allocations memory(stream);");
        std::vector<std::string> args;
        for (const EmitParam& p : f_.params) args.push_back(p.name);
        line("if (workspace.data) SHOAL_TRY(memory.lend(workspace, " + f_.request.cpp_name + kWorkspaceQuery + "(" +
             joined(args) + "), " + quoted(f_.request.cpp_name) + "));");
        if (checked_launches() > 0) {
            line("// One error record per launch of a kernel that checks indices.");
            line("shoal::detail::error_record* errors = nullptr;");
            line("SHOAL_TRY(memory.allocate(&errors, " + std::to_string(checked_launches()) + "));");
            line("SHOAL_TRY(shoal::detail::reset_errors(errors, " + std::to_string(checked_launches()) + ", stream));");
        }
        declare_escaping();
        for (size_t k = 0; k < f_.plans.size(); ++k) {
            print_plan(static_cast<int>(k));
            for (const HostRead& h : f_.host_reads)
                if (h.plan == static_cast<int>(k)) {
                    line(std::string(ir::cuda_scalar_name(h.type)) + " " + h.variable + ";");
                    line("SHOAL_TRY(shoal::detail::read_back(&" + h.variable + ", " + buffer_var(h.plan, h.buffer) +
                         ", stream));");
                }
        }
        for (const EmitResult& r : f_.results) {
            if (r.rank == 0) {
                line("*" + r.name + " = " + cpp(r.value) + ";");
            } else if (!r.copy_of.empty()) {
                const std::string src = is_param(r.copy_of) ? r.copy_of + ".data" : result_pointer(r.copy_of);
                line("SHOAL_TRY(shoal::detail::copy(" + result_pointer(r.name) + ", " + src + ", " + count_of(r) + ", stream));");
            }
        }
        if (checked_launches() > 0) {
            std::string tables;
            for (const auto& [launch, kernel] : checked_)
                tables += std::string(tables.empty() ? "" : ", ") + kernel + "_checks";
            line("static const char* const* const check_messages[] = {" + tables + "};");
            line("return shoal::detail::kernel_errors(errors, " + std::to_string(checked_launches()) +
                 ", check_messages, stream);");
        } else {
            line("return shoal::status{};");
        }
        out_ << "}\n";
        return check_tables_ + out_.str();
    }

private:
    // A buffer the call allocates for itself (not a result), in order.
    struct Temporary {
        int plan;             // -1: the index checks' error records
        std::string buffer;   // the plan's name for it
        std::string type;     // its element's C++ type
        ExprPtr count;        // elements, in the wrapper's terms
        bool sized_by_data;   // the count reads a value read back from the device
        std::string what;     // for the workspace query's comment
    };
    std::vector<Temporary> find_temporaries() const {
        std::set<std::string> read_vars;
        for (const RecordedPlan& p : f_.plans)
            for (const auto& [scalar, var] : p.read_backs) read_vars.insert(var);
        for (const HostRead& h : f_.host_reads) read_vars.insert(h.variable);
        std::vector<Temporary> t;
        if (const int n = checked_launches(); n > 0)
            t.push_back({-1, "", "shoal::detail::error_record", ir::const_int(n), false, "the index checks' error records"});
        for (size_t k = 0; k < f_.plans.size(); ++k) {
            const RecordedPlan& r = f_.plans[k];
            const std::map<std::string, ExprPtr> formulas = plan_formulas(r);
            for (const ir::PlanStep& step : r.plan->steps) {
                if (step.kind != ir::StepKind::Alloc || result_of(static_cast<int>(k), step.buffer)) continue;
                const ir::PlanBuffer* b = r.plan->find_buffer(step.buffer);
                const ExprPtr count = substitute_params(b->count, formulas);
                t.push_back({static_cast<int>(k), b->name, ir::cuda_scalar_name(b->elem), count,
                             reads_back(count, read_vars),
                             "plan " + std::to_string(k + 1) + ": " + r.shown_buffer(b->name)});
            }
        }
        return t;
    }
    static void params_in(const ExprPtr& e, std::set<std::string>& names) {
        if (!e) return;
        if (e->kind == ir::ExprKind::Param) names.insert(e->name);
        for (const ExprPtr& a : e->args) params_in(a, names);
    }
    // The function's inputs as C++ parameters; with `used` given, a
    // parameter none of whose values it holds is left unnamed.
    std::vector<std::string> input_params(const std::optional<std::set<std::string>>& used) const {
        std::vector<std::string> params;
        for (const EmitParam& p : f_.params) {
            bool named = !used || used->count(p.name);
            for (const std::string& e : p.extents) named |= used && used->count(e);
            const std::string name = named ? p.name : "/*" + p.name + "*/";
            params.push_back((p.rank == 0 ? cpp_type(p.elem) : view_type(p.elem, p.rank, true)) + " " + name);
        }
        return params;
    }
    static std::string joined(const std::vector<std::string>& items) {
        std::string s;
        for (size_t k = 0; k < items.size(); ++k) s += (k ? ", " : "") + items[k];
        return s;
    }

    bool has_read_backs() const {
        for (const RecordedPlan& p : f_.plans)
            if (!p.read_backs.empty()) return true;
        return false;
    }
    bool is_param(const std::string& n) const {
        for (const EmitParam& p : f_.params)
            if (p.name == n) return true;
        return false;
    }

    int checked_launches() const {
        int n = 0;
        for (const RecordedPlan& p : f_.plans)
            for (const ir::PlanStep& s : p.plan->steps)
                if (s.kind == ir::StepKind::Launch && !p.plan->kernels[static_cast<size_t>(s.kernel)].checks.empty()) ++n;
        return n;
    }

    std::string count_of(const EmitResult& r) const {
        std::string s;
        for (size_t d = 0; d < r.extents.size(); ++d) s += (d ? " * " : "") + cpp(r.extents[d]);
        return s;
    }

    const EmitResult* result_of(int plan, const std::string& buffer) const {
        for (const EmitResult& r : f_.results)
            if (r.plan == plan && r.buffer == buffer) return &r;
        return nullptr;
    }

    std::string result_pointer(const std::string& name) const {
        for (const EmitResult& r : f_.results)
            if (r.name == name) return r.owned ? name + ".data()" : name + ".data";
        return name;
    }

    // Buffers and scalars one plan makes and a later one (or the host) uses
    // live at the function's scope, named <plan>_<buffer>.
    void declare_escaping() {
        std::set<std::pair<int, std::string>> used_later;
        for (size_t k = 0; k < f_.plans.size(); ++k)
            for (const auto& [buffer, traced] : f_.plans[k].inputs)
                if (traced->plan >= 0) used_later.insert({traced->plan, traced->buffer});
        for (const HostRead& h : f_.host_reads) used_later.insert({h.plan, h.buffer});
        for (const auto& [plan, buffer] : used_later) {
            if (result_of(plan, buffer)) continue;  // the caller's memory
            const RecordedPlan& p = f_.plans.at(static_cast<size_t>(plan));
            const std::string var = unique(p.shown.name + std::to_string(plan + 1) + "_" + p.shown_buffer(buffer));
            escaping_[{plan, buffer}] = var;
            line(std::string(ir::cuda_scalar_name(p.plan->find_buffer(buffer)->elem)) + "* " + var + " = nullptr;");
        }
        for (const RecordedPlan& p : f_.plans)
            for (const auto& [scalar, var] : p.read_backs) {
                taken_.insert(var);
                line(std::string(ir::cuda_scalar_name(p.plan->find_scalar(scalar)->type)) + " " + var + " = 0;");
            }
    }

    std::string buffer_var(int plan, const std::string& buffer) const {
        if (const EmitResult* r = result_of(plan, buffer)) return result_pointer(r->name);
        return escaping_.at({plan, buffer});
    }


    std::string unique(const std::string& wanted) {
        std::string name = wanted;
        for (int n = 1; taken_.count(name) || wrapper_names().count(name); ++n) name = wanted + "_" + std::to_string(n);
        taken_.insert(name);
        return name;
    }

    const std::set<std::string>& wrapper_names() {
        if (wrapper_names_.empty()) {
            wrapper_names_ = {"stream", "memory", "errors", "check_messages"};
            for (const EmitParam& p : f_.params) {
                wrapper_names_.insert(p.name);
                wrapper_names_.insert(p.extents.begin(), p.extents.end());
            }
            for (const EmitResult& r : f_.results) wrapper_names_.insert(r.name);
            for (const HostRead& h : f_.host_reads) wrapper_names_.insert(h.variable);
        }
        return wrapper_names_;
    }

    void print_plan(int index) {
        const RecordedPlan& r = f_.plans.at(static_cast<size_t>(index));
        const ir::LaunchPlan& plan = *r.plan;
        std::string source;
        for (const ir::Kernel& k : r.shown.kernels)
            if (!k.comment.empty()) source = k.comment;
        line("");
        line("// Plan " + std::to_string(index + 1) + " of " + std::to_string(f_.plans.size()) + ": " + r.shown.name +
             (source.empty() ? "" : " (" + source + ")"));
        line("{");
        ++indent_;
        // Names inside the block: the shown plan's, unless the function's
        // scope already uses them.
        std::set<std::string> saved_taken = taken_;
        values_.clear();
        buffers_.clear();
        for (const auto& [buffer, traced] : r.inputs)
            buffers_[buffer] = traced->plan >= 0 ? buffer_var(traced->plan, traced->buffer) : traced->param + ".data";
        for (const auto& [scalar, var] : r.read_backs) values_[scalar] = ir::param(var, plan.find_scalar(scalar)->type);
        for (const ir::PlanScalar& s : plan.scalars) {
            if (s.source != ir::ScalarSource::Input) continue;
            const ExprPtr& f = r.scalars.at(s.name);
            // A wrapper variable of the scalar's type or a constant is used
            // as it is; anything else gets a variable of its own.
            if ((f->kind == ir::ExprKind::Param && f->type == s.type) || f->kind == ir::ExprKind::Const) {
                values_[s.name] = f;
                continue;
            }
            declare(s.type, unique(r.shown_scalar(s.name)), f, s.name);
        }
        for (const ir::PlanStep& step : plan.steps) {
            switch (step.kind) {
                case ir::StepKind::Compute: {
                    const ir::PlanScalar* s = plan.find_scalar(step.scalar);
                    declare(s->type, unique(r.shown_scalar(step.scalar)), s->value, step.scalar);
                    break;
                }
                case ir::StepKind::Alloc: {
                    const ir::PlanBuffer* b = plan.find_buffer(step.buffer);
                    const std::string count = expr(b->count);
                    if (const EmitResult* res = result_of(index, b->name)) {
                        if (res->owned) line("SHOAL_TRY(" + res->name + ".allocate(" + count + ", stream));");
                        buffers_[b->name] = result_pointer(res->name);
                        break;
                    }
                    if (auto esc = escaping_.find({index, b->name}); esc != escaping_.end()) {
                        buffers_[b->name] = esc->second;
                    } else {
                        buffers_[b->name] = unique(r.shown_buffer(b->name));
                        line(std::string(ir::cuda_scalar_name(b->elem)) + "* " + buffers_[b->name] + " = nullptr;");
                    }
                    if (sized_by_data_.count({index, b->name})) {
                        line("// its size depends on the data: allocated on the stream, not in the workspace");
                        line("SHOAL_TRY(memory.allocate_on_stream(&" + buffers_[b->name] + ", " + count + "));");
                    } else {
                        line("SHOAL_TRY(memory.allocate(&" + buffers_[b->name] + ", " + count + "));");
                    }
                    break;
                }
                case ir::StepKind::Launch: print_launch(r, step); break;
                case ir::StepKind::Check: break;  // the records are read once, at the end
                case ir::StepKind::ReadBack:
                    line("SHOAL_TRY(shoal::detail::read_back(&" + r.read_backs.at(step.scalar) + ", " +
                         buffers_.at(step.buffer) + " + " + expr(step.index) + ", stream));");
                    break;
                case ir::StepKind::Free: line("SHOAL_TRY(memory.release(" + buffers_.at(step.buffer) + "));"); break;
                case ir::StepKind::Call:
                    // `:emit` lowers products as generated kernels (engine.cpp, docs/emit.md).
                    internal_error(__FILE__, __LINE__, "emit: a library call in a traced plan");
            }
        }
        --indent_;
        line("}");
        taken_ = saved_taken;
    }

    // A host expression of the plan being printed, as C++ over the wrapper's variables.
    std::string expr(const ExprPtr& e) const { return cpp(substitute_params(e, values_)); }

    // `const T var = value;` for the plan scalar `scalar`.
    void declare(ir::ScalarType type, const std::string& var, const ExprPtr& value, const std::string& scalar) {
        line("const " + std::string(ir::cuda_scalar_name(type)) + " " + var + " = " + expr(value) + ";");
        values_[scalar] = ir::param(var, type);
    }

    void print_launch(const RecordedPlan& r, const ir::PlanStep& step) {
        const ir::Kernel& k = r.shown.kernels.at(static_cast<size_t>(step.kernel));
        const ir::Kernel& raw = r.plan->kernels.at(static_cast<size_t>(step.kernel));
        const std::string name = kernels_.add(k);
        std::vector<std::string> args;
        for (const ir::Param& p : raw.params)
            args.push_back(p.kind == ir::ParamKind::Scalar ? expr(ir::param(p.name, p.type)) : buffers_.at(p.name));
        if (!raw.checks.empty()) {
            const int launch = static_cast<int>(checked_.size());
            args.push_back("reinterpret_cast<ShoalError*>(errors + " + std::to_string(launch) + ")");
            if (!tabled_.count(name)) {
                tabled_.insert(name);
                std::string table = "static const char* const " + name + "_checks[] = {";
                for (size_t c = 0; c < raw.checks.size(); ++c)
                    table += (c ? ", " : "") +
                             quoted(raw.checks[c].message + "  (" + ir::source_comment(raw.checks[c].loc) + ")");
                check_tables_ += table + "};\n";
            }
            checked_.emplace_back(launch, name);
        }
        const std::string grid = expr(step.grid);
        if (!step.comment.empty()) line("// " + step.comment);
        std::string call = "kernels::" + name + "<<<static_cast<unsigned>(" + grid + "), " + std::to_string(k.block_size) +
                           ", 0, stream>>>(" + joined(args) + ");";
        const bool constant_grid = step.grid->kind == ir::ExprKind::Const && step.grid->i > 0;
        if (!constant_grid) {
            line("if (" + grid + " > 0) {");
            ++indent_;
        }
        line(call);
        line("SHOAL_TRY(shoal::detail::launched(" + quoted(name) + ", stream));");
        if (!constant_grid) {
            --indent_;
            line("}");
        }
    }

    void line(const std::string& text) {
        if (text.empty()) {
            out_ << "\n";
            return;
        }
        out_ << std::string(4 * static_cast<size_t>(indent_), ' ') << text << "\n";
    }

    const TracedFunction& f_;
    KernelTable& kernels_;
    std::ostringstream out_;
    int indent_ = 0;
    std::map<std::pair<int, std::string>, std::string> escaping_;
    std::set<std::string> taken_;
    std::set<std::string> wrapper_names_;
    std::vector<std::pair<int, std::string>> checked_;  // (launch, kernel) per checked launch, in order
    std::set<std::string> tabled_;
    std::string check_tables_;
    // The plan being printed: its scalars as expressions over the wrapper's
    // variables, its buffers as C++ pointers.
    std::map<std::string, ExprPtr> values_;
    std::map<std::string, std::string> buffers_;
    std::set<std::pair<int, std::string>> sized_by_data_;  // temporaries allocated on the stream even with a workspace
    std::vector<Temporary> temporaries_;
    std::set<std::string> workspace_inputs_;  // the wrapper variables the workspace query reads
};

std::string banner(const EmitRequest& request, const std::string& file, const std::vector<TracedFunction>& functions) {
    std::string s = "// " + file + ": generated by Shoal " + request.version + " with `" + request.command + "`.\n" +
                    "// Emit again instead of editing it (docs/emit.md).\n//\n// From the Shoal source:\n";
    for (const TracedFunction& f : functions) {
        std::istringstream in(f.request.source);
        std::string l;
        while (std::getline(in, l)) s += "//   " + l + "\n";
    }
    return s;
}

}  // namespace

EmitTexts print_unit(const EmitRequest& request, const std::vector<TracedFunction>& functions) {
    KernelTable kernels;
    std::vector<std::string> wrappers, declarations;
    for (const TracedFunction& f : functions) {
        WrapperPrinter w(f, kernels);
        wrappers.push_back(w.workspace_query() + "\n" + w.definition());
        declarations.push_back(w.documentation() + w.declaration(true) + ";\n" + w.workspace_query_documentation() +
                               w.workspace_query_declaration() + ";\n");
    }
    EmitTexts t;
    t.header = banner(request, request.unit + ".h", functions) + "#pragma once\n\n#include \"shoal_runtime.h\"\n\nnamespace " +
               request.unit + " {\n\n";
    for (size_t k = 0; k < declarations.size(); ++k) t.header += (k ? "\n" : "") + declarations[k];
    t.header += "\n}  // namespace " + request.unit + "\n";

    EmitCudaPrinter printer;
    const ir::CudaUnit unit = printer.print_unit(kernels.kernels());
    // The helpers and kernels live in NAME::kernels: apart from the
    // wrappers of the same name, and from every other emitted unit.
    // nvcc fuses a * b + c into one rounding by default; Shoal's results round twice.
    t.source = banner(request, request.unit + ".cu", functions) +
               "// Compile with nvcc --fmad=false for the REPL's results bit for bit.\n" + "#include \"" + request.unit +
               ".h\"\n\n#include <algorithm>\n\nnamespace " + request.unit + " {\nnamespace kernels {\n\n" +
               "// Shoal's helper functions (its scalar semantics: wrapping integers, division by zero, conversions).\n" +
               host_device_prelude() + "\n// The kernels (" + std::to_string(kernels.kernels().size()) + ").\n" +
               unit.kernels + "\n}  // namespace kernels\n\nusing namespace kernels;\n";
    for (const std::string& w : wrappers) t.source += "\n" + w;
    t.source += "\n}  // namespace " + request.unit + "\n";
    t.kernels = kernels.kernels();
    return t;
}

}  // namespace shoal::emit
