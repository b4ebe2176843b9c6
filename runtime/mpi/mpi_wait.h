// How Shoal's ranks wait for MPI (mpi_world.cpp, mpi_comm.cpp): by polling
// (runtime/poll_pause.h), never in a blocking call.
#pragma once
#include <string>
#include <vector>

#include <mpi.h>

#include "runtime/poll_pause.h"

namespace shoal::runtime::mpi {

using runtime::pause_after;

// Polls until `request` completes; false when `give_up()` says so first
// (the request is then left pending).
template <class GiveUp>
bool wait_polling(MPI_Request& request, GiveUp&& give_up) {
    for (int spins = 0;; ++spins) {
        int done = 0;
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (done) return true;
        if (give_up()) return false;
        pause_after(spins);
    }
}

// The ranks a wait names: "rank 2", "ranks 1 and 3", "ranks 1, 2 and 3".
inline std::string rank_list(const std::vector<int>& ranks) {
    std::string s = ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i)
        s += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
    return s;
}

}  // namespace shoal::runtime::mpi
