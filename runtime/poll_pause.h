// How Shoal's waits poll (the MPI ranks, the NCCL backend's stream, the
// simulated device's host work): never in a blocking call, which would spin
// a core (on a machine with fewer cores than ranks that cost 12-20 ms per
// statement against 0.06 ms) and could not watch Ctrl-C or a timeout.
#pragma once
#include <chrono>
#include <thread>

namespace shoal::runtime {

// The pause after `spins` polls that found nothing: a few hundred fast
// polls for the common quick answer, then sleeps that leave the core to
// the work still running.
inline void pause_after(int spins) {
    if (spins > 200) std::this_thread::sleep_for(std::chrono::microseconds(spins > 2000 ? 1000 : 100));
}

}  // namespace shoal::runtime
