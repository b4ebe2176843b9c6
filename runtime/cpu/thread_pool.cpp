#include "runtime/cpu/thread_pool.h"

#include <chrono>

namespace shoal::cpu {

namespace {

constexpr auto kWatch = std::chrono::microseconds(200);  // how long an idle thread watches for work

}  // namespace

ThreadPool& ThreadPool::instance() {
    static ThreadPool pool;
    return pool;
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
}

void ThreadPool::ensure(int n) {
    std::lock_guard lock(mutex_);
    while (int(threads_.size()) < n) threads_.emplace_back([this] { loop(); });
}

void ThreadPool::submit(std::function<void()> task) {
    {
        std::lock_guard lock(mutex_);
        tasks_.push_back(std::move(task));
        ++queued_;
    }
    wake_.notify_one();
}

void ThreadPool::loop() {
    for (;;) {
        // Watch (yielding the core to anyone else who wants it), then sleep.
        const auto until = std::chrono::steady_clock::now() + kWatch;
        while (queued_.load(std::memory_order_relaxed) == 0 && std::chrono::steady_clock::now() < until)
            std::this_thread::yield();
        std::function<void()> task;
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
            if (tasks_.empty()) return;  // stopping, nothing left
            task = std::move(tasks_.front());
            tasks_.pop_front();
            --queued_;
        }
        task();
    }
}

}  // namespace shoal::cpu
