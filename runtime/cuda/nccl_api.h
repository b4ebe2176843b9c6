// Every NCCL call Shoal makes, as one small table (as cuda_api.h is for the
// CUDA Runtime): the real NCCL, loaded at its first use (nccl_library.cpp:
// a machine without libnccl still runs Shoal), or NCCL simulated over MPI
// on the simulated device's memory (runtime/mpi/simulated_nccl.h), so the
// NCCL backend of the collectives (nccl_comm.h) runs in CI. Each entry
// mirrors the NCCL function of the same name and returns its ncclResult_t.
//
// Only NCCL's types come from the toolkit's nccl.h: this file is compiled
// only when the toolkit was found at build time.
#pragma once
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>

namespace shoal::cuda {

class NcclApi {
public:
    virtual ~NcclApi() = default;
    // "NCCL 2.28.7 (libnccl.so.2)" or "NCCL simulated over MPI", for `:ranks`.
    virtual std::string name() const = 0;

    virtual ncclResult_t getVersion(int* version) = 0;
    virtual ncclResult_t getUniqueId(ncclUniqueId* id) = 0;
    // Blocks until every rank of the communicator has called it.
    virtual ncclResult_t commInitRank(ncclComm_t* comm, int ranks, ncclUniqueId id, int rank) = 0;
    virtual ncclResult_t commDestroy(ncclComm_t comm) = 0;
    // Stops the communicator's pending work (a rank that never came): the
    // only way out of a collective that cannot complete.
    virtual ncclResult_t commAbort(ncclComm_t comm) = 0;
    virtual ncclResult_t commGetAsyncError(ncclComm_t comm, ncclResult_t* error) = 0;

    // Stream-ordered: the transfer happens when the stream reaches it.
    virtual ncclResult_t allGather(const void* send, void* receive, size_t count, ncclDataType_t type,
                                   ncclComm_t comm, cudaStream_t stream) = 0;
    virtual ncclResult_t send(const void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                              cudaStream_t stream) = 0;
    virtual ncclResult_t recv(void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                              cudaStream_t stream) = 0;
    // The sends and receives between them are issued together (pairs of
    // ranks exchanging both ways then never wait for each other).
    virtual ncclResult_t groupStart() = 0;
    virtual ncclResult_t groupEnd() = 0;

    virtual const char* getErrorString(ncclResult_t result) = 0;
};

// The real NCCL (libnccl.so.2, from the system or the toolkit's library
// directory), loaded once per process; null with `why_not` saying what is
// missing. Loading needs no GPU: using it does.
std::shared_ptr<NcclApi> real_nccl(std::string& why_not);

// "2.28.7" from NCCL's version code.
std::string nccl_version_text(int code);

}  // namespace shoal::cuda
