// The NCCL backend's choice and making (gpu_collectives.h).
#include "runtime/mpi/gpu_collectives.h"

#ifdef SHOAL_HAVE_MPI
#include <cstdlib>

#ifdef SHOAL_HAVE_CUDA
#include "runtime/cuda/nccl_comm.h"
#include "runtime/cuda/simulated_device.h"
#include "runtime/mpi/simulated_nccl.h"
#endif

namespace shoal::runtime {

std::shared_ptr<ir::Comm> gpu_collectives(const std::shared_ptr<MpiComm>& bootstrap, MPI_Comm world,
                                          double timeout_seconds, std::string& why_not) {
    const char* wanted = std::getenv("SHOAL_COMM");
    if (wanted && std::string(wanted) == "mpi") {
        why_not = "SHOAL_COMM=mpi";
        return nullptr;
    }
#ifdef SHOAL_HAVE_CUDA
    // A rank without NCCL or a device still makes the backend: the first
    // collective's agreement then moves every rank's blocks over MPI.
    std::shared_ptr<cuda::NcclApi> nccl;
    std::shared_ptr<cuda::CudaApi> device;
    std::string why_not_here;
    const char* which = std::getenv("SHOAL_DEVICE");
    if (which && std::string(which) == "simulated") {
        auto simulated = cuda::simulated_device(cuda::simulated_faults_from_env());
        device = simulated;
        // Tests: SHOAL_TEST_NCCL_MISSING=RANK gives that rank no NCCL (the ranks then agree on MPI).
        int rank = 0;
        MPI_Comm_rank(world, &rank);
        const char* missing = std::getenv("SHOAL_TEST_NCCL_MISSING");
        if (missing && std::atoi(missing) == rank)
            why_not_here = "libnccl.so.2 not found (SHOAL_TEST_NCCL_MISSING)";
        else
            nccl = simulated_nccl(simulated, world);
    } else {
        nccl = cuda::real_nccl(why_not_here);
        device = cuda::real_cuda_runtime();
    }
    auto comm = std::make_shared<cuda::NcclComm>(nccl, device, bootstrap, timeout_seconds, nullptr, why_not_here);
    comm->set_roll_call([weak = std::weak_ptr<MpiComm>(bootstrap)](uint64_t statement, uint64_t collective) {
        const std::shared_ptr<MpiComm> mpi = weak.lock();
        return mpi ? mpi->late_ranks(statement, collective) : std::string();
    });
    return comm;
#else
    (void)bootstrap, (void)world, (void)timeout_seconds;
    why_not = "Shoal was built without the CUDA toolkit";
    return nullptr;
#endif
}

}  // namespace shoal::runtime
#endif
