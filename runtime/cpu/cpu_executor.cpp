#include "runtime/cpu/cpu_executor.h"

#include <thread>

#include "runtime/cpu/run_plan.h"

namespace shoal::cpu {

namespace {

BufferArg memory_of(const ArrayPtr& a) { return BufferArg{a->bytes.data(), a->size()}; }

class CpuExecutor final : public ir::PlanExecutor {
public:
    explicit CpuExecutor(std::string why_no_gpu) : why_no_gpu_(std::move(why_no_gpu)) {}
    std::string name() const override { return "cpu"; }
    std::string description() const override {
        const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
        return "the CPU executor (" + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") +
               (why_no_gpu_.empty() ? ")" : "; no GPU: " + why_no_gpu_ + ")");
    }

    std::string device_report() const override {
        return (why_no_gpu_.empty() ? std::string("no GPU") : "no GPU: " + why_no_gpu_) + "\nkernels run on " +
               description();
    }

    std::string memory_report(const std::map<const ir::DeviceArray*, std::string>&) const override {
        return "no device memory: arrays are in host memory (" + description() + ")";
    }

    ir::PlanOutcome run(const std::shared_ptr<const ir::LaunchPlan>& plan, const ir::PlanBindings& bindings,
                        const ir::RunOptions& options) override {
        PlanArgs args;
        args.scalars = bindings.scalars;
        // An array another executor left in device memory comes to the host
        // (after `:set executor cpu`); it keeps its device copy.
        std::vector<ArrayPtr> moved;
        for (const auto& [name, a] : bindings.inputs) {
            if (a.host) {
                args.buffers[name] = memory_of(a.host);
                continue;
            }
            const Prim p = ir::buffer_prim(a.device->elem());
            moved.push_back(ir::host_array(a, p, Shape{a.device->count()}));
            args.buffers[name] = memory_of(moved.back());
        }
        ir::PlanOutcome out;
        // Results are arrays from the start (no copy).
        args.allocate_output = [&out](const std::string& name, ir::ScalarType elem, int64_t count) {
            auto a = std::make_shared<Array>(ir::buffer_prim(elem), Shape{count}, Array::Uninitialised{});
            out.outputs[name] = ir::ArrayData{a, nullptr};
            return memory_of(a);
        };
        ExecOptions exec;
        exec.check = options.check;
        exec.cancel = options.cancel;
        PlanResult r = run_plan(*plan, args, exec);
        out.scalars = std::move(r.scalars);
        out.kernel_counters = std::move(r.kernel_counters);
        out.total = r.total;
        return out;
    }

private:
    std::string why_no_gpu_;
};

}  // namespace

std::shared_ptr<ir::PlanExecutor> make_cpu_executor(std::string why_no_gpu) {
    return std::make_shared<CpuExecutor>(std::move(why_no_gpu));
}

}  // namespace shoal::cpu
