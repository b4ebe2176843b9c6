// The collectives of codegen/comm.h over NCCL, on device buffers: the
// backend of a session whose arrays live on GPUs, one rank per GPU
// (docs/scale-out.md, "Collectives"). Debian's Open MPI is not CUDA-aware,
// so device memory never goes to MPI; MPI only carries NCCL's unique id
// (through `bootstrap`, the MPI collectives, whenever a communicator is made).
//
// NCCL has no exclusive scan and no all-to-all of blocks of different sizes,
// so they are built here: folds and scans from an all-gather (every rank
// then folds in rank order, as the MPI backend does: bit-identical results),
// the all-to-all and the halo exchange from grouped sends and receives after
// an all-gather of the sizes; blocks of different sizes are all-gathered
// padded to the largest.
//
// The sharding layer hands the collectives host blocks today; they are
// staged through device buffers on this backend's own stream.
//
// NCCL needs a GPU of its own for each rank. The first collective asks
// every rank (over MPI) whether its NCCL and device work and which GPU it
// has; unless all do, on GPUs of their own, every rank moves blocks over
// MPI instead (this backend then passes each collective to `bootstrap`),
// and take_notice() says why once.
//
// Waits poll the stream (never cudaStreamSynchronize): Ctrl-C and the
// timeout abandon a transfer some rank never joins, which only
// ncclCommAbort ends. After a failed statement every rank aborts its
// communicator and the next collective makes a new one.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "codegen/comm.h"
#include "runtime/cuda/cuda_api.h"
#include "runtime/cuda/nccl_api.h"

namespace shoal::cuda {

class NcclComm final : public ir::Comm {
    using Clock = std::chrono::steady_clock;

public:
    // On `device` of `cuda`, over the ranks of `bootstrap`. Makes no NCCL
    // communicator yet: the first collective does (every rank runs it).
    // `nccl` null: this rank has none (`why_not_here` says why), so the
    // ranks will agree on MPI. Never throws: a device that fails here is
    // this rank's reason for MPI.
    NcclComm(std::shared_ptr<NcclApi> nccl, std::shared_ptr<CudaApi> cuda, std::shared_ptr<ir::Comm> bootstrap,
             double timeout_seconds, const std::atomic<bool>* cancel, std::string why_not_here = "", int device = 0);
    ~NcclComm() override;
    NcclComm(const NcclComm&) = delete;
    NcclComm& operator=(const NcclComm&) = delete;

    int rank() const override { return bootstrap_->rank(); }
    int size() const override { return bootstrap_->size(); }
    void begin_statement(bool last_failed) override;
    void allreduce(void* data, int64_t count, ir::ScalarType type, ir::CommOp op) override;
    void exclusive_scan(void* data, int64_t count, ir::ScalarType type, ir::CommOp op, const void* identity) override;
    std::vector<char> allgather(const void* mine, int64_t bytes, std::vector<int64_t>& offsets) override;
    std::vector<std::vector<char>> alltoall(const std::vector<std::vector<char>>& sends) override;
    std::pair<std::vector<char>, std::vector<char>> exchange_with_neighbours(const std::vector<char>& to_previous,
                                                                             const std::vector<char>& to_next) override;
    int64_t bytes_moved() const override { return bytes_moved_; }
    double seconds_in_collectives() const override { return seconds_; }

    void set_timeout(double seconds) override { timeout_ = seconds; }
    void set_cancel(const std::atomic<bool>* cancel) override { cancel_ = cancel; }
    void set_abandon_check(std::function<bool()> check) override { abandon_check_ = std::move(check); }
    // Frees the communicator and the stream (the ranks stop).
    void release() override;
    // After a timeout: the ranks not waiting at (statement, collective),
    // asked over MPI (MpiComm::late_ranks), or "".
    void set_roll_call(std::function<std::string(uint64_t, uint64_t)> roll_call) { roll_call_ = std::move(roll_call); }
    // "NCCL 2.28.7 (libnccl.so.2) on device buffers", for `:ranks`.
    std::string description() const override;
    std::string take_notice() override { return std::exchange(notice_, ""); }
    // Communicators made so far (a failed statement makes the next one new).
    int communicators_made() const { return communicators_made_; }

private:
    class Staging;  // device memory on this backend's stream, freed in stream order
    // The next collective of the statement, named for errors; makes the
    // communicator when there is none. False: the ranks move blocks over
    // MPI (the caller passes the collective to the bootstrap).
    bool arrive(const char* what);
    // Once, with every rank: whether all can use NCCL, on GPUs of their own.
    void agree_on_nccl();
    // What identifies this rank's GPU ("host PCI 0000:3b:00"), or why it has none usable (starting "!").
    std::string this_gpu() const;
    // Every rank's block, in rank order (allgather's body).
    std::vector<char> gather_blocks(const void* mine, int64_t bytes, std::vector<int64_t>& offsets);
    // Every rank's `count` int64s, in rank order.
    std::vector<int64_t> gather_sizes(const std::vector<int64_t>& mine);
    // sends[r] to rank r and receives[r] bytes from it, as grouped sends and
    // receives (nothing for an empty block, nothing to this rank itself).
    std::vector<std::vector<char>> send_and_receive(const std::vector<const std::vector<char>*>& sends,
                                                    const std::vector<int64_t>& receives);
    // Polls until the stream's work is done, watching Ctrl-C, the timeout
    // and NCCL's asynchronous errors.
    void wait();
    [[noreturn]] void fail(const std::string& what);
    void check(ncclResult_t result, const char* call);
    void check(cudaError_t error, const char* call);

    std::shared_ptr<NcclApi> nccl_;
    std::shared_ptr<CudaApi> cuda_;
    std::shared_ptr<ir::Comm> bootstrap_;
    double timeout_;
    const std::atomic<bool>* cancel_;
    int device_;
    std::string name_;  // NCCL's, kept after release
    std::string why_not_here_;           // this rank cannot use NCCL (its own reason)
    enum class Use { Undecided, Nccl, Mpi } use_ = Use::Undecided;
    std::string why_mpi_;                // the agreed reason for MPI
    std::string notice_;
    cudaStream_t stream_ = nullptr;
    cudaMemPool_t pool_ = nullptr;
    ncclComm_t comm_ = nullptr;
    int communicators_made_ = 0;
    bool abandoned_ = false, released_ = false;
    uint64_t statement_ = 0, collective_ = 0;
    const char* what_ = "";
    int64_t bytes_moved_ = 0;
    double seconds_ = 0;
    std::function<bool()> abandon_check_;
    std::function<std::string(uint64_t, uint64_t)> roll_call_;
};

}  // namespace shoal::cuda
