#include "runtime/executors.h"

#include "codegen/compiled_backend.h"
#include "runtime/cpu/cpu_executor.h"

namespace shoal::runtime {

std::shared_ptr<ir::PlanExecutor> default_executor() { return cpu::make_cpu_executor(); }

void install_compiled_backend() {
    set_compiled_backend_factory([] { return compiled::make_compiled_backend(default_executor()); });
}

}  // namespace shoal::runtime
