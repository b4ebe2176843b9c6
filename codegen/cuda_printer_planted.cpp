// Printer bugs planted on purpose, one at a time, for the test that proves
// the printed CUDA's run can fail (issue 24; tests/printed_bugs): with
// SHOAL_PLANTED_PRINTER_BUG=<name> the kernels the CUDA executor compiles
// are printed with that bug. Never set outside that test.
#include <cstdlib>
#include <cstring>

#include "codegen/c_printer.h"
#include "codegen/cuda_printer.h"
#include "lang/diagnostics.h"

namespace shoal::ir {

namespace {

enum class Bug { None, Barrier, Divide, ShuffleDirection, DivergentShuffle, TileHalo, Cast };

Bug bug_named(const std::string& name) {
    const std::pair<const char*, Bug> names[] = {
        {"barrier", Bug::Barrier},         {"divide", Bug::Divide},
        {"shuffle-direction", Bug::ShuffleDirection}, {"divergent-shuffle", Bug::DivergentShuffle},
        {"tile-halo", Bug::TileHalo}, {"cast", Bug::Cast}};
    for (const auto& [n, b] : names)
        if (name == n) return b;
    internal_error(__FILE__, __LINE__, "no planted printer bug `" + name + "`");
}

Bug planted_bug() {
    static const Bug bug = [] {
        const char* v = std::getenv("SHOAL_PLANTED_PRINTER_BUG");
        return !v || !*v ? Bug::None : bug_named(v);
    }();
    return bug;
}

class PlantedBugPrinter final : public CudaPrinter {
public:
    explicit PlantedBugPrinter(Bug bug) : bug_(bug) { omit_check_positions(); }

protected:
    // No barrier between phases.
    void print_barrier() override {
        if (bug_ == Bug::Barrier) line("// (planted: no __syncthreads)");
        else CudaPrinter::print_barrier();
    }
    // A raw `/` where shoal_div belongs (division by zero, INT_MIN / -1).
    std::string print_binary(const Expr& e) override {
        if (bug_ == Bug::Divide && e.binary_op == BinaryOp::Div && is_integer_type(e.args[0]->type))
            return operand(e.args[0]) + " / " + operand(e.args[1]);
        return CudaPrinter::print_binary(e);
    }
    // Up and down swapped; or only the even lanes shuffle.
    std::string print_shuffle(const Expr& e) override {
        if (bug_ == Bug::ShuffleDirection && (e.shuffle_op == ShuffleOp::Up || e.shuffle_op == ShuffleOp::Down)) {
            Expr swapped = e;
            swapped.shuffle_op = e.shuffle_op == ShuffleOp::Up ? ShuffleOp::Down : ShuffleOp::Up;
            return CudaPrinter::print_shuffle(swapped);
        }
        if (bug_ == Bug::DivergentShuffle)
            return "((int)threadIdx.x % 2 == 0 ? " + CudaPrinter::print_shuffle(e) + " : " + print_expr(e.args[0]) + ")";
        return CudaPrinter::print_shuffle(e);
    }
    // A shared array's last element never written (a tile without its last
    // halo element): whoever reads it reads the block's poison.
    void print_store(const Stmt& s) override {
        if (bug_ == Bug::TileHalo && s.space == MemSpace::Shared && kernel_)
            for (const SharedArray& a : kernel_->shared)
                if (a.name == s.name && a.size > 1) {
                    open("if ((" + print_expr(s.exprs[0]) + ") != " + std::to_string(a.size - 1) + ")");
                    CudaPrinter::print_store(s);
                    close();
                    return;
                }
        CudaPrinter::print_store(s);
    }
    // A float to integer conversion as a plain C cast (undefined for NaN and out of range).
    std::string print_cast(const Expr& e) override {
        if (bug_ == Bug::Cast && is_float(e.args[0]->type) && is_integer_type(e.type))
            return "(" + type_name(e.type) + ")" + operand(e.args[0]);
        return CudaPrinter::print_cast(e);
    }

private:
    Bug bug_;
};

}  // namespace

std::string print_cuda_with_planted_bug(const std::vector<Kernel>& kernels, const std::string& bug) {
    return PlantedBugPrinter(bug_named(bug)).print(kernels);
}

std::string print_cuda_for_device(const std::vector<Kernel>& kernels) {
    if (const Bug bug = planted_bug(); bug != Bug::None) return PlantedBugPrinter(bug).print(kernels);
    CudaPrinter p;
    p.omit_check_positions();
    return p.print(kernels);
}

}  // namespace shoal::ir
