#include "runtime/cuda/cuda_executor.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <map>
#include <set>
#include <thread>

#include "codegen/cuda_printer.h"
#include "codegen/thread_levels.h"
#include "lang/diagnostics.h"
#include "lang/lru_map.h"
#include "lang/scalar_semantics.h"
#include "runtime/background_threads.h"

namespace shoal::cuda {

namespace {

// The error record's value before a launch (cuda_printer.cpp).
constexpr ErrorRecord kNoError{~0ull, -1, 0, 0, 0};

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// The session's device: its API, stream and pool, the memory Shoal holds
// there and the transfers it made. Arrays keep it alive (shared_ptr): device
// memory stays valid after the executor is switched away.
class Device : public std::enable_shared_from_this<Device> {
public:
    Device(std::shared_ptr<CudaApi> api, int ordinal, DeviceInfo info)
        : api_(std::move(api)), ordinal_(ordinal), info_(std::move(info)) {
        check(api_->setDevice(ordinal_), "cudaSetDevice");
        check(api_->streamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
        check(api_->deviceGetDefaultMemPool(&pool_, ordinal_), "cudaDeviceGetDefaultMemPool");
        // Freed memory stays cached in the pool (as RMM's and CUDA.jl's
        // pools do): a session allocates the same sizes statement after
        // statement, and returning memory to the driver costs a sync.
        uint64_t keep = UINT64_MAX;
        check(api_->memPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
    }
    ~Device() {
        if (lost_ == cudaSuccess) {
            api_->streamSynchronize(stream_);
            loaded_.clear();  // unloads what no prepared plan still holds
            for (cudaEvent_t e : events_) api_->eventDestroy(e);
            for (void* page : registered_) api_->hostUnregister(page);
            api_->streamDestroy(stream_);
        }
    }

    CudaApi& api() { return *api_; }
    cudaStream_t stream() const { return stream_; }
    const DeviceInfo& info() const { return info_; }

    // Every runtime call's result goes through here. A sticky error (the
    // device is unusable until the process ends) names the kernels that may
    // have caused it: those launched since the host last waited.
    void check(cudaError_t e, const char* call) {
        if (e == cudaSuccess) return;
        const std::string what = std::string(api_->getErrorName(e)) + " (" + api_->getErrorString(e) + ")";
        if (!is_sticky(e)) user_error(ErrorKind::Runtime, Loc{}, std::string("CUDA error in ") + call + ": " + what);
        lost_ = e;
        // The queued copies will never run. Their host sources would stay
        // held here, and a host array holds its device copy, which holds
        // this device: a cycle that nothing would free.
        uploading_.clear();
        std::string culprit;
        if (!launched_.empty()) {
            const auto& [name, origin] = launched_.back();
            const std::string source = ir::source_comment(origin);
            culprit = " in kernel " + name + (source.empty() ? "" : " (" + source + ")");
            if (launched_.size() > 1)
                culprit += " or one of the " + std::to_string(launched_.size() - 1) + " kernels launched before it";
        }
        lost_reason_ = "the GPU stopped with " + what + culprit;
        user_error(ErrorKind::Runtime, Loc{}, lost_reason_);
    }
    const std::string& lost_reason() const { return lost_reason_; }
    void launched(const ir::Kernel& k, const Loc& origin) {
        launched_.emplace_back(k.name, origin);
        if (launched_.size() > 64) launched_.pop_front();
    }

    // Device memory from the pool. Out of memory: the pool's cached memory
    // goes back to the driver, the stream drains (its frees happen) and the
    // allocation is tried once more before the user hears of it.
    void* allocate(int64_t bytes) {
        if (const int64_t limit = memory_limit(); limit > 0 && bytes_held() + bytes > limit)
            user_error(ErrorKind::Runtime, Loc{},
                       "out of device memory under the limit: tried to allocate " + human_bytes(bytes) +
                           "; Shoal holds " + human_bytes(bytes_held()) + " in " + std::to_string(live_.size()) +
                           " array" + (live_.size() == 1 ? "" : "s") + largest_held() + " of its limit of " +
                           human_bytes(limit),
                       {"`:set memlimit N` changes the limit; :mem lists the arrays with their bindings"});
        void* p = nullptr;
        const size_t asked = static_cast<size_t>(std::max<int64_t>(bytes, 1));  // a pointer even for no elements
        cudaError_t e = api_->mallocFromPoolAsync(&p, asked, pool_, stream_);
        if (e == cudaErrorMemoryAllocation) {
            api_->getLastError();  // not sticky: clear it
            synchronise();
            check(api_->memPoolTrimTo(pool_, 0), "cudaMemPoolTrimTo");
            e = api_->mallocFromPoolAsync(&p, asked, pool_, stream_);
            if (e == cudaErrorMemoryAllocation) {
                api_->getLastError();
                size_t free = 0, total = 0;
                api_->memGetInfo(&free, &total);
                user_error(ErrorKind::Runtime, Loc{},
                           "out of device memory: tried to allocate " + human_bytes(bytes) + "; " +
                               human_bytes(static_cast<int64_t>(free)) + " free of " +
                               human_bytes(static_cast<int64_t>(total)) + "; Shoal holds " + human_bytes(bytes_held()) +
                               " in " + std::to_string(live_.size()) + " array" + (live_.size() == 1 ? "" : "s") +
                               largest_held(),
                           {":mem lists them with their bindings; rebinding a name releases its array"});
            }
        }
        check(e, "cudaMallocFromPoolAsync");
        return p;
    }
    // The memory left for Shoal's arrays (lang/memory_limit.h): the device's
    // free memory and what the pool keeps for reuse.
    MemoryRoom room() {
        size_t free = 0, total = 0;
        uint64_t reserved = 0, used = 0;
        if (lost() || api_->memGetInfo(&free, &total) != cudaSuccess) return {"GPU memory", -1, bytes_held()};
        if (api_->memPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
            api_->memPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess)
            reserved = used = 0;
        return {"GPU memory", static_cast<int64_t>(free + reserved - std::min(reserved, used)), bytes_held()};
    }
    // Every array in device memory, for `:mem`.
    void track(const ir::DeviceArray* a) { live_.insert(a); }
    void untrack(const ir::DeviceArray* a) { live_.erase(a); }
    const std::set<const ir::DeviceArray*>& live() const { return live_; }
    int64_t bytes_held() const {
        int64_t bytes = 0;
        for (const ir::DeviceArray* a : live_) bytes += a->bytes();
        return bytes;
    }
    cudaMemPool_t pool() const { return pool_; }

    // " (largest 32.0 GiB)" when Shoal holds arrays.
    std::string largest_held() const {
        int64_t largest = 0;
        for (const ir::DeviceArray* a : live_) largest = std::max(largest, a->bytes());
        return live_.empty() ? "" : " (largest " + human_bytes(largest) + ")";
    }

    // Stream-ordered: the memory is reused only after the work queued before.
    void release(void* p) noexcept {
        if (lost_ == cudaSuccess) api_->freeAsync(p, stream_);  // a lost device's memory is gone with it
    }

    void upload(void* device, const ArrayPtr& host) {
        check(api_->memcpyAsync(device, host->bytes.data(), host->bytes.size(), cudaMemcpyHostToDevice, stream_),
              "cudaMemcpyAsync (to the device)");
        uploading_.push_back(host);  // read when the copy runs: alive until then
        transfers_.to_device_bytes += static_cast<int64_t>(host->bytes.size());
        ++transfers_.to_device_copies;
    }
    void download(void* host, const void* device, int64_t bytes) {
        check(api_->memcpyAsync(host, device, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, stream_),
              "cudaMemcpyAsync (to the host)");
        transfers_.to_host_bytes += bytes;
        ++transfers_.to_host_copies;
    }
    // The host waits for everything queued on the session's stream. A
    // cancel flag set meanwhile (Ctrl-C; the session clears it before each
    // statement) may have stopped a kernel at a cancel point, leaving its
    // results unfinished: the statement is interrupted, whichever wait sees it.
    void synchronise() {
        check(api_->streamSynchronize(stream_), "cudaStreamSynchronize");
        uploading_.clear();
        launched_.clear();
        for (const auto& [flag, device] : cancel_addresses_)
            if (static_cast<const std::atomic<bool>*>(flag)->load())
                user_error(ErrorKind::Interrupted, Loc{}, "interrupted");
    }

    // The device's address of a cancel flag (the session's; or one nobody
    // sets), which a kernel with cancel points reads through the bus: its
    // page is page-locked and mapped once (docs/cuda-backend.md, "Stopping a
    // long kernel"). Where that fails, kernels read a zero in device memory
    // and Ctrl-C waits for the kernel, as it did before.
    void* cancel_address(const std::atomic<bool>* flag) {
        const void* host = flag ? static_cast<const void*>(flag) : static_cast<const void*>(&never_cancelled_);
        auto it = cancel_addresses_.find(host);
        if (it != cancel_addresses_.end()) return it->second;
        void* page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(host) & ~uintptr_t{4095});
        void* device = nullptr;
        cudaError_t e = api_->hostRegister(page, 4096, cudaHostRegisterMapped);
        if (e == cudaSuccess) registered_.push_back(page);
        if (e == cudaSuccess || e == cudaErrorHostMemoryAlreadyRegistered)
            e = api_->hostGetDevicePointer(&device, const_cast<void*>(host), 0);
        if (e != cudaSuccess) {
            api_->getLastError();  // not sticky: clear it
            if (!zero_) {
                zero_ = allocate(8);
                check(api_->memsetAsync(zero_, 0, 8, stream_), "cudaMemsetAsync (cancel flag)");
            }
            device = zero_;
        }
        return cancel_addresses_.emplace(host, device).first->second;
    }

    // The kernel compiled from `source`, loaded once per session.
    struct Loaded {
        cudaLibrary_t library = nullptr;
        cudaKernel_t kernel = nullptr;
        bool polls_cancel = false;  // its last parameter is the cancel flag's address
    };
    std::shared_ptr<const Loaded> find_loaded(const std::string& source) {
        const auto* found = loaded_.find(source);
        return found ? *found : nullptr;
    }
    std::shared_ptr<const Loaded> load(const std::string& source, const std::string& image, const ir::Kernel& k) {
        api_->describe_image(image, k);
        Loaded l;
        l.polls_cancel = ir::has_cancel_points(k);
        check(api_->libraryLoadData(&l.library, image.data()), "cudaLibraryLoadData");
        const cudaError_t e = api_->libraryGetKernel(&l.kernel, l.library, k.name.c_str());
        if (e != cudaSuccess) api_->libraryUnload(l.library);
        check(e, "cudaLibraryGetKernel");
        // Unloaded when the last plan using it and the cache have let go,
        // after the work queued before (a kernel may still be running).
        std::shared_ptr<const Loaded> loaded(new Loaded(l), [this](const Loaded* p) {
            if (lost_ == cudaSuccess) {
                api_->streamSynchronize(stream_);
                api_->libraryUnload(p->library);
            }
            delete p;
        });
        return loaded_.insert(source, loaded);
    }
    size_t loaded_count() const { return loaded_.size(); }
    static constexpr size_t kLoadedCapacity = 1024;

    // Events for timing launches, reused (creating one costs a driver call).
    cudaEvent_t take_event() {
        if (events_.empty()) {
            cudaEvent_t e = nullptr;
            check(api_->eventCreate(&e), "cudaEventCreate");
            return e;
        }
        cudaEvent_t e = events_.back();
        events_.pop_back();
        return e;
    }
    void give_event(cudaEvent_t e) { events_.push_back(e); }

    bool lost() const { return lost_ != cudaSuccess; }
    const TransferCounters& transfers() const { return transfers_; }

private:
    std::shared_ptr<CudaApi> api_;
    int ordinal_;
    DeviceInfo info_;
    cudaStream_t stream_ = nullptr;
    cudaMemPool_t pool_ = nullptr;
    cudaError_t lost_ = cudaSuccess;
    std::string lost_reason_;
    std::deque<std::pair<std::string, Loc>> launched_;  // kernel name, builtin call: since the last wait
    TransferCounters transfers_;
    std::vector<ArrayPtr> uploading_;  // host sources of copies the stream has not run yet
    LruMap<std::string, std::shared_ptr<const Loaded>> loaded_{kLoadedCapacity};  // by CUDA source
    std::set<const ir::DeviceArray*> live_;
    std::vector<cudaEvent_t> events_;
    std::atomic<bool> never_cancelled_{false};
    std::map<const void*, void*> cancel_addresses_;  // a cancel flag's host address -> its device address
    std::vector<void*> registered_;                  // page-locked pages
    void* zero_ = nullptr;                           // device memory holding 0: no flag could be mapped
};

// An array in the device's memory, freed (stream-ordered) with its last reference.
using LoadedKernels = std::vector<std::shared_ptr<const Device::Loaded>>;

class DeviceMemory final : public ir::DeviceArray {
public:
    DeviceMemory(std::shared_ptr<Device> device, ir::ScalarType elem, int64_t count)
        : DeviceArray(elem, count), device_(std::move(device)), ptr_(device_->allocate(bytes())) {
        device_->track(this);
    }
    ~DeviceMemory() override {
        device_->untrack(this);
        device_->release(ptr_);
    }

    const void* device() const override { return device_.get(); }
    void read(void* host) const override {
        device_->download(host, ptr_, bytes());
        device_->synchronise();
    }
    void* ptr() const { return ptr_; }

private:
    std::shared_ptr<Device> device_;
    void* ptr_;
};

// One run of a plan: the host program's steps in order (launch_plan.h).
class PlanRun {
public:
    PlanRun(Device& device, std::shared_ptr<Device> owner, const ir::LaunchPlan& plan,
            const LoadedKernels& kernels, const ir::PlanBindings& bindings,
            const ir::RunOptions& options)
        : device_(device), owner_(std::move(owner)), plan_(plan), kernels_(kernels), options_(options) {
        outcome_.kernel_counters.resize(plan.kernels.size());
        outcome_.scalars = bindings.scalars;
        for (const auto& [name, data] : bindings.inputs) bound_[name] = resident(data);
    }

    ir::PlanOutcome run() {
        // SHOAL_CUDA_HOST_TIMES=1: the host's time in each kind of step, per
        // plan, on stderr (where a statement's wall time goes beyond its kernels').
        static const bool host_times = std::getenv("SHOAL_CUDA_HOST_TIMES") != nullptr;
        if (host_times) return run_timing_steps();
        for (const ir::PlanStep& s : plan_.steps) run_step(s);
        return finish();
    }

private:
    ir::PlanOutcome finish() {
        raise_if_cancelled();
        raise_pending_checks();
        raise_if_cancelled();  // a kernel stopped at a cancel point while the host waited
        measure_launches();
        for (const std::string& name : plan_.entry.outputs) outcome_.outputs[name] = ir::ArrayData{nullptr, bound_.at(name)};
        return std::move(outcome_);
    }

    ir::PlanOutcome run_timing_steps() {
        using Clock = std::chrono::steady_clock;
        auto us = [](Clock::duration d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); };
        static const char* kKinds[] = {"compute", "alloc", "launch", "check", "read back", "free", "call"};
        std::array<Clock::duration, std::size(kKinds)> spent{};
        std::array<int, std::size(kKinds)> steps{};
        const auto started = Clock::now();
        for (const ir::PlanStep& s : plan_.steps) {
            const auto before = Clock::now();
            run_step(s);
            spent[static_cast<size_t>(s.kind)] += Clock::now() - before;
            ++steps[static_cast<size_t>(s.kind)];
        }
        const auto ending = Clock::now();
        ir::PlanOutcome outcome = finish();
        const auto end = Clock::now();
        std::string line = "host times, plan " + plan_.name + ": ";
        for (size_t k = 0; k < steps.size(); ++k)
            if (steps[k]) line += std::string(kKinds[k]) + " " + std::to_string(steps[k]) + " x " + std::to_string(us(spent[k]) / steps[k]) + " us, ";
        line += "final wait " + std::to_string(us(end - ending)) + " us, in all " + std::to_string(us(end - started)) + " us\n";
        std::fputs(line.c_str(), stderr);
        return outcome;
    }

    // Ctrl-C: the kernels still queued or running stop at their next cancel
    // point while the flag is set, so the host waits for them before the
    // statement ends (the session clears the flag for the next one).
    void raise_if_cancelled() {
        if (!options_.cancel || !options_.cancel->load()) return;
        device_.synchronise();
        user_error(ErrorKind::Interrupted, Loc{}, "interrupted");
    }

    void run_step(const ir::PlanStep& s) {
        raise_if_cancelled();
        switch (s.kind) {
            case ir::StepKind::Compute: {
                const ir::PlanScalar* v = plan_.find_scalar(s.scalar);
                outcome_.scalars[s.scalar] = ir::eval_host(v->value, lookup_);
                break;
            }
            case ir::StepKind::Alloc: allocate(s.buffer); break;
            case ir::StepKind::Launch: launch(s); break;
            case ir::StepKind::Check: copy_error_record(s.kernel); break;
            case ir::StepKind::ReadBack: read_back(s); break;
            case ir::StepKind::Call: call(s); break;
            case ir::StepKind::Free: bound_.erase(s.buffer); break;
        }
    }

    // The device memory of an input: its own, its host array's copy, or a
    // fresh upload that the host array keeps.
    std::shared_ptr<DeviceMemory> resident(const ir::ArrayData& data) {
        if (data.device && data.device->device() == &device_)
            return std::static_pointer_cast<DeviceMemory>(data.device);
        // Another executor's memory comes through the host.
        const ArrayPtr host = data.host ? data.host
                                        : ir::host_array(data, ir::buffer_prim(data.device->elem()), Shape{data.device->count()});
        if (auto* copy = dynamic_cast<DeviceMemory*>(host->device_copy.get().get()); copy && copy->device() == &device_)
            return std::static_pointer_cast<DeviceMemory>(host->device_copy.get());
        const ir::ScalarType elem = ir::scalar_of(host->elem);
        auto memory = std::make_shared<DeviceMemory>(owner_, elem, host->size());
        device_.upload(memory->ptr(), host);
        host->device_copy.set(memory);
        return memory;
    }

    ir::HostValue scalar(const std::string& name) const {
        auto it = outcome_.scalars.find(name);
        SHOAL_INTERNAL_ASSERT(it != outcome_.scalars.end(), "cuda executor: scalar " + name + " used before its step");
        return it->second;
    }

    void allocate(const std::string& name) {
        const ir::PlanBuffer* b = plan_.find_buffer(name);
        const int64_t n = std::max<int64_t>(0, ir::eval_host_int(b->count, lookup_));
        // Sized now (a filter's or tally's output): refused before it is
        // attempted, with the message the CPU executor gives.
        check_array_size(ir::buffer_prim(b->elem), Shape{n}, [this] { return device_.room(); });
        auto memory = std::make_shared<DeviceMemory>(owner_, b->elem, n);
        // Check mode: fresh memory reads as NaN / -1, as on the CPU executor.
        if (options_.check && memory->bytes() > 0)
            device_.check(device_.api().memsetAsync(memory->ptr(), 0xff, static_cast<size_t>(memory->bytes()),
                                                    device_.stream()),
                          "cudaMemsetAsync");
        bound_[name] = std::move(memory);
    }

    const std::shared_ptr<DeviceMemory>& buffer(const std::string& name) const {
        auto it = bound_.find(name);
        SHOAL_INTERNAL_ASSERT(it != bound_.end(), "cuda executor: buffer " + name + " used before its step");
        return it->second;
    }

    // A scalar argument stored as the kernel's parameter type declares it.
    static std::array<std::byte, 8> argument(ir::ScalarType t, const ir::HostValue& v) {
        std::array<std::byte, 8> bytes{};
        auto put = [&bytes](auto x) { std::memcpy(bytes.data(), &x, sizeof x); };
        const bool from_float = ir::is_float(v.type);
        const int64_t i = from_float ? scalar::saturate<int64_t>(v.f) : v.i;  // NaN, inf: no UB
        const double f = from_float ? v.f : static_cast<double>(v.i);
        switch (t) {
            case ir::ScalarType::Bool: put(static_cast<bool>(i)); break;
            case ir::ScalarType::I32: put(static_cast<int32_t>(i)); break;
            case ir::ScalarType::U32: put(static_cast<uint32_t>(i)); break;
            case ir::ScalarType::I64: put(i); break;
            case ir::ScalarType::U64: put(static_cast<uint64_t>(i)); break;
            case ir::ScalarType::F32: put(static_cast<float>(f)); break;
            case ir::ScalarType::F64: put(f); break;
        }
        return bytes;
    }

    void launch(const ir::PlanStep& s) {
        const size_t k = static_cast<size_t>(s.kernel);
        const ir::Kernel& kernel = plan_.kernels[k];
        const int64_t grid = ir::eval_host_int(s.grid, lookup_);
        if (grid <= 0) return;  // an empty launch (launch_plan.h)
        SHOAL_INTERNAL_ASSERT(grid <= 0x7fffffff, "cuda executor: grid of " + std::to_string(grid) + " blocks");
        // The arguments in the printed parameter order: buffers as device
        // pointers, scalars by value, the error record last.
        std::vector<std::array<std::byte, 8>> values;
        values.reserve(kernel.params.size() + 1);
        for (const ir::Param& p : kernel.params) {
            if (p.kind == ir::ParamKind::Scalar) {
                values.push_back(argument(p.type, scalar(p.name)));
                continue;
            }
            void* ptr = buffer(p.name)->ptr();
            values.emplace_back();
            std::memcpy(values.back().data(), &ptr, sizeof ptr);
        }
        if (!kernel.checks.empty()) {
            auto& record = records_[k];
            if (!record) record = std::make_shared<DeviceMemory>(owner_, ir::ScalarType::U64, sizeof(ErrorRecord) / 8);
            device_.check(device_.api().memcpyAsync(record->ptr(), &kNoError, sizeof kNoError, cudaMemcpyHostToDevice,
                                                    device_.stream()),
                          "cudaMemcpyAsync (error record)");
            void* ptr = record->ptr();
            values.emplace_back();
            std::memcpy(values.back().data(), &ptr, sizeof ptr);
        }
        if (kernels_[k]->polls_cancel) {  // the cancel flag's address, last
            void* ptr = device_.cancel_address(options_.cancel);
            values.emplace_back();
            std::memcpy(values.back().data(), &ptr, sizeof ptr);
        }
        std::vector<void*> args;
        for (auto& v : values) args.push_back(v.data());
        Timing t{k, nullptr, nullptr};
        if (options_.timed) {
            t.start = device_.take_event();
            device_.check(device_.api().eventRecord(t.start, device_.stream()), "cudaEventRecord");
        }
        device_.check(device_.api().launchKernel(kernels_[k]->kernel, dim3(static_cast<unsigned>(grid)),
                                                 dim3(static_cast<unsigned>(kernel.block_size)), args.data(), 0,
                                                 device_.stream()),
                      "cudaLaunchKernel");
        if (options_.timed) {
            t.end = device_.take_event();
            device_.check(device_.api().eventRecord(t.end, device_.stream()), "cudaEventRecord");
            timings_.push_back(t);
        }
        device_.launched(kernel, options_.origin);
        ++outcome_.kernel_counters[k].launches;
        ++outcome_.total.launches;
    }

    // A library call (codegen/library_calls.h): cuBLAS or cuSOLVER on the
    // session's stream, in order with the launches around it.
    void call(const ir::PlanStep& s) {
        if (s.grid && ir::eval_host_int(s.grid, lookup_) == 0) return;
        const ir::ScalarType t = buffer(s.call.writes[0])->elem();
        const char* precision = t == ir::ScalarType::F32 ? " (float)" : " (double)";
        Timing timing{0, nullptr, nullptr, outcome_.calls.size()};
        if (options_.timed) {
            timing.start = device_.take_event();
            device_.check(device_.api().eventRecord(timing.start, device_.stream()), "cudaEventRecord");
        }
        cudaError_t e;
        ir::CallCounters counters;
        if (s.call.function == "lu") {
            const ir::LuShape shape = ir::lu_shape(s.call, lookup_);
            const std::vector<std::string>& w = s.call.writes;
            e = device_.api().lu(device_.stream(), t, shape, buffer(w[0])->ptr(), buffer(w[1])->ptr(), buffer(w[2])->ptr(),
                                 buffer(w[3])->ptr());
            counters = ir::lu_counters(s, shape, t, device_.api().solver() + ": getrf + getrs" + precision);
        } else if (s.call.function == "svd") {
            const ir::SvdShape shape = ir::svd_shape(s.call, lookup_);
            const std::vector<std::string>& w = s.call.writes;
            e = device_.api().svd(device_.stream(), t, shape, buffer(w[0])->ptr(), buffer(w[1])->ptr(), buffer(w[2])->ptr(),
                                  buffer(w[3])->ptr(), buffer(w[4])->ptr());
            counters = ir::svd_counters(s, shape, t, device_.api().solver() + ": gesvdj" + precision);
        } else {
            SHOAL_INTERNAL_ASSERT(s.call.function == "gemm", "cuda executor: no library function " + s.call.function);
            const ir::GemmShape g = ir::gemm_shape(s.call, lookup_);
            e = device_.api().gemm(device_.stream(), t, g, buffer(s.call.reads[0])->ptr(), buffer(s.call.reads[1])->ptr(),
                                   buffer(s.call.writes[0])->ptr());
            counters = ir::gemm_counters(s, g, t, device_.api().blas() + ": gemm" + precision);
        }
        if (e == cudaErrorUnknown && !device_.api().blas_error().empty())
            user_error(ErrorKind::Runtime, Loc{},
                       (s.call.function == "lu" ? "solve: " : s.call.function == "svd" ? "lstsq: " : "matmul: ") +
                           device_.api().blas_error());
        device_.check(e, s.call.function == "lu"    ? "cusolverDnGetrf"
                         : s.call.function == "svd" ? "cusolverDnGesvdj"
                                                    : "cublasGemm");
        if (options_.timed) {
            timing.end = device_.take_event();
            device_.check(device_.api().eventRecord(timing.end, device_.stream()), "cudaEventRecord");
            timings_.push_back(timing);
        }
        outcome_.calls.push_back(std::move(counters));
    }

    // A Check step: the record comes to the host with the stream; it is
    // looked at when the host next waits (a read-back, or the plan's end).
    void copy_error_record(int kernel) {
        auto it = records_.find(static_cast<size_t>(kernel));
        if (it == records_.end()) return;  // never launched (an empty grid)
        pending_.push_back({kernel, {}});
        device_.download(&pending_.back().record, it->second->ptr(), sizeof(ErrorRecord));
    }
    void raise_pending_checks() {
        if (pending_.empty()) return;
        device_.synchronise();
        // The first failed check in step order, as the CPU executor raises it.
        for (const Pending& p : pending_)
            if (p.record.code >= 0) {
                const Pending failed = p;
                pending_.clear();
                ir::raise_failed_check(plan_.kernels[static_cast<size_t>(failed.kernel)], failed.record.code,
                                       failed.record.index, failed.record.extent);
            }
        pending_.clear();
    }

    void read_back(const ir::PlanStep& s) {
        const std::shared_ptr<DeviceMemory>& b = buffer(s.buffer);
        const int64_t index = ir::eval_host_int(s.index, lookup_);
        SHOAL_INTERNAL_ASSERT(index >= 0 && index < b->count(),
                              "cuda executor: read back " + s.buffer + "[" + std::to_string(index) + "] out of range");
        const int64_t size = static_cast<int64_t>(ir::scalar_size(b->elem()));
        std::array<std::byte, 8> element{};
        device_.download(element.data(), static_cast<const std::byte*>(b->ptr()) + index * size, size);
        device_.synchronise();
        raise_pending_checks();  // a failed check explains a strange value
        outcome_.scalars[s.scalar] = ir::load_element(b->elem(), element.data());
    }

    // Timed runs wait for their kernels: each launch's time between its events.
    void measure_launches() {
        if (timings_.empty()) return;
        device_.synchronise();
        for (const Timing& t : timings_) {
            float ms = 0;
            device_.check(device_.api().eventElapsedTime(&ms, t.start, t.end), "cudaEventElapsedTime");
            const auto ns = static_cast<int64_t>(static_cast<double>(ms) * 1e6);
            if (t.call != kNoCall) {
                outcome_.calls[t.call].nanoseconds += ns;
            } else {
                outcome_.kernel_counters[t.kernel].nanoseconds += ns;
                outcome_.total.nanoseconds += ns;
            }
            device_.give_event(t.start);
            device_.give_event(t.end);
        }
        timings_.clear();
    }

    struct Pending {
        int kernel;
        ErrorRecord record;
    };
    static constexpr size_t kNoCall = SIZE_MAX;
    struct Timing {
        size_t kernel;
        cudaEvent_t start, end;
        size_t call = kNoCall;  // a library call's (index in outcome_.calls), not a kernel's
    };

    Device& device_;
    std::shared_ptr<Device> owner_;
    const ir::LaunchPlan& plan_;
    const LoadedKernels& kernels_;
    const ir::RunOptions& options_;
    ir::PlanOutcome outcome_;
    std::map<std::string, std::shared_ptr<DeviceMemory>> bound_;
    std::map<size_t, std::shared_ptr<DeviceMemory>> records_;  // per kernel with checks
    std::deque<Pending> pending_;  // stable addresses: copies land there
    std::vector<Timing> timings_;  // timed runs: per launch
    std::function<ir::HostValue(const std::string&)> lookup_ = [this](const std::string& n) { return scalar(n); };
};

class CudaExecutor final : public ir::PlanExecutor {
public:
    CudaExecutor(std::shared_ptr<Device> device, std::shared_ptr<KernelCompiler> compiler)
        : device_(std::move(device)), compiler_(std::move(compiler)) {}

    std::string name() const override { return "cuda"; }
    // Products call cuBLAS where it loads; else they stay generated kernels.
    bool has_library(const std::string& function) const override {
        if (function == "lu" || function == "svd") return !device_->api().solver().empty();
        return function == "gemm" && !device_->api().blas().empty();
    }
    std::string lost_reason() const override { return device_->lost_reason(); }
    std::string cache_report() const override {
        return "GPU modules loaded: " + std::to_string(device_->loaded_count()) + " (at most " +
               std::to_string(Device::kLoadedCapacity) + "); plans with their kernels found: " +
               std::to_string(prepared_.size()) + " (at most " + std::to_string(prepared_.capacity()) + ")";
    }
    TransferCounters transfers() const override { return device_->transfers(); }
    std::string gpu_arch() const override { return device_->info().arch(); }
    std::pair<int, std::string> parallel_units() const override { return {device_->info().sms, "SM"}; }
    CompileCounters compilation() const override {
        const KernelCompiler::Stats s = compiler_->counters();
        return {static_cast<int64_t>(s.misses), s.compile_seconds, static_cast<int64_t>(s.memory_hits + s.disk_hits)};
    }

    std::string memory_report(const std::map<const ir::DeviceArray*, std::string>& names) const override {
        Device& d = *device_;
        size_t free = 0, total = 0;
        d.check(d.api().memGetInfo(&free, &total), "cudaMemGetInfo");
        uint64_t reserved = 0, used = 0;
        d.check(d.api().memPoolGetAttribute(d.pool(), cudaMemPoolAttrReservedMemCurrent, &reserved),
                "cudaMemPoolGetAttribute");
        d.check(d.api().memPoolGetAttribute(d.pool(), cudaMemPoolAttrUsedMemCurrent, &used), "cudaMemPoolGetAttribute");
        std::vector<const ir::DeviceArray*> arrays(d.live().begin(), d.live().end());
        std::sort(arrays.begin(), arrays.end(), [](auto* a, auto* b) { return a->bytes() > b->bytes(); });
        std::string text = "device memory on " + d.info().name + ": " + human_bytes(d.bytes_held()) + " in " +
                           std::to_string(arrays.size()) + " array" + (arrays.size() == 1 ? "" : "s") + ", " +
                           human_bytes(static_cast<int64_t>(reserved - std::min(reserved, used))) +
                           " cached by the pool; the device has " + human_bytes(static_cast<int64_t>(free)) +
                           " free of " + human_bytes(static_cast<int64_t>(total));
        constexpr size_t kShown = 8;
        for (size_t i = 0; i < arrays.size() && i < kShown; ++i) {
            auto it = names.find(arrays[i]);
            text += "\n  " + human_bytes(arrays[i]->bytes()) + "  " +
                    (it != names.end() ? it->second : "(no binding: an intermediate result or a value inside a function)");
        }
        if (arrays.size() > kShown) text += "\n  ... and " + std::to_string(arrays.size() - kShown) + " smaller";
        return text;
    }
    MemoryRoom memory_room() const override { return device_->room(); }
    std::string device_report() const override {
        const DeviceInfo& d = device_->info();
        size_t free = 0, total = 0;
        const bool known = device_->api().memGetInfo(&free, &total) == cudaSuccess;
        std::string text = "GPU 0: " + d.name + "\n  compute capability " + std::to_string(d.major) + "." +
                           std::to_string(d.minor) + " (" + d.arch() + "), " + std::to_string(d.sms) + " SMs\n  memory " +
                           human_bytes(d.memory_bytes) +
                           (known ? ", " + human_bytes(static_cast<int64_t>(free)) + " free" : "") +
                           "\n  driver: CUDA " + version_string(d.driver_version) + "; runtime: " + d.runtime + " " +
                           version_string(d.runtime_version);
        if (device_->lost()) text += "\n  unusable: " + device_->lost_reason();
        return text;
    }
    std::string description() const override {
        const DeviceInfo& d = device_->info();
        return d.name + " (" + d.arch() + ", " + std::to_string(d.sms) + " SMs, " + human_bytes(d.memory_bytes) + "; " +
               d.runtime + " " + version_string(d.runtime_version) + ")";
    }

    ir::PlanOutcome run(const std::shared_ptr<const ir::LaunchPlan>& plan, const ir::PlanBindings& bindings,
                        const ir::RunOptions& options) override {
        if (device_->lost()) user_error(ErrorKind::Runtime, Loc{}, device_->lost_reason());
        const LoadedKernels kernels = load(plan, options.origin, options.cancel);  // a copy: the cache may evict
        return PlanRun(*device_, device_, *plan, kernels, bindings, options).run();
    }

private:
    // The plan's kernels, each compiled and loaded once per session (the
    // missing ones compile together, in parallel), remembered per plan
    // while the plan lives so a cached plan's run prints no source. A copy
    // of a plan with its checks at other source positions (the same
    // statement on another line: launch_plan.h relocated_from) has the same
    // device code and shares the original's entry: printing and verifying
    // a plan's kernels to find them loaded took ~1 ms a plan on an H100's
    // host, more than the kernels of most statements.
    LoadedKernels load(const std::shared_ptr<const ir::LaunchPlan>& running, const Loc& origin,
                       const std::atomic<bool>* cancel) {
        const std::shared_ptr<const ir::LaunchPlan>& plan = running->relocated_from ? running->relocated_from : running;
        Prepared* found = prepared_.find(plan.get());
        if (found && found->plan.lock() == plan) return found->kernels;
        Prepared& p = found ? *found : prepared_.insert(plan.get(), Prepared{});  // the same plan (an address may be reused by a later one)
        p.plan.reset();  // until every kernel is loaded (compiling may throw)
        p.kernels.assign(plan->kernels.size(), nullptr);
        std::vector<std::string> sources;
        std::vector<KernelSource> missing;
        std::vector<size_t> where;
        for (size_t k = 0; k < plan->kernels.size(); ++k) {
            sources.push_back(ir::print_cuda_for_device({plan->kernels[k]}));
            if ((p.kernels[k] = device_->find_loaded(sources[k]))) continue;
            missing.push_back({plan->kernels[k].name, sources[k], ir::source_comment(origin)});
            where.push_back(k);
        }
        if (!missing.empty()) {
            const std::vector<CompiledKernel> images = compile(missing, cancel);
            SHOAL_INTERNAL_ASSERT(images.size() == missing.size(), "cuda executor: the compiler returned too few images");
            for (size_t m = 0; m < missing.size(); ++m)
                p.kernels[where[m]] = device_->load(sources[where[m]], images[m].image, plan->kernels[where[m]]);
        }
        p.plan = plan;
        return p.kernels;
    }

    struct Prepared {
        std::weak_ptr<const ir::LaunchPlan> plan;
        LoadedKernels kernels;
    };

    // NVRTC on a thread of its own while this one watches `cancel`: Ctrl-C
    // abandons the wait, not the compile, whose images land in the
    // compiler's caches for the next run (NVRTC cannot be stopped midway).
    struct Compiling {
        std::vector<KernelSource> kernels;
        std::vector<CompiledKernel> images;
        std::exception_ptr error;
    };
    std::vector<CompiledKernel> compile(const std::vector<KernelSource>& kernels, const std::atomic<bool>* cancel) {
        const std::string arch = device_->info().arch();
        if (!cancel) return compiler_->compile(kernels, arch);
        auto c = std::make_shared<Compiling>();
        c->kernels = kernels;
        const auto done = compiles_.start([compiler = compiler_, arch, c] {
            try {
                c->images = compiler->compile(c->kernels, arch);
            } catch (...) {
                c->error = std::current_exception();
            }
        });
        runtime::wait_unless_cancelled([&done] { return done->load(); }, *cancel, std::chrono::milliseconds(1));
        if (c->error) std::rethrow_exception(c->error);
        return std::move(c->images);
    }
    // Compiles Ctrl-C abandoned: joined once done, or when the executor ends.
    runtime::BackgroundThreads compiles_;

    std::shared_ptr<Device> device_;
    std::shared_ptr<KernelCompiler> compiler_;
    // Per plan, while it lives; the least recently run plan goes beyond the cap.
    LruMap<const ir::LaunchPlan*, Prepared> prepared_{1024};
};

}  // namespace

Probe probe_device(CudaApi& api, int device) {
    Probe p;
    int count = 0;
    const cudaError_t e = api.getDeviceCount(&count);
    int runtime = 0, driver = 0;
    api.runtimeGetVersion(&runtime);
    api.driverGetVersion(&driver);
    p.info.runtime = api.name();
    p.info.runtime_version = runtime;
    p.info.driver_version = driver;
    if (e == cudaErrorInsufficientDriver) {
        p.why_not = driver == 0 ? "no CUDA driver" : "the CUDA driver supports CUDA " + version_string(driver) +
                                                         "; Shoal's runtime needs " + version_string(runtime);
        return p;
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && count <= device)) {
        p.why_not = "no CUDA device";
        return p;
    }
    if (e != cudaSuccess) {
        p.why_not = std::string("CUDA cannot start: ") + api.getErrorName(e) + " (" + api.getErrorString(e) + ")";
        return p;
    }
    cudaDeviceProp prop{};
    if (const cudaError_t pe = api.getDeviceProperties(&prop, device); pe != cudaSuccess) {
        p.why_not = std::string("cannot read the device's properties: ") + api.getErrorName(pe);
        return p;
    }
    p.info.name = prop.name;
    p.info.major = prop.major;
    p.info.minor = prop.minor;
    p.info.sms = prop.multiProcessorCount;
    p.info.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    if (prop.major < 7) p.why_not = p.info.name + " has compute capability " + std::to_string(prop.major) + "." +
                                    std::to_string(prop.minor) + "; Shoal's kernels need 7.0 or later";
    return p;
}

std::shared_ptr<ir::PlanExecutor> make_cuda_executor(std::shared_ptr<CudaApi> api,
                                                     std::shared_ptr<KernelCompiler> compiler, int device) {
    const Probe p = probe_device(*api, device);
    if (!p.why_not.empty()) user_error(ErrorKind::Runtime, Loc{}, p.why_not);
    return std::make_shared<CudaExecutor>(std::make_shared<Device>(std::move(api), device, p.info), std::move(compiler));
}

}  // namespace shoal::cuda
