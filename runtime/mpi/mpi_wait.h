// How Shoal's ranks wait for MPI (mpi_world.cpp, mpi_comm.cpp): by polling,
// never in a blocking call. A blocking MPI wait spins a core, and on a
// machine with fewer cores than ranks that cost 12-20 ms per statement
// against 0.06 ms; polling also lets a wait watch Ctrl-C and a timeout.
#pragma once
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

namespace shoal::runtime::mpi {

// The pause after `spins` polls that found nothing: a few hundred fast
// polls for the common quick answer, then sleeps that leave the core to
// the ranks still computing.
inline void pause_after(int spins) {
    if (spins > 200) std::this_thread::sleep_for(std::chrono::microseconds(spins > 2000 ? 1000 : 100));
}

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
