// NCCL over MPI on the simulated device (simulated_nccl.h).
#include "runtime/mpi/simulated_nccl.h"

#if defined(SHOAL_HAVE_MPI) && defined(SHOAL_HAVE_CUDA)
#include <climits>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lang/diagnostics.h"

namespace shoal::runtime {

namespace {

constexpr int kTagGather = 1, kTagPointToPoint = 2;
constexpr char kIdMark[] = "shoal simulated NCCL id";

size_t type_size(ncclDataType_t type) {
    switch (type) {
        case ncclInt8:
        case ncclUint8: return 1;
        case ncclFloat16:
        case ncclBfloat16: return 2;
        case ncclInt32:
        case ncclUint32:
        case ncclFloat32: return 4;
        case ncclInt64:
        case ncclUint64:
        case ncclFloat64: return 8;
        default: return 0;
    }
}

// One communicator: its own duplicate of the world, so an aborted one's
// messages never meet a later one's.
struct Transfer;
struct SimulatedComm {
    MPI_Comm mpi = MPI_COMM_NULL;
    int rank = 0, size = 1;
    bool aborted = false;
    std::vector<std::weak_ptr<Transfer>> transfers;  // enqueued, perhaps not done
};

struct Call {
    enum Kind { AllGather, Send, Receive } kind;
    const void* send = nullptr;
    void* receive = nullptr;
    size_t bytes = 0;  // per rank for AllGather
    int peer = -1;
};

// The calls of one group (or one call outside a group) on one stream: posted
// as MPI messages when the stream reaches them, done when all have arrived.
struct Transfer {
    std::shared_ptr<SimulatedComm> comm;
    std::vector<Call> calls;
    std::vector<MPI_Request> requests;
    std::vector<bool> receiving;  // per request
    bool posted = false;

    void add(bool receive) {
        requests.emplace_back();
        receiving.push_back(receive);
    }

    void post(const cuda::SimulatedDevice::DeviceMemory& memory) {
        posted = true;
        for (const Call& c : calls) {
            const int count = static_cast<int>(c.bytes);
            if (c.kind == Call::AllGather) {
                auto* all = static_cast<char*>(memory(c.receive, c.bytes * static_cast<size_t>(comm->size),
                                                      "ncclAllGather's receive buffer"));
                const auto* mine = static_cast<const char*>(memory(c.send, c.bytes, "ncclAllGather's send buffer"));
                char* own = all + c.bytes * static_cast<size_t>(comm->rank);
                if (own != mine && c.bytes) std::memmove(own, mine, c.bytes);
                for (int r = 0; r < comm->size; ++r) {
                    if (r == comm->rank) continue;
                    add(false);
                    MPI_Isend(own, count, MPI_BYTE, r, kTagGather, comm->mpi, &requests.back());
                    add(true);
                    MPI_Irecv(all + c.bytes * static_cast<size_t>(r), count, MPI_BYTE, r, kTagGather, comm->mpi,
                              &requests.back());
                }
            } else if (c.kind == Call::Send) {
                add(false);
                MPI_Isend(memory(c.send, c.bytes, "ncclSend's buffer"), count, MPI_BYTE, c.peer, kTagPointToPoint,
                          comm->mpi, &requests.back());
            } else {
                add(true);
                MPI_Irecv(memory(c.receive, c.bytes, "ncclRecv's buffer"), count, MPI_BYTE, c.peer, kTagPointToPoint,
                          comm->mpi, &requests.back());
            }
        }
    }
    bool done() {
        int all = 0;
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &all, MPI_STATUSES_IGNORE);
        return all != 0;
    }
    // A receive is cancelled and waited for (it then writes nothing into
    // memory about to be freed); a send is left to MPI (Open MPI cannot
    // cancel one; nobody will receive it: its communicator is retired).
    void cancel() {
        for (size_t i = 0; i < requests.size(); ++i) {
            MPI_Request& r = requests[i];
            if (r == MPI_REQUEST_NULL) continue;
            if (receiving[i]) {
                MPI_Cancel(&r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Request_free(&r);
            }
        }
        requests.clear();
        receiving.clear();
    }
};

class SimulatedNccl final : public cuda::NcclApi {
public:
    SimulatedNccl(std::shared_ptr<cuda::SimulatedDevice> device, MPI_Comm world)
        : device_(std::move(device)), world_(world) {}
    ~SimulatedNccl() override {
        for (auto& [handle, comm] : comms_) free_mpi(*comm);
        for (auto& comm : retired_) free_mpi(*comm);
    }

    std::string name() const override { return "NCCL simulated over MPI"; }
    ncclResult_t getVersion(int* version) override {
        *version = NCCL_VERSION_CODE;
        return ncclSuccess;
    }
    ncclResult_t getUniqueId(ncclUniqueId* id) override {
        std::memset(id, 0, sizeof *id);
        std::memcpy(id->internal, kIdMark, sizeof kIdMark);
        std::random_device random;
        for (size_t i = sizeof kIdMark; i + 4 <= sizeof id->internal; i += 4) {
            const uint32_t bits = random();
            std::memcpy(id->internal + i, &bits, 4);
        }
        return ncclSuccess;
    }
    ncclResult_t commInitRank(ncclComm_t* handle, int ranks, ncclUniqueId id, int rank) override {
        int world_rank = 0, world_size = 0;
        MPI_Comm_rank(world_, &world_rank);
        MPI_Comm_size(world_, &world_size);
        if (ranks != world_size || rank != world_rank || std::memcmp(id.internal, kIdMark, sizeof kIdMark) != 0)
            return ncclInvalidArgument;
        auto comm = std::make_shared<SimulatedComm>();
        MPI_Comm_dup(world_, &comm->mpi);  // every rank: NCCL's init blocks for them all too
        comm->rank = rank;
        comm->size = ranks;
        std::vector<char> ids(sizeof id.internal * static_cast<size_t>(ranks));
        MPI_Allgather(id.internal, sizeof id.internal, MPI_BYTE, ids.data(), sizeof id.internal, MPI_BYTE, comm->mpi);
        for (int r = 0; r < ranks; ++r)
            if (std::memcmp(ids.data() + sizeof id.internal * static_cast<size_t>(r), id.internal, sizeof id.internal))
                violation("ncclCommInitRank: rank " + std::to_string(r) + " was given another unique id");
        *handle = reinterpret_cast<ncclComm_t>(comm.get());
        comms_.emplace(*handle, std::move(comm));
        return ncclSuccess;
    }
    ncclResult_t commDestroy(ncclComm_t handle) override { return release(handle, false); }
    ncclResult_t commAbort(ncclComm_t handle) override { return release(handle, true); }
    ncclResult_t commGetAsyncError(ncclComm_t handle, ncclResult_t* error) override {
        if (!comms_.count(handle)) return ncclInvalidArgument;
        *error = ncclSuccess;
        return ncclSuccess;
    }

    ncclResult_t allGather(const void* send, void* receive, size_t count, ncclDataType_t type, ncclComm_t handle,
                           cudaStream_t stream) override {
        return add({Call::AllGather, send, receive, count * type_size(type), -1}, type, handle, stream);
    }
    ncclResult_t send(const void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t handle,
                      cudaStream_t stream) override {
        return add({Call::Send, data, nullptr, count * type_size(type), peer}, type, handle, stream);
    }
    ncclResult_t recv(void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t handle,
                      cudaStream_t stream) override {
        return add({Call::Receive, nullptr, data, count * type_size(type), peer}, type, handle, stream);
    }
    ncclResult_t groupStart() override {
        ++group_depth_;
        return ncclSuccess;
    }
    ncclResult_t groupEnd() override {
        if (group_depth_ == 0) return ncclInvalidUsage;
        if (--group_depth_ == 0) flush();
        return ncclSuccess;
    }
    const char* getErrorString(ncclResult_t result) override {
        switch (result) {
            case ncclSuccess: return "no error";
            case ncclInvalidArgument: return "invalid argument";
            case ncclInvalidUsage: return "invalid usage";
            default: return "unhandled error";
        }
    }

private:
    [[noreturn]] static void violation(const std::string& what) {
        internal_error(__FILE__, __LINE__, "simulated NCCL: " + what);
    }

    ncclResult_t add(Call call, ncclDataType_t type, ncclComm_t handle, cudaStream_t stream) {
        auto it = comms_.find(handle);
        if (it == comms_.end() || type_size(type) == 0) return ncclInvalidArgument;
        const SimulatedComm& comm = *it->second;
        if (call.kind != Call::AllGather && (call.peer < 0 || call.peer >= comm.size || call.peer == comm.rank))
            return ncclInvalidArgument;
        if (call.bytes > static_cast<size_t>(INT_MAX)) return ncclInvalidArgument;  // one MPI message each
        if (pending_ && (pending_->comm.get() != it->second.get() || pending_stream_ != stream))
            violation("one group spans two communicators or streams (Shoal's never do)");
        if (!pending_) {
            pending_ = std::make_shared<Transfer>();
            pending_->comm = it->second;
            pending_stream_ = stream;
        }
        pending_->calls.push_back(call);
        if (group_depth_ == 0) flush();
        return ncclSuccess;
    }

    void flush() {
        if (!pending_) return;
        std::shared_ptr<Transfer> transfer = std::move(pending_);
        pending_.reset();
        std::vector<std::weak_ptr<Transfer>>& live = transfer->comm->transfers;
        std::erase_if(live, [](const std::weak_ptr<Transfer>& t) { return t.expired(); });
        live.push_back(transfer);
        device_->enqueue_host_work(pending_stream_, [transfer](const cuda::SimulatedDevice::DeviceMemory& memory) {
            if (transfer->comm->aborted) {
                transfer->cancel();
                return true;
            }
            if (!transfer->posted) transfer->post(memory);
            return transfer->done();
        });
    }

    ncclResult_t release(ncclComm_t handle, bool abort) {
        auto it = comms_.find(handle);
        if (it == comms_.end()) return ncclInvalidArgument;
        std::shared_ptr<SimulatedComm> comm = it->second;
        comms_.erase(it);
        if (abort) {  // its transfers end (cancelled) now; their stream items then finish at once
            comm->aborted = true;
            for (const std::weak_ptr<Transfer>& t : comm->transfers)
                if (std::shared_ptr<Transfer> live = t.lock()) live->cancel();
            // Messages already sent on it arrive late: a freed communicator's
            // number would be reused, and a later one would receive them.
            retired_.push_back(comm);
            return ncclSuccess;
        }
        free_mpi(*comm);
        return ncclSuccess;
    }
    void free_mpi(SimulatedComm& comm) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized && comm.mpi != MPI_COMM_NULL) MPI_Comm_free(&comm.mpi);
    }

    std::shared_ptr<cuda::SimulatedDevice> device_;
    MPI_Comm world_;
    std::map<ncclComm_t, std::shared_ptr<SimulatedComm>> comms_;
    std::vector<std::shared_ptr<SimulatedComm>> retired_;  // aborted: freed with the library
    int group_depth_ = 0;
    std::shared_ptr<Transfer> pending_;
    cudaStream_t pending_stream_ = nullptr;
};

}  // namespace

std::shared_ptr<cuda::NcclApi> simulated_nccl(std::shared_ptr<cuda::SimulatedDevice> device, MPI_Comm world) {
    return std::make_shared<SimulatedNccl>(std::move(device), world);
}

}  // namespace shoal::runtime
#endif
