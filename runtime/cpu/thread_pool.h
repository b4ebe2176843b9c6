// A process-wide pool of worker threads for the CPU executor. A launch hands
// the pool "helper" tasks and also works itself, so it always progresses
// even when every pool thread is busy with another launch. A thread that
// finished a task watches for the next one a short while before it sleeps:
// waking a sleeping thread takes longer than a small launch (a plan's
// launches come back to back).
#pragma once
#include <atomic>
#include <condition_variable>
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

}  // namespace shoal::cpu
