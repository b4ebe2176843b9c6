// Prints the CUDA prelude exactly as the printer emits it, then the sample
// host expressions (tests/unit/host_expr_samples.h) as host_expr_cpp prints
// them, into the header that tests/unit/test_scalar_semantics.cpp compiles as
// host C++. Run by the build: print_host_prelude OUTPUT.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "codegen/cuda_printer.h"
#include "codegen/launch_plan.h"
#include "host_expr_samples.h"

int main(int argc, char** argv) {
    using namespace shoal;
    if (argc != 2) {
        std::cerr << "usage: print_host_prelude OUTPUT\n";
        return 2;
    }
    std::ostringstream out;
    out << "// Generated at build time by tests/tools/print_host_prelude.cpp: do not edit.\n\n"
        << ir::cuda_full_prelude()
        << "// The samples of tests/unit/host_expr_samples.h, as host_expr_cpp prints them:\n"
        << "// sample k reads a and b from the first two pointers and writes its result to the third.\n";
    const auto samples = host_expr_samples::samples();
    for (size_t k = 0; k < samples.size(); ++k) {
        const auto& s = samples[k];
        out << "// " << ir::host_expr_string(s.expr) << "\n"
            << "inline void host_sample_" << k << "(const void* pa, const void* pb, void* pr) {\n"
            << "    " << ir::cuda_scalar_name(s.operand) << " a, b;\n"
            << "    memcpy(&a, pa, sizeof a);\n"
            << "    memcpy(&b, pb, sizeof b);\n"
            << "    const " << ir::cuda_scalar_name(s.expr->type) << " r = " << ir::host_expr_cpp(s.expr) << ";\n"
            << "    memcpy(pr, &r, sizeof r);\n"
            << "}\n";
    }
    out << "inline void (*const host_samples[])(const void*, const void*, void*) = {\n";
    for (size_t k = 0; k < samples.size(); ++k) out << "    host_sample_" << k << ",\n";
    out << "};\n";

    const std::filesystem::path path = argv[1];
    std::filesystem::create_directories(path.parent_path());
    std::ofstream file(path);
    file << out.str();
    if (!file) {
        std::cerr << "print_host_prelude: cannot write " << path << "\n";
        return 1;
    }
    return 0;
}
