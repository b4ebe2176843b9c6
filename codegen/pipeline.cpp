#include "codegen/pipeline.h"

#include "codegen/launch_plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "codegen/cse.h"
#include "codegen/dead_code.h"
#include "codegen/simplify.h"
#include "lang/diagnostics.h"

namespace shoal::ir {
namespace {

Kernel verified(const Kernel& k) {
    verify(k);
    return k;
}

// Read on every call, so that a test (or a debugger) can switch it on at run time.
bool dump_requested() {
    const char* v = std::getenv("SHOAL_DUMP_IR");
    return v && *v && std::strcmp(v, "0") != 0;
}

}  // namespace

const std::vector<KernelPass>& kernel_passes() {
    static const std::vector<KernelPass> passes = {
        {"verify", verified},
        {"simplify", simplify},
        {"cse", eliminate_common_subexpressions},
        {"simplify", simplify},  // CSE makes equal values one variable: x - x, x == x
        {"dead_code", eliminate_dead_code},
        {"verify", verified},
    };
    return passes;
}

PassOptions& PassOptions::disable(const std::string& pass) {
    const auto& all = kernel_passes();
    const bool known = std::any_of(all.begin(), all.end(), [&](const KernelPass& p) { return pass == p.name; });
    SHOAL_INTERNAL_ASSERT(known && pass != "verify", "no optimisation pass named '" + pass + "'");
    disabled.insert(pass);
    return *this;
}

std::string PassOptions::key() const {
    std::string k = "passes";
    for (const std::string& p : disabled) k += " -" + p;
    return k;
}

Kernel optimize_kernel(const Kernel& k, const PassOptions& options) {
    const bool dump = dump_requested();
    Kernel current = k;
    for (const KernelPass& pass : kernel_passes()) {
        if (!options.enabled(pass.name)) continue;
        current = pass.run(current);
        if (dump) std::cerr << "// SHOAL_DUMP_IR " << current.name << " after " << pass.name << "\n" << to_string(current);
    }
    return current;
}

void optimize(LaunchPlan& plan, const PassOptions& options) {
    verify_host_program(plan);  // once per plan: the plan cache calls this on a miss only
    for (Kernel& k : plan.kernels) k = optimize_kernel(k, options);
}

}  // namespace shoal::ir
