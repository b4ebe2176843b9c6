#include "runtime/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

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

// ---------------------------------------------------------------- chunks

namespace {

// One range's chunks. Helpers hold it by shared_ptr: a helper that starts
// after run_in_chunks returned finds no chunk to claim and never touches
// make_worker again.
struct ChunkJob {
    int64_t count = 0;
    int64_t chunk = 1;
    const std::function<ChunkWork()>* make_worker = nullptr;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::atomic<bool> failed{false};
    std::mutex failure_mutex;
    std::exception_ptr failure;

    void fail_with(std::exception_ptr e) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::move(e);
        failed.store(true);
    }

    void finish(int64_t n) {
        if (done.fetch_add(n) + n == count) done.notify_all();
    }

    // After a failure the remaining chunks are claimed and skipped (so
    // `done` reaches `count`).
    void work() {
        int64_t b = next.fetch_add(chunk);
        if (b >= count) return;
        ChunkWork run;
        try {
            run = (*make_worker)();
        } catch (...) {
            fail_with(std::current_exception());
        }
        for (; b < count; b = next.fetch_add(chunk)) {
            const int64_t end = std::min(count, b + chunk);
            if (!failed.load(std::memory_order_relaxed)) {
                try {
                    run(b, end, failed);
                } catch (...) {
                    fail_with(std::current_exception());
                }
            }
            finish(end - b);
        }
    }

    void wait() {
        for (int64_t d = done.load(); d < count; d = done.load()) done.wait(d);
    }
};

}  // namespace

void run_in_chunks(int64_t count, int workers, int64_t chunk, const std::function<ChunkWork()>& make_worker) {
    if (count <= 0) return;
    auto job = std::make_shared<ChunkJob>();
    job->count = count;
    job->chunk = std::max<int64_t>(1, chunk);
    job->make_worker = &make_worker;
    const int helpers = std::max(1, workers) - 1;
    if (helpers > 0) {
        ThreadPool& pool = ThreadPool::instance();
        pool.ensure(helpers);
        for (int h = 0; h < helpers; ++h) pool.submit([job] { job->work(); });
    }
    job->work();
    job->wait();
    if (job->failure) std::rethrow_exception(job->failure);
}

int thread_budget() {
    // Asked once: glibc reads a sysfs file for every call.
    static const int budget = [] {
        const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
        const char* env = std::getenv("SHOAL_THREADS");
        const int asked = env ? std::atoi(env) : 0;
        return asked >= 1 && asked <= 4096 ? asked : cores;
    }();
    return budget;
}

int worker_count(int threads, int64_t blocks) {
    return int(std::max<int64_t>(1, std::min<int64_t>(threads > 0 ? threads : thread_budget(), blocks)));
}

}  // namespace shoal::cpu
