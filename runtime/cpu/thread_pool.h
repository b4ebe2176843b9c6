// A process-wide pool of worker threads for the CPU executor. A launch hands
// the pool "helper" tasks and also works itself, so it always progresses
// even when every pool thread is busy with another launch. A thread that
// finished a task watches for the next one a short while before it sleeps:
// waking a sleeping thread takes longer than a small launch (a plan's
// launches come back to back).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace shoal::cpu {

class ThreadPool {
public:
    static ThreadPool& instance();

    ThreadPool() = default;
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    ~ThreadPool();

    // Grows the pool to at least n threads.
    void ensure(int n);
    void submit(std::function<void()> task);

private:
    void loop();

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> tasks_;
    std::atomic<int> queued_{0};  // tasks_.size(), read without the lock while watching
    std::vector<std::thread> threads_;
    bool stop_ = false;
};

// Work on a range [0, count) split into chunks of consecutive items (a
// launch's blocks): run on `workers` threads, the caller and workers - 1 of
// the pool. Each thread that claims a chunk first calls make_worker() once
// (per-thread state: an interpreter frame, a native error record), then
// the function it returned for every chunk [begin, end) it claims, until
// none is left. The first exception stops the claiming of new chunks and is
// rethrown here once every claimed chunk has finished; `stop` tells a long
// chunk that some thread failed. Shared counters are touched once per chunk.
using ChunkWork = std::function<void(int64_t begin, int64_t end, const std::atomic<bool>& stop)>;
void run_in_chunks(int64_t count, int workers, int64_t chunk, const std::function<ChunkWork()>& make_worker);

// The worker threads a launch of `blocks` uses: `threads` (0: every core),
// at most one per block.
int worker_count(int threads, int64_t blocks);
// The threads a session's CPU work uses: the cores, or SHOAL_THREADS (a rank
// of a session on several shares the machine with the others: docs/scale-out.md).
int thread_budget();

}  // namespace shoal::cpu
