// NCCL simulated over MPI on the simulated device's memory
// (runtime/cuda/simulated_device.h): how the NCCL backend of the
// collectives (runtime/cuda/nccl_comm.h) runs in CI, where no machine has a
// GPU. As strict as the simulated device:
//
// - Every buffer must be device memory of the simulated device, large
//   enough for the call (else a simulator violation, Error(Internal)).
// - Calls are stream-ordered: a transfer starts when the stream reaches it
//   and ends when every message of it has arrived; until then streamQuery
//   answers cudaErrorNotReady, and a transfer some rank never joins never
//   ends (as on GPUs) until ncclCommAbort.
// - ncclCommInitRank checks that every rank was given the same unique id
//   and the same number of ranks, as NCCL's bootstrap would find out.
// - The calls between ncclGroupStart and ncclGroupEnd are posted together.
#pragma once
#if defined(SHOAL_HAVE_MPI) && defined(SHOAL_HAVE_CUDA)
#include <memory>

#include <mpi.h>

#include "runtime/cuda/nccl_api.h"
#include "runtime/cuda/simulated_device.h"

namespace shoal::runtime {

// Over the ranks of `world` (each communicator duplicates it).
std::shared_ptr<cuda::NcclApi> simulated_nccl(std::shared_ptr<cuda::SimulatedDevice> device, MPI_Comm world);

}  // namespace shoal::runtime
#endif
