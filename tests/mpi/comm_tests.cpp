// The collectives of codegen/comm.h, run by tests/mpi/run_comm_tests.sh
// under `mpirun -np N` for N = 1 to 4 (3: uneven; blocks of every size,
// empty ones included), on each backend: `shoal_comm_tests mpi` (host
// buffers, runtime/mpi/mpi_comm.h) and `shoal_comm_tests nccl` (the NCCL
// backend, runtime/cuda/nccl_comm.h, on NCCL simulated over MPI on the
// simulated device). Each rank checks what it holds; rank 0 prints one
// PASS/FAIL line per case, for every rank.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "lang/diagnostics.h"
#include "lang/scalar_semantics.h"
#include "runtime/mpi/gpu_collectives.h"
#include "runtime/mpi/mpi_comm.h"

using shoal::Error;
using shoal::ErrorKind;
using shoal::ir::CommOp;
using shoal::ir::ScalarType;
using shoal::runtime::MpiComm;

namespace {

int g_rank = 0, g_size = 1, g_failures = 0;
const char* g_backend = "mpi";

// Every rank says whether the case held there; rank 0 reports it.
void report(const std::string& name, bool ok, const std::string& detail = "") {
    int mine = ok ? 0 : 1, bad = 0;
    MPI_Allreduce(&mine, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (!ok) std::fprintf(stderr, "[rank %d] %s: %s\n", g_rank, name.c_str(), detail.c_str());
    if (g_rank == 0) std::printf("%s %d ranks, %s: %s\n", bad ? "FAIL" : "PASS", g_size, g_backend, name.c_str());
    if (bad) ++g_failures;
}

std::vector<char> bytes_of(std::initializer_list<int> values) {
    std::vector<char> v;
    for (int x : values) v.push_back(static_cast<char>(x));
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (argc > 1) g_backend = argv[1];
    std::atomic<bool> cancel{false};
    auto bootstrap = std::make_shared<MpiComm>(MPI_COMM_WORLD, 30, &cancel);
    std::shared_ptr<shoal::ir::Comm> comm_owner = bootstrap;
    // nccl: simulated over MPI; nccl-real: the machine's NCCL and GPU
    // (tests/gpu_suite.py, one rank per GPU).
    if (std::string(g_backend) == "nccl" || std::string(g_backend) == "nccl-real") {
        if (std::string(g_backend) == "nccl") setenv("SHOAL_DEVICE", "simulated", 1);
        else unsetenv("SHOAL_DEVICE");
        std::string why_not;
        comm_owner = shoal::runtime::gpu_collectives(bootstrap, MPI_COMM_WORLD, 30, why_not);
        if (!comm_owner) {
            if (g_rank == 0) std::printf("SKIP the NCCL backend: %s\n", why_not.c_str());
            MPI_Finalize();
            return std::string(g_backend) == "nccl" ? 1 : 77;  // the simulated one is always there
        }
        comm_owner->set_cancel(&cancel);
    }
    shoal::ir::Comm& comm = *comm_owner;
    // A statement's end, as the session's agreement does it: every backend starts afresh.
    auto next_statement = [&](bool last_failed) {
        if (comm_owner != bootstrap) bootstrap->begin_statement(last_failed);
        comm.begin_statement(last_failed);
    };
    const int r = g_rank, n = g_size;
    next_statement(false);

    {  // int sums: exact, the same on every rank
        int64_t v[2] = {r + 1, 10 * (r + 1)};
        comm.allreduce(v, 2, ScalarType::I64, CommOp::Sum);
        const int64_t want = int64_t{n} * (n + 1) / 2;
        report("allreduce of ints (sum)", v[0] == want && v[1] == 10 * want);
    }
    {  // float sums folded in rank order: bit for bit that fold
        float v = 0.1f * static_cast<float>(r + 1) + 1e7f * static_cast<float>(r % 2);
        comm.allreduce(&v, 1, ScalarType::F32, CommOp::Sum);
        float want = 0.1f + 0.f;
        for (int k = 1; k < n; ++k)
            want = shoal::scalar::add(want, 0.1f * static_cast<float>(k + 1) + 1e7f * static_cast<float>(k % 2));
        report("allreduce of floats folds in rank order", std::memcmp(&v, &want, sizeof v) == 0,
               std::to_string(v) + " vs " + std::to_string(want));
    }
    {  // min and max, NaN by Shoal's rules
        double v[2] = {static_cast<double>(r) - 1.5, static_cast<double>(r) * 2};
        double w[2] = {v[0], v[1]};
        comm.allreduce(v, 2, ScalarType::F64, CommOp::Min);
        comm.allreduce(w, 2, ScalarType::F64, CommOp::Max);
        report("allreduce min and max", v[0] == -1.5 && v[1] == 0 && w[0] == n - 2.5 && w[1] == 2.0 * (n - 1));
    }
    {  // exclusive scan of the block totals: the offset each rank adds
        int32_t v = r + 1;
        const int32_t zero = 0;
        comm.exclusive_scan(&v, 1, ScalarType::I32, CommOp::Sum, &zero);
        report("exclusive scan (rank 0 gets the identity)", v == r * (r + 1) / 2);
    }
    {  // allgather of blocks of sizes 0, 1, 2, ... (rank 0's is empty)
        std::vector<char> mine(static_cast<size_t>(r), static_cast<char>('a' + r));
        std::vector<int64_t> offsets;
        const std::vector<char> all = comm.allgather(mine.data(), static_cast<int64_t>(mine.size()), offsets);
        bool ok = offsets.size() == static_cast<size_t>(n) + 1 && offsets[0] == 0;
        for (int k = 0; ok && k < n; ++k) {
            ok = offsets[static_cast<size_t>(k) + 1] - offsets[static_cast<size_t>(k)] == k;
            for (int64_t i = offsets[static_cast<size_t>(k)]; ok && i < offsets[static_cast<size_t>(k) + 1]; ++i)
                ok = all[static_cast<size_t>(i)] == 'a' + k;
        }
        report("allgather of uneven blocks, an empty one included", ok);
    }
    {  // all-to-all: rank r sends (r + s) % 3 bytes of value 16 r + s to rank s
        std::vector<std::vector<char>> sends(static_cast<size_t>(n));
        for (int s = 0; s < n; ++s) sends[static_cast<size_t>(s)].assign(static_cast<size_t>((r + s) % 3), static_cast<char>(16 * r + s));
        const auto got = comm.alltoall(sends);
        bool ok = got.size() == static_cast<size_t>(n);
        for (int s = 0; ok && s < n; ++s)
            ok = got[static_cast<size_t>(s)] == std::vector<char>(static_cast<size_t>((s + r) % 3), static_cast<char>(16 * s + r));
        report("all-to-all with empty blocks", ok);
    }
    {  // halo exchange: nothing at the ends
        const auto [from_previous, from_next] =
            comm.exchange_with_neighbours(bytes_of({r, 'p'}), bytes_of({r, 'n', 'x'}));
        const bool ok = (r == 0 ? from_previous.empty() : from_previous == bytes_of({r - 1, 'n', 'x'})) &&
                        (r == n - 1 ? from_next.empty() : from_next == bytes_of({r + 1, 'p'}));
        report("halo exchange with the neighbours", ok);
    }
    {  // two collectives of one statement between the same ranks keep their order
        int64_t a = r, b = 100 + r;
        comm.allreduce(&a, 1, ScalarType::I64, CommOp::Max);
        comm.allreduce(&b, 1, ScalarType::I64, CommOp::Min);
        report("consecutive collectives keep their order", a == n - 1 && b == 100);
    }
    if (n > 1) {  // a late rank is named; the next statement starts afresh
        comm.set_timeout(1);
        bootstrap->set_timeout(1);
        next_statement(false);
        std::string message;
        if (r == n - 1) {
            std::this_thread::sleep_for(std::chrono::milliseconds(3500));  // never arrives
        } else {
            try {
                int64_t v = 1;
                comm.allreduce(&v, 1, ScalarType::I64, CommOp::Sum);
            } catch (const Error& e) {
                message = e.message;
            }
        }
        const std::string want = "rank " + std::to_string(n - 1) + " did not arrive at the allreduce within the timeout of 1 s";
        report("a collective names the rank that did not arrive", r == n - 1 || message == want, message);
        comm.set_timeout(30);
        bootstrap->set_timeout(30);
        next_statement(true);
        int64_t v = 1;
        comm.allreduce(&v, 1, ScalarType::I64, CommOp::Sum);
        report("the next statement's collectives work", v == n);
    }
    {  // Ctrl-C during a wait
        next_statement(false);
        bool interrupted = false;
        if (r == 0 && n > 1) {
            cancel.store(true);
            try {
                int64_t v = 1;
                comm.allreduce(&v, 1, ScalarType::I64, CommOp::Sum);
            } catch (const Error& e) {
                interrupted = e.kind == ErrorKind::Interrupted;
            }
            cancel.store(false);
        }
        report("Ctrl-C stops a collective", n == 1 || r != 0 || interrupted);
        // The others had not joined that one: the next statement works for everyone.
        next_statement(n > 1);
        int64_t v = 2;
        comm.allreduce(&v, 1, ScalarType::I64, CommOp::Product);
        int64_t want = 1;
        for (int k = 0; k < n; ++k) want *= 2;
        report("after Ctrl-C the next statement's collectives work", v == want);
    }
    {  // larger blocks (padded to the widest by the NCCL backend's all-gather)
        next_statement(false);
        std::vector<char> mine(static_cast<size_t>(100000 + 7 * r));
        for (size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<char>(i * 31 + static_cast<size_t>(r));
        std::vector<int64_t> offsets;
        const std::vector<char> all = comm.allgather(mine.data(), static_cast<int64_t>(mine.size()), offsets);
        bool ok = all.size() == static_cast<size_t>(offsets.back());
        for (int k = 0; ok && k < n; ++k)
            for (int64_t i = offsets[static_cast<size_t>(k)]; ok && i < offsets[static_cast<size_t>(k) + 1]; ++i)
                ok = all[static_cast<size_t>(i)] ==
                     static_cast<char>(static_cast<size_t>(i - offsets[static_cast<size_t>(k)]) * 31 + static_cast<size_t>(k));
        report("allgather of large uneven blocks", ok && offsets.back() == int64_t{100000} * n + 7 * n * (n - 1) / 2);
    }
    comm.release();
    bootstrap->release();
    comm_owner.reset();
    bootstrap.reset();
    MPI_Finalize();
    return g_failures ? 1 : 0;
}
