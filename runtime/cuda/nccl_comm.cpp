// The collectives of codegen/comm.h over NCCL (nccl_comm.h).
#include "runtime/cuda/nccl_comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "lang/diagnostics.h"
#include "runtime/poll_pause.h"

namespace shoal::cuda {

namespace {
// NCCL's waits are numbered apart from the MPI backend's in a roll call
// (both go through MpiComm::late_ranks on the same channel).
constexpr uint64_t kNcclWait = uint64_t{1} << 62;
}  // namespace

// Device memory for one collective, on the backend's stream: copies in and
// out are ordered with the NCCL calls, and the memory is freed after them
// (also when a wait gives up: the free then waits behind the abort).
class NcclComm::Staging {
public:
    Staging(NcclComm& comm, size_t bytes) : comm_(comm) {
        void* p = nullptr;
        comm.check(comm.cuda_->mallocFromPoolAsync(&p, std::max<size_t>(bytes, 1), comm.pool_, comm.stream_),
                   "cudaMallocFromPoolAsync");
        data_ = static_cast<char*>(p);
    }
    ~Staging() { comm_.cuda_->freeAsync(data_, comm_.stream_); }
    Staging(const Staging&) = delete;
    Staging& operator=(const Staging&) = delete;
    char* data() const { return data_; }
    // Copies between the host and the device are waited for before and after
    // each transfer: a copy to the host queued behind a transfer some rank
    // never joins would wait with it (a pageable copy blocks the host on a
    // GPU), and one that outlived an abandoned collective would write into
    // freed host memory. The host memory must stay until the next wait.
    void upload(size_t at, const void* host, size_t bytes) {
        if (bytes) comm_.check(comm_.cuda_->memcpyAsync(data_ + at, host, bytes, cudaMemcpyHostToDevice, comm_.stream_), "cudaMemcpyAsync");
    }
    void download(void* host, size_t at, size_t bytes) {
        if (bytes) comm_.check(comm_.cuda_->memcpyAsync(host, data_ + at, bytes, cudaMemcpyDeviceToHost, comm_.stream_), "cudaMemcpyAsync");
    }

private:
    NcclComm& comm_;
    char* data_ = nullptr;
};

NcclComm::NcclComm(std::shared_ptr<NcclApi> nccl, std::shared_ptr<CudaApi> cuda, std::shared_ptr<ir::Comm> bootstrap,
                   double timeout_seconds, const std::atomic<bool>* cancel, std::string why_not_here, int device)
    : nccl_(std::move(nccl)), cuda_(std::move(cuda)), bootstrap_(std::move(bootstrap)), timeout_(timeout_seconds),
      cancel_(cancel), device_(device), name_(nccl_ ? nccl_->name() : "NCCL"), why_not_here_(std::move(why_not_here)) {
    if (!nccl_) return;
    what_ = "setup";
    try {
        check(cuda_->setDevice(device_), "cudaSetDevice");
        check(cuda_->streamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        check(cuda_->deviceGetDefaultMemPool(&pool_, device_), "cudaDeviceGetDefaultMemPool");
    } catch (const Error& e) {
        why_not_here_ = e.message;
        abandoned_ = false;
    }
}

NcclComm::~NcclComm() { release(); }

void NcclComm::release() {
    if (released_) return;
    released_ = true;
    if (comm_) abandoned_ ? nccl_->commAbort(comm_) : nccl_->commDestroy(comm_);
    comm_ = nullptr;
    if (stream_ && cuda_->streamQuery(stream_) != cudaErrorNotReady) cuda_->streamDestroy(stream_);  // else work an abort left
    nccl_.reset();  // the simulated NCCL's MPI communicators go before MPI is finalised
}

std::string NcclComm::description() const {
    switch (use_) {
        case Use::Nccl: return name_ + " on device buffers (staged from the host)";
        case Use::Mpi: return bootstrap_->description() + " (not NCCL: " + why_mpi_ + ")";
        case Use::Undecided: break;
    }
    return name_ + " on device buffers, once every rank has said it can (at the first collective)";
}

std::string NcclComm::this_gpu() const {
    if (!why_not_here_.empty()) return "!" + why_not_here_;
    cudaDeviceProp prop{};
    if (const cudaError_t e = cuda_->getDeviceProperties(&prop, device_); e != cudaSuccess)
        return std::string("!cudaGetDeviceProperties failed: ") + cuda_->getErrorName(e);
    char host[128] = {};
    gethostname(host, sizeof host - 1);
    if (cuda_->name() == "simulated device")  // each process has a simulated device of its own
        return std::string(host) + " simulated device of process " + std::to_string(getpid());
    char pci[32];
    std::snprintf(pci, sizeof pci, "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    return std::string(host) + " GPU " + prop.name + " at PCI " + pci;
}

void NcclComm::agree_on_nccl() {
    const std::vector<std::string> gpus = ir::gather_texts(*bootstrap_, this_gpu());
    for (size_t r = 0; r < gpus.size() && why_mpi_.empty(); ++r) {
        if (!gpus[r].empty() && gpus[r][0] == '!') why_mpi_ = "rank " + std::to_string(r) + ": " + gpus[r].substr(1);
        for (size_t q = 0; q < r && why_mpi_.empty(); ++q)
            if (gpus[q] == gpus[r])
                why_mpi_ = "ranks " + std::to_string(q) + " and " + std::to_string(r) + " share the " + gpus[r] +
                           "; NCCL needs a GPU of its own for each rank (CUDA_VISIBLE_DEVICES gives each its own)";
    }
    use_ = why_mpi_.empty() ? Use::Nccl : Use::Mpi;
    if (use_ == Use::Mpi) notice_ = "sharded arrays move by MPI on host buffers, not by NCCL: " + why_mpi_;
}

void NcclComm::fail(const std::string& what) {
    abandoned_ = true;
    user_error(ErrorKind::Runtime, {}, what,
               {"`:ranks` shows where each rank runs; SHOAL_COMM=mpi moves sharded arrays' blocks over MPI instead"});
}

void NcclComm::check(ncclResult_t result, const char* call) {
    if (result == ncclSuccess || result == ncclInProgress) return;
    fail(std::string("NCCL: ") + call + " failed during the " + what_ + ": " + nccl_->getErrorString(result));
}

void NcclComm::check(cudaError_t error, const char* call) {
    if (error == cudaSuccess) return;
    fail(std::string("CUDA: ") + call + " failed during the " + what_ + " (NCCL collectives): " +
         cuda_->getErrorName(error) + ": " + cuda_->getErrorString(error));
}

void NcclComm::begin_statement(bool last_failed) {
    if (released_) return;
    if ((last_failed || abandoned_) && comm_) {
        // A transfer some rank never joined ends only by an abort, and every
        // rank's communicator must then be new: the next collective makes it.
        nccl_->commAbort(comm_);
        comm_ = nullptr;
        const Clock::time_point give_up = Clock::now() + std::chrono::seconds(5);
        for (int spins = 0; cuda_->streamQuery(stream_) == cudaErrorNotReady; ++spins) {
            if (Clock::now() > give_up) {  // the aborted work still holds the stream: leave it behind
                cudaStream_t fresh = nullptr;
                if (cuda_->streamCreateWithFlags(&fresh, cudaStreamNonBlocking) == cudaSuccess) stream_ = fresh;
                break;
            }
            runtime::pause_after(spins);
        }
    }
    abandoned_ = false;
    ++statement_;
    collective_ = 0;
}

bool NcclComm::arrive(const char* what) {
    if (use_ == Use::Undecided && !released_) agree_on_nccl();
    if (use_ == Use::Mpi) return false;
    if (released_)
        user_error(ErrorKind::Runtime, {}, "the ranks these arrays were sharded over have stopped",
                   {"`:set ranks N` starts new ranks; sharded arrays of the old ones are gone"});
    if (abandoned_)
        user_error(ErrorKind::Runtime, {},
                   "this statement's collectives were abandoned (a timeout or Ctrl-C): the next statement starts afresh");
    ++collective_;
    what_ = what;
    if (comm_) return true;
    // A new communicator: rank 0's unique id goes to every rank over MPI
    // (the bootstrap's allgather, with its timeout and Ctrl-C).
    ncclUniqueId id{};
    const bool maker = rank() == 0;
    if (maker) check(nccl_->getUniqueId(&id), "ncclGetUniqueId");
    std::vector<int64_t> offsets;
    const std::vector<char> all = bootstrap_->allgather(maker ? &id : nullptr, maker ? sizeof id : 0, offsets);
    if (all.size() != sizeof id) internal_error(__FILE__, __LINE__, "NCCL: rank 0's unique id did not arrive whole");
    std::memcpy(&id, all.data(), sizeof id);
    ncclComm_t made = nullptr;
    check(nccl_->commInitRank(&made, size(), id, rank()), "ncclCommInitRank");
    comm_ = made;
    ++communicators_made_;
    return true;
}

void NcclComm::wait() {
    struct Timed {
        double& seconds;
        Clock::time_point entered = Clock::now();
        ~Timed() { seconds += std::chrono::duration<double>(Clock::now() - entered).count(); }
    } timed{seconds_};
    const Clock::time_point deadline =
        timed.entered + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_));
    for (int spins = 0;; ++spins) {
        const cudaError_t state = cuda_->streamQuery(stream_);
        if (state == cudaSuccess) return;
        if (state != cudaErrorNotReady) check(state, "cudaStreamQuery");
        ncclResult_t async = ncclSuccess;
        if (nccl_->commGetAsyncError(comm_, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress)
            fail(std::string("NCCL reported an error during the ") + what_ + ": " + nccl_->getErrorString(async));
        if ((cancel_ && cancel_->load()) || (abandon_check_ && abandon_check_())) {
            abandoned_ = true;
            throw Error(ErrorKind::Interrupted, {}, "interrupted");
        }
        if (Clock::now() > deadline) {
            abandoned_ = true;
            const std::string late = roll_call_ ? roll_call_(statement_, collective_ | kNcclWait) : "";
            user_error(ErrorKind::Runtime, {},
                       (late.empty() ? std::string("the ranks' ") + what_ + " (NCCL) did not complete"
                                     : late + " did not arrive at the " + what_) +
                           " within the timeout of " + std::to_string(static_cast<int64_t>(timeout_)) + " s",
                       {"`:set timeout S` waits longer; `:ranks` shows where each rank runs"});
        }
        runtime::pause_after(spins);
    }
}

std::vector<int64_t> NcclComm::gather_sizes(const std::vector<int64_t>& mine) {
    const size_t block = mine.size() * sizeof(int64_t), n = static_cast<size_t>(size());
    Staging staging(*this, block * n);
    char* own = staging.data() + block * static_cast<size_t>(rank());
    staging.upload(block * static_cast<size_t>(rank()), mine.data(), block);
    wait();
    check(nccl_->allGather(own, staging.data(), block, ncclUint8, comm_, stream_), "ncclAllGather");
    wait();
    std::vector<int64_t> all(mine.size() * n);
    staging.download(all.data(), 0, block * n);
    wait();
    bytes_moved_ += static_cast<int64_t>(2 * block * (n - 1));
    return all;
}

std::vector<char> NcclComm::gather_blocks(const void* mine, int64_t bytes, std::vector<int64_t>& offsets) {
    const std::vector<int64_t> sizes = gather_sizes({bytes});
    const size_t n = sizes.size(), widest = static_cast<size_t>(*std::max_element(sizes.begin(), sizes.end()));
    offsets.assign(n + 1, 0);
    for (size_t r = 0; r < n; ++r) offsets[r + 1] = offsets[r] + sizes[r];
    std::vector<char> all(static_cast<size_t>(offsets[n]));
    if (widest == 0) return all;
    // ncclAllGather moves blocks of one size: each padded to the widest.
    Staging staging(*this, widest * n);
    const size_t me = static_cast<size_t>(rank());
    staging.upload(widest * me, mine, static_cast<size_t>(bytes));
    wait();
    check(nccl_->allGather(staging.data() + widest * me, staging.data(), widest, ncclUint8, comm_, stream_),
          "ncclAllGather");
    wait();
    for (size_t r = 0; r < n; ++r)
        staging.download(all.data() + offsets[r], widest * r, static_cast<size_t>(sizes[r]));
    wait();
    bytes_moved_ += static_cast<int64_t>(2 * widest * (n - 1));
    return all;
}

std::vector<std::vector<char>> NcclComm::send_and_receive(const std::vector<const std::vector<char>*>& sends,
                                                          const std::vector<int64_t>& receives) {
    const size_t n = static_cast<size_t>(size()), me = static_cast<size_t>(rank());
    std::vector<size_t> send_at(n + 1, 0), receive_at(n + 1, 0);
    for (size_t r = 0; r < n; ++r) {
        send_at[r + 1] = send_at[r] + (r != me && sends[r] ? sends[r]->size() : 0);
        receive_at[r + 1] = receive_at[r] + (r != me ? static_cast<size_t>(receives[r]) : 0);
    }
    std::vector<std::vector<char>> got(n);
    if (send_at[n] == 0 && receive_at[n] == 0) return got;
    Staging out(*this, send_at[n]), in(*this, receive_at[n]);
    for (size_t r = 0; r < n; ++r)
        if (send_at[r + 1] > send_at[r]) out.upload(send_at[r], sends[r]->data(), send_at[r + 1] - send_at[r]);
    wait();
    {
        check(nccl_->groupStart(), "ncclGroupStart");
        struct GroupEnd {  // a failed call inside the group still closes it
            NcclComm& comm;
            bool closed = false;
            ~GroupEnd() {
                if (!closed) comm.nccl_->groupEnd();
            }
        } group{*this};
        for (size_t r = 0; r < n; ++r) {
            const int peer = static_cast<int>(r);
            if (send_at[r + 1] > send_at[r])
                check(nccl_->send(out.data() + send_at[r], send_at[r + 1] - send_at[r], ncclUint8, peer, comm_, stream_),
                      "ncclSend");
            if (receive_at[r + 1] > receive_at[r])
                check(nccl_->recv(in.data() + receive_at[r], receive_at[r + 1] - receive_at[r], ncclUint8, peer, comm_,
                                  stream_),
                      "ncclRecv");
        }
        group.closed = true;
        check(nccl_->groupEnd(), "ncclGroupEnd");
    }
    wait();
    for (size_t r = 0; r < n; ++r) {
        got[r].resize(receive_at[r + 1] - receive_at[r]);
        in.download(got[r].data(), receive_at[r], got[r].size());
    }
    wait();
    bytes_moved_ += static_cast<int64_t>(send_at[n] + receive_at[n]);
    return got;
}

void NcclComm::allreduce(void* data, int64_t count, ir::ScalarType type, ir::CommOp op) {
    if (!arrive("allreduce")) return bootstrap_->allreduce(data, count, type, op);
    std::vector<int64_t> offsets;
    const std::vector<char> all = gather_blocks(data, count * static_cast<int64_t>(ir::scalar_size(type)), offsets);
    ir::fold_gathered(data, all, offsets, size(), count, type, op, nullptr);
}

void NcclComm::exclusive_scan(void* data, int64_t count, ir::ScalarType type, ir::CommOp op, const void* identity) {
    if (!arrive("exclusive scan")) return bootstrap_->exclusive_scan(data, count, type, op, identity);
    std::vector<int64_t> offsets;
    const std::vector<char> all = gather_blocks(data, count * static_cast<int64_t>(ir::scalar_size(type)), offsets);
    ir::fold_gathered(data, all, offsets, rank(), count, type, op, identity);
}

std::vector<char> NcclComm::allgather(const void* mine, int64_t bytes, std::vector<int64_t>& offsets) {
    if (!arrive("allgather")) return bootstrap_->allgather(mine, bytes, offsets);
    return gather_blocks(mine, bytes, offsets);
}

std::vector<std::vector<char>> NcclComm::alltoall(const std::vector<std::vector<char>>& sends) {
    const size_t n = static_cast<size_t>(size()), me = static_cast<size_t>(rank());
    if (sends.size() != n) internal_error(__FILE__, __LINE__, "alltoall: one block per rank expected");
    if (!arrive("all-to-all exchange")) return bootstrap_->alltoall(sends);
    std::vector<int64_t> mine(n);
    std::vector<const std::vector<char>*> blocks(n);
    for (size_t r = 0; r < n; ++r) {
        mine[r] = static_cast<int64_t>(sends[r].size());
        blocks[r] = &sends[r];
    }
    const std::vector<int64_t> sizes = gather_sizes(mine);  // sizes[s * n + r]: what rank s sends to rank r
    std::vector<int64_t> receives(n);
    for (size_t s = 0; s < n; ++s) receives[s] = sizes[s * n + me];
    std::vector<std::vector<char>> got = send_and_receive(blocks, receives);
    got[me] = sends[me];
    return got;
}

std::pair<std::vector<char>, std::vector<char>> NcclComm::exchange_with_neighbours(const std::vector<char>& to_previous,
                                                                                   const std::vector<char>& to_next) {
    const int n = size(), me = rank();
    if (!arrive("halo exchange")) return bootstrap_->exchange_with_neighbours(to_previous, to_next);
    const std::vector<int64_t> sizes =
        gather_sizes({static_cast<int64_t>(to_previous.size()), static_cast<int64_t>(to_next.size())});
    std::vector<const std::vector<char>*> blocks(static_cast<size_t>(n), nullptr);
    std::vector<int64_t> receives(static_cast<size_t>(n), 0);
    if (me > 0) {
        blocks[static_cast<size_t>(me - 1)] = &to_previous;
        receives[static_cast<size_t>(me - 1)] = sizes[static_cast<size_t>(2 * (me - 1) + 1)];  // its to_next
    }
    if (me + 1 < n) {
        blocks[static_cast<size_t>(me + 1)] = &to_next;
        receives[static_cast<size_t>(me + 1)] = sizes[static_cast<size_t>(2 * (me + 1))];  // its to_previous
    }
    std::vector<std::vector<char>> got = send_and_receive(blocks, receives);
    return {me > 0 ? std::move(got[static_cast<size_t>(me - 1)]) : std::vector<char>{},
            me + 1 < n ? std::move(got[static_cast<size_t>(me + 1)]) : std::vector<char>{}};
}

}  // namespace shoal::cuda
