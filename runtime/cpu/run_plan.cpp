#include "lang/scalar_semantics.h"
#include "runtime/cpu/run_plan.h"

#include "runtime/cpu/blas.h"
#include "runtime/cpu/native_tier.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <utility>

namespace shoal::cpu {

namespace {

// The state of one plan execution: the host program's scalars, the memory
// of every buffer and each kernel's error record since its last launch.
class PlanRun {
public:
    PlanRun(const ir::LaunchPlan& plan, const PlanArgs& args, const ExecOptions& options)
        : plan_(plan), args_(args), options_(options), native_(args.native) {
        result_.kernel_counters.resize(plan.kernels.size());
        errors_.resize(plan.kernels.size());
        result_.scalars = args.scalars;
    }

    // The host program, step by step (launch_plan.h): nothing is allocated
    // or computed but by its step.
    PlanResult run() {
        for (const auto& s : plan_.steps) {
            switch (s.kind) {
                case ir::StepKind::Compute: compute(s); break;
                case ir::StepKind::Alloc: allocate(s.buffer); break;
                case ir::StepKind::Launch: launch(s); break;
                case ir::StepKind::Check: check(s); break;
                case ir::StepKind::ReadBack: read_back(s); break;
                case ir::StepKind::Call: call(s); break;
                case ir::StepKind::Free:
                    bound_.erase(s.buffer);
                    owned_.erase(s.buffer);  // back to the recycling allocator
                    break;
            }
        }
        for (const std::string& name : plan_.entry.outputs)
            if (auto it = owned_.find(name); it != owned_.end()) result_.outputs[name] = std::move(it->second);
        return std::move(result_);
    }

private:
    ir::HostValue scalar(const std::string& name) const {
        auto it = result_.scalars.find(name);
        SHOAL_INTERNAL_ASSERT(it != result_.scalars.end(), "run_plan: scalar " + name + " used before its step");
        return it->second;
    }

    void compute(const ir::PlanStep& s) {
        const ir::PlanScalar* v = plan_.find_scalar(s.scalar);
        SHOAL_INTERNAL_ASSERT(v && v->source == ir::ScalarSource::Derived, "run_plan: cannot compute " + s.scalar);
        result_.scalars[s.scalar] = ir::eval_host(v->value, lookup_);
    }

    // Check mode fills new memory with 0xff bytes (see run_plan.h).
    void fill_for_check(void* data, size_t bytes) const {
        if (options_.check && bytes > 0) std::memset(data, 0xff, bytes);
    }

    void allocate(const std::string& name) {
        const ir::PlanBuffer* b = plan_.find_buffer(name);
        SHOAL_INTERNAL_ASSERT(b && b->role != ir::BufferRole::Input, "run_plan: cannot allocate " + name);
        const int64_t n = std::max<int64_t>(0, ir::eval_host_int(b->count, lookup_));
        BufferArg memory;
        if (auto it = args_.outputs.find(name); it != args_.outputs.end()) {  // caller memory, written in place
            SHOAL_INTERNAL_ASSERT(n <= it->second.elements, "run_plan: output " + name + " needs " + std::to_string(n) +
                                                                " elements, the caller gave " +
                                                                std::to_string(it->second.elements));
            memory = BufferArg{it->second.data, n};
        } else if (b->role == ir::BufferRole::Output && args_.allocate_output) {  // the caller's memory, sized now
            memory = args_.allocate_output(name, b->elem, n);
        } else {
            HostBuffer hb;
            hb.elem = b->elem;
            hb.count = n;
            hb.bytes = HostBytes(static_cast<size_t>(n) * ir::scalar_size(b->elem));
            memory = BufferArg{hb.bytes.data(), n};
            owned_[name] = std::move(hb);
        }
        fill_for_check(memory.data, static_cast<size_t>(n) * ir::scalar_size(b->elem));
        bound_[name] = memory;
    }

    BufferArg buffer(const std::string& name) const {
        if (auto it = bound_.find(name); it != bound_.end()) return it->second;
        auto it = args_.buffers.find(name);
        SHOAL_INTERNAL_ASSERT(it != args_.buffers.end(), "run_plan: buffer " + name + " used before its step");
        return it->second;
    }

    static ScalarArg to_arg(ir::ScalarType t, const ir::HostValue& v) {
        ScalarArg a;
        a.type = t;
        if (ir::is_float(t)) a.f = ir::is_float(v.type) ? v.f : static_cast<double>(v.i);
        else a.i = ir::is_float(v.type) ? scalar::saturate<int64_t>(v.f) : v.i;  // NaN, inf: no UB
        return a;
    }

    void launch(const ir::PlanStep& s) {
        const ir::Kernel& k = plan_.kernels[static_cast<size_t>(s.kernel)];
        const int64_t grid = ir::eval_host_int(s.grid, lookup_);
        if (grid <= 0) return;  // an empty launch: nothing to do (see launch_plan.h)
        // Each argument looked up once, by position: native code takes them
        // so (the interpreter's maps by name cost a small launch ~1 us).
        buffers_.assign(k.params.size(), BufferArg{});
        scalars_.assign(k.params.size(), ScalarArg{});
        for (size_t i = 0; i < k.params.size(); ++i) {
            const ir::Param& p = k.params[i];
            if (p.kind == ir::ParamKind::Scalar) scalars_[i] = to_arg(p.type, scalar(p.name));
            else buffers_[i] = buffer(p.name);
        }
        Counters c;
        const auto start = std::chrono::steady_clock::now();
        if (!native_ && args_.native_when_ready)
            native_ = args_.native_when_ready(std::chrono::duration<double>(start - started_).count());
        const auto index = static_cast<size_t>(s.kernel);
        KernelError err = native_ && native_->runs(index)
                              ? native_->launch(index, k, grid, buffers_, scalars_, options_, c)
                              : run_kernel(k, launch_args(k, grid, buffers_, scalars_), options_, c);
        c.nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
        result_.kernel_counters[static_cast<size_t>(s.kernel)] += c;
        result_.total += c;
        errors_[static_cast<size_t>(s.kernel)] = err;
    }

    void check(const ir::PlanStep& s) {
        const KernelError err = std::exchange(errors_[static_cast<size_t>(s.kernel)], KernelError{});
        if (err.code >= 0) ir::raise_failed_check(plan_.kernels[static_cast<size_t>(s.kernel)], err.code, err.index, err.extent);
    }

    // A library call (codegen/library_calls.h) on the host's BLAS / LAPACK.
    void call(const ir::PlanStep& s) {
        if (s.grid && ir::eval_host_int(s.grid, lookup_) == 0) return;
        const ir::ScalarType t = plan_.find_buffer(s.call.writes[0])->elem;
        const bool single = t == ir::ScalarType::F32;
        const auto start = std::chrono::steady_clock::now();
        ir::CallCounters c;
        if (s.call.function == "lu") {
            const ir::LuShape shape = ir::lu_shape(s.call, lookup_);
            lu(t, shape, buffer(s.call.writes[0]).data, static_cast<int32_t*>(buffer(s.call.writes[1]).data),
               buffer(s.call.writes[2]).data, static_cast<int32_t*>(buffer(s.call.writes[3]).data));
            c = ir::lu_counters(s, shape, t, single ? "OpenBLAS' LAPACK sgetrf + sgetrs" : "OpenBLAS' LAPACK dgetrf + dgetrs");
        } else if (s.call.function == "svd") {
            const ir::SvdShape shape = ir::svd_shape(s.call, lookup_);
            svd(t, shape, buffer(s.call.writes[0]).data, buffer(s.call.writes[1]).data, buffer(s.call.writes[2]).data,
                buffer(s.call.writes[3]).data, static_cast<int32_t*>(buffer(s.call.writes[4]).data));
            c = ir::svd_counters(s, shape, t, single ? "OpenBLAS' LAPACK sgesdd" : "OpenBLAS' LAPACK dgesdd");
        } else {
            SHOAL_INTERNAL_ASSERT(s.call.function == "gemm", "run_plan: no library function " + s.call.function);
            const ir::GemmShape g = ir::gemm_shape(s.call, lookup_);
            gemm(t, g, buffer(s.call.reads[0]).data, buffer(s.call.reads[1]).data, buffer(s.call.writes[0]).data);
            c = ir::gemm_counters(s, g, t, std::string("OpenBLAS ") + (single ? "sgemm" : "dgemm"));
        }
        c.nanoseconds = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
        result_.calls.push_back(std::move(c));
    }

    void read_back(const ir::PlanStep& s) {
        BufferArg b = buffer(s.buffer);
        const ir::PlanBuffer* pb = plan_.find_buffer(s.buffer);
        int64_t index = ir::eval_host_int(s.index, lookup_);
        SHOAL_INTERNAL_ASSERT(index >= 0 && index < b.elements,
                              "run_plan: read back " + s.buffer + "[" + std::to_string(index) + "] out of range");
        const auto* base = static_cast<const std::byte*>(b.data) + index * static_cast<int64_t>(ir::scalar_size(pb->elem));
        const ir::HostValue v = ir::load_element(pb->elem, base);
        result_.scalars[s.scalar] = v;
    }

    const ir::LaunchPlan& plan_;
    const PlanArgs& args_;
    const ExecOptions& options_;
    const NativePlan* native_;  // args_.native, or the native form switched to during the run
    const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    PlanResult result_;
    std::map<std::string, HostBuffer> owned_;   // allocated here (temporaries, outputs the caller did not bind)
    std::map<std::string, BufferArg> bound_;    // every allocated buffer's memory
    std::vector<KernelError> errors_;           // per kernel, since its last launch
    std::vector<BufferArg> buffers_;            // the launch being made's arguments, by parameter
    std::vector<ScalarArg> scalars_;
    std::function<ir::HostValue(const std::string&)> lookup_ = [this](const std::string& n) { return scalar(n); };
};

}  // namespace

PlanResult run_plan(const ir::LaunchPlan& plan, const PlanArgs& args, const ExecOptions& options) {
    return PlanRun(plan, args, options).run();
}

}  // namespace shoal::cpu
