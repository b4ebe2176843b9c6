// Which backend carries the collectives of a session whose executor is a
// GPU's (docs/scale-out.md, "Collectives"): NCCL on device buffers, one
// rank per GPU, its unique id carried by the MPI collectives; with
// SHOAL_DEVICE=simulated, NCCL simulated over MPI on the simulated device.
#pragma once
#ifdef SHOAL_HAVE_MPI
#include <memory>
#include <string>

#include <mpi.h>

#include "codegen/comm.h"
#include "runtime/mpi/mpi_comm.h"

namespace shoal::runtime {

// The NCCL collectives over the ranks of `world`, or null with `why_not`
// (SHOAL_COMM=mpi, Shoal built without the CUDA toolkit): the session's
// collectives then stay MPI's on host buffers, and `:ranks` says why. A
// rank without libnccl or a usable device is found out at the first
// collective, when the ranks agree on MPI (nccl_comm.h). `bootstrap`
// carries NCCL's unique id and names the late ranks after a timeout.
std::shared_ptr<ir::Comm> gpu_collectives(const std::shared_ptr<MpiComm>& bootstrap, MPI_Comm world,
                                          double timeout_seconds, std::string& why_not);

}  // namespace shoal::runtime
#endif
