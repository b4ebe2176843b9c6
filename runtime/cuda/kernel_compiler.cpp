#include "runtime/cuda/kernel_compiler.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include "lang/diagnostics.h"

namespace shoal::cuda {

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs work(i) for i in [0, n), on up to one thread per core (the caller's
// among them). Exceptions are the caller's to catch inside `work`.
template <class Work>
void parallel_for(size_t n, const Work& work) {
    const size_t threads = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
    std::atomic<size_t> next{0};
    auto drain = [&] {
        for (size_t i; (i = next.fetch_add(1)) < n;) work(i);
    };
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < threads; ++t) helpers.emplace_back(drain);
    drain();
    for (auto& h : helpers) h.join();
}

[[noreturn]] void throw_compile_failure(const KernelSource& kernel, const NvrtcTarget& target,
                                        const std::string& compiler, const std::string& log, size_t others) {
    std::vector<std::string> notes = {
        "this is a bug in Shoal: please report it with this message",
        compiler + " log (" + target.gpu_architecture + "):\n" + log,
        "kernel source:\n" + number_lines(kernel.source),
    };
    if (others > 0) notes.push_back(std::to_string(others) + " more kernel(s) of this statement failed to compile");
    user_error(ErrorKind::Internal, Loc{},
               compiler + " failed to compile kernel '" + kernel.name + "' of `" + kernel.origin + "` for " +
                   target.gpu_architecture,
               std::move(notes));
}

}  // namespace

const char* kernel_from_name(KernelFrom from) {
    switch (from) {
        case KernelFrom::Memory: return "memory cache";
        case KernelFrom::Disk: return "disk cache";
        case KernelFrom::Compiled: return "compiled";
    }
    return "?";
}

// One distinct kernel missing from the memory cache.
struct KernelCompiler::Job {
    const KernelSource* kernel = nullptr;  // the first of the statement's kernels with this key
    Sha256Digest key{};
    const NvrtcTarget* target = nullptr;
    // Results.
    std::shared_ptr<const CachedKernel> entry;  // null when NVRTC failed
    KernelFrom from = KernelFrom::Compiled;
    double seconds = 0;
    std::string failure_log;
    std::exception_ptr error;
};

KernelCompiler::KernelCompiler(std::shared_ptr<const NvrtcApi> nvrtc, std::shared_ptr<KernelDiskCache> disk,
                               std::vector<std::string> extra_options)
    : nvrtc_(std::move(nvrtc)),
      disk_(std::move(disk)),
      extra_options_(std::move(extra_options)),
      compiler_id_(nvrtc_ ? nvrtc_->name + " " + nvrtc_version(*nvrtc_) : ""),
      supported_archs_(nvrtc_ ? nvrtc_supported_archs(*nvrtc_) : std::vector<int>{}) {
    SHOAL_INTERNAL_ASSERT(nvrtc_ != nullptr, "KernelCompiler without NVRTC");
}

NvrtcTarget KernelCompiler::target_for(const std::string& arch) const {
    NvrtcTarget target = choose_target(parse_sm_arch(arch), supported_archs_);
    target.options.insert(target.options.end(), extra_options_.begin(), extra_options_.end());
    return target;
}

void KernelCompiler::run_job(Job& job) const {
    try {
        const auto start = std::chrono::steady_clock::now();
        const ImageKind kind = job.target->kind;
        if (disk_) {
            if (std::optional<CachedKernel> found = disk_->load(job.key, kind)) {
                job.entry = std::make_shared<const CachedKernel>(std::move(*found));
                job.from = KernelFrom::Disk;
                job.seconds = seconds_since(start);
                return;
            }
        }
        NvrtcOutput out = nvrtc_compile(*nvrtc_, job.kernel->source, job.kernel->name + ".cu", job.target->options, kind);
        job.seconds = seconds_since(start);
        job.from = KernelFrom::Compiled;
        if (!out.ok) {
            job.failure_log = std::move(out.log);
            return;
        }
        auto entry = std::make_shared<const CachedKernel>(CachedKernel{kind, std::move(out.image), std::move(out.log)});
        if (disk_) disk_->store(job.key, *entry);  // a failure is in the disk cache's stats, not ours
        job.entry = std::move(entry);
    } catch (...) {
        job.error = std::current_exception();
    }
}

std::vector<CompiledKernel> KernelCompiler::compile(const std::vector<KernelSource>& kernels, const std::string& arch) {
    const NvrtcTarget target = target_for(arch);
    std::vector<CompiledKernel> results(kernels.size());
    std::vector<Job> jobs;
    std::vector<size_t> job_of(kernels.size(), SIZE_MAX);  // SIZE_MAX: found in memory
    std::map<std::string, size_t> job_by_key;
    std::vector<std::shared_ptr<const CachedKernel>> found(kernels.size());
    std::vector<Sha256Digest> keys;
    for (size_t i = 0; i < kernels.size(); ++i) {
        keys.push_back(kernel_cache_key(kernels[i].source, target.options, arch, compiler_id_));
        results[i].key = to_hex(keys[i]);
    }
    {
        std::lock_guard<std::mutex> hold(mutex_);
        for (size_t i = 0; i < kernels.size(); ++i) {
            if (const auto* hit = memory_.find(results[i].key)) {
                found[i] = *hit;
                continue;
            }
            auto [it, fresh] = job_by_key.emplace(results[i].key, jobs.size());
            if (fresh) jobs.push_back(Job{&kernels[i], keys[i], &target, nullptr, KernelFrom::Compiled, 0, "", nullptr});
            job_of[i] = it->second;
        }
    }
    parallel_for(jobs.size(), [&](size_t j) { run_job(jobs[j]); });
    {
        std::lock_guard<std::mutex> hold(mutex_);
        for (const Job& job : jobs) {
            if (!job.entry) continue;
            memory_.insert(to_hex(job.key), job.entry);
            ++(job.from == KernelFrom::Disk ? counts_.disk_hits : counts_.misses);
            if (job.from == KernelFrom::Compiled) counts_.compile_seconds += job.seconds;
        }
        for (size_t i = 0; i < kernels.size(); ++i)
            if (job_of[i] == SIZE_MAX || jobs[job_of[i]].kernel != &kernels[i]) ++counts_.memory_hits;
    }
    for (const Job& job : jobs)
        if (job.error) std::rethrow_exception(job.error);
    const size_t failed = static_cast<size_t>(std::count_if(jobs.begin(), jobs.end(), [](const Job& j) { return !j.entry; }));
    for (const Job& job : jobs)
        if (!job.entry) throw_compile_failure(*job.kernel, target, compiler_id_, job.failure_log, failed - 1);

    for (size_t i = 0; i < kernels.size(); ++i) {
        CompiledKernel& r = results[i];
        r.from = KernelFrom::Memory;
        if (job_of[i] != SIZE_MAX) {
            const Job& job = jobs[job_of[i]];
            found[i] = job.entry;
            if (job.kernel == &kernels[i]) {  // the others with its key are memory hits
                r.from = job.from;
                r.seconds = job.seconds;
            }
        }
        r.name = kernels[i].name;
        r.kind = target.kind;
        r.gpu_architecture = target.gpu_architecture;
        r.image = found[i]->image;
        r.log = found[i]->log;
        if (target.kind == ImageKind::Cubin) r.ptxas = parse_ptxas_info(r.log, r.name);
    }
    return results;
}

KernelCompiler::Stats KernelCompiler::counters() const {
    std::lock_guard<std::mutex> hold(mutex_);
    Stats s = counts_;
    s.memory_entries = memory_.size();
    s.memory_capacity = memory_.capacity();
    s.has_disk = disk_ != nullptr;
    return s;
}

KernelCompiler::Stats KernelCompiler::stats() const {
    Stats s = counters();
    if (disk_) {
        s.disk = disk_->stats();
        s.disk_problem = disk_->store_problem();
    }
    return s;
}

void KernelCompiler::clear() {
    {
        std::lock_guard<std::mutex> hold(mutex_);
        memory_.clear();
    }
    if (disk_) disk_->clear();
}

}  // namespace shoal::cuda
