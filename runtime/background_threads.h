// Work that outlives the wait that started it: an NVRTC compile that Ctrl-C
// abandoned (runtime/cuda/cuda_executor.cpp), a native build in the
// background (runtime/cpu/native_tier.cpp). Neither compiler can be stopped
// midway, so the statement stops waiting and the work finishes into the
// caches on a thread of its own.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "lang/diagnostics.h"

namespace shoal::runtime {

// The threads of such work. A finished one is joined when the next starts
// (an unjoined thread keeps its stack), the rest when the owner ends. Not
// synchronised: its owner serialises start().
class BackgroundThreads {
public:
    BackgroundThreads() = default;
    BackgroundThreads(const BackgroundThreads&) = delete;
    BackgroundThreads& operator=(const BackgroundThreads&) = delete;
    ~BackgroundThreads() { join_all(); }

    // Waits for every thread. An owner whose threads use its other members
    // calls it first thing in its destructor (members die before this one
    // would otherwise join).
    void join_all() {
        for (Worker& w : workers_) w.thread.join();
        workers_.clear();
    }

    // Runs `work` (which must not throw) on a thread of its own; the flag
    // turns true once it has returned.
    std::shared_ptr<const std::atomic<bool>> start(std::function<void()> work) {
        std::erase_if(workers_, [](Worker& w) {
            if (!w.done->load()) return false;
            w.thread.join();
            return true;
        });
        auto done = std::make_shared<std::atomic<bool>>(false);
        workers_.push_back(Worker{std::thread([work = std::move(work), done] {
                                      work();
                                      done->store(true);
                                  }),
                                  done});
        return done;
    }

private:
    struct Worker {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::vector<Worker> workers_;
};

// Polls `finished()` every `poll` until it is true; throws
// Error(Interrupted) when `cancel` is set first (Ctrl-C: the work goes on).
template <class Finished>
void wait_unless_cancelled(Finished&& finished, const std::atomic<bool>& cancel, std::chrono::milliseconds poll) {
    while (!finished()) {
        if (cancel.load(std::memory_order_relaxed)) throw Error(ErrorKind::Interrupted, Loc{}, "interrupted");
        std::this_thread::sleep_for(poll);
    }
}

}  // namespace shoal::runtime
