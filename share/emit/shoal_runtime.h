// shoal_runtime.h: the small runtime the C++ wrappers that Shoal's `:emit`
// writes depend on (docs/emit.md). It needs nothing but the CUDA Runtime and
// the C++17 standard library; `:emit` writes it next to the emitted files and
// replaces it only when it changes.
//
//   shoal::view<T, Rank>      device memory the caller owns: a pointer and extents
//   shoal::device_array<T>    an owning device array, allocated and freed on a stream
//   shoal::status             what every wrapper returns: ok, a CUDA error, a shape
//                             mismatch of the views, or a failed index check in a kernel
//   shoal::upload/download    copies between host and device on a stream
//   shoal::workspace          device memory a caller lends a call for its temporaries
//   shoal::check              throws shoal::error for a status that is not ok
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace shoal {

// Device memory the caller owns: `data` points to extent[0] * ... elements,
// row-major. Wrappers take inputs as view<const T> and write results into
// view<T>, so a result may be part of a larger array.
template <class T, int Rank = 1>
struct view {
    T* data = nullptr;
    long long extent[Rank] = {};

    long long size() const {
        long long n = 1;
        for (int k = 0; k < Rank; ++k) n *= extent[k];
        return n;
    }
    // A view<T> is also a view<const T>.
    template <class U = T, class = std::enable_if_t<!std::is_const_v<U>>>
    operator view<const U, Rank>() const {
        view<const U, Rank> v;
        v.data = data;
        for (int k = 0; k < Rank; ++k) v.extent[k] = extent[k];
        return v;
    }
};

// A one-dimensional view of n elements at p.
template <class T>
view<T> make_view(T* p, long long n) {
    view<T> v;
    v.data = p;
    v.extent[0] = n;
    return v;
}

enum class status_code : int {
    ok = 0,
    cuda_error,           // a CUDA Runtime call failed: `cuda` says which error
    shape_mismatch,       // the views' extents do not fit the function
    index_out_of_bounds,  // a kernel's index check failed (the Shoal program's error)
    invalid_workspace,    // the workspace lent is smaller than the call needs, or not 256-byte aligned
};

// What a wrapper returns. Errors found on the host (a shape mismatch, a
// failed CUDA call) return at once; a kernel's failed check is seen when the
// wrapper waits for its stream (docs/emit.md, "Errors").
struct status {
    status_code code = status_code::ok;
    cudaError_t cuda = cudaSuccess;
    std::string message;

    bool ok() const { return code == status_code::ok; }
    explicit operator bool() const { return ok(); }
};

// The exception of the throwing layer: shoal::check(status).
class error : public std::runtime_error {
public:
    explicit error(shoal::status s) : std::runtime_error(s.message), status_(std::move(s)) {}
    const shoal::status& status() const { return status_; }

private:
    shoal::status status_;
};

inline void check(const status& s) {
    if (!s.ok()) throw error(s);
}

namespace detail {

inline status cuda_failure(cudaError_t e, const char* what) {
    status s;
    s.code = status_code::cuda_error;
    s.cuda = e;
    s.message = std::string(what) + ": " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
    return s;
}

inline status cuda(cudaError_t e, const char* what) { return e == cudaSuccess ? status{} : cuda_failure(e, what); }

}  // namespace detail

// Returns from the enclosing function when a status is not ok.
#define SHOAL_TRY(expr)                                 \
    do {                                                \
        ::shoal::status shoal_try_status_ = (expr);     \
        if (!shoal_try_status_.ok()) return shoal_try_status_; \
    } while (0)

// An owning one-dimensional device array, allocated and freed in stream
// order (cudaMallocAsync / cudaFreeAsync on the stream it was made on).
template <class T>
class device_array {
public:
    device_array() = default;
    ~device_array() { reset(); }
    device_array(const device_array&) = delete;
    device_array& operator=(const device_array&) = delete;
    device_array(device_array&& o) noexcept { *this = std::move(o); }
    device_array& operator=(device_array&& o) noexcept {
        if (this != &o) {
            reset();
            data_ = std::exchange(o.data_, nullptr);
            size_ = std::exchange(o.size_, 0);
            stream_ = o.stream_;
        }
        return *this;
    }

    // Frees what it held, then allocates n elements on `stream`.
    status allocate(long long n, cudaStream_t stream) {
        reset();
        stream_ = stream;
        if (n <= 0) return status{};
        void* p = nullptr;
        SHOAL_TRY(detail::cuda(cudaMallocAsync(&p, static_cast<size_t>(n) * sizeof(T), stream), "cudaMallocAsync"));
        data_ = static_cast<T*>(p);
        size_ = n;
        return status{};
    }
    // Frees the memory on the stream it was allocated on.
    void reset() {
        if (data_) cudaFreeAsync(data_, stream_);
        data_ = nullptr;
        size_ = 0;
    }

    T* data() const { return data_; }
    long long size() const { return size_; }
    view<T> as_view() const { return make_view(data_, size_); }
    operator view<T>() const { return as_view(); }
    operator view<const T>() const { return make_view<const T>(data_, size_); }

private:
    T* data_ = nullptr;
    long long size_ = 0;
    cudaStream_t stream_ = nullptr;
};

// Host -> device and device -> host copies of n elements on a stream. The
// copy from pageable host memory is done when upload returns; download's
// destination is written once the stream reaches the copy.
template <class T>
status upload(view<T> dst, const T* host, cudaStream_t stream) {
    return detail::cuda(cudaMemcpyAsync(dst.data, host, static_cast<size_t>(dst.size()) * sizeof(T),
                                        cudaMemcpyHostToDevice, stream),
                        "cudaMemcpyAsync (upload)");
}
template <class T>
status download(T* host, view<const T> src, cudaStream_t stream) {
    return detail::cuda(cudaMemcpyAsync(host, src.data, static_cast<size_t>(src.size()) * sizeof(T),
                                        cudaMemcpyDeviceToHost, stream),
                        "cudaMemcpyAsync (download)");
}

// Device memory a caller lends a call (the last argument of every wrapper)
// for its temporaries: at least NAME_workspace_bytes(...) bytes, 256-byte
// aligned (as cudaMalloc's are). With one, the call allocates nothing whose
// size its arguments fix; without (data == nullptr, the default) it
// allocates its temporaries on the stream and frees them in stream order.
// The workspace may be reused by the next call on the same stream.
struct workspace {
    void* data = nullptr;
    size_t bytes = 0;
};

// What the wrappers use; not part of the API.
namespace detail {

// A temporary of n T's share of a workspace: rounded up to 256 bytes, so
// the next one starts aligned.
template <class T>
size_t workspace_share(long long n) {
    const size_t bytes = static_cast<size_t>(n > 0 ? n : 1) * sizeof(T);
    return (bytes + 255) / 256 * 256;
}

inline status shape_mismatch(const char* what, long long got, long long wanted) {
    status s;
    s.code = status_code::shape_mismatch;
    s.message = std::string(what) + ": got " + std::to_string(got) + ", expected " + std::to_string(wanted);
    return s;
}

// The memory a wrapper allocates, freed in stream order when it returns
// (also on an error path) unless released earlier; or, once a workspace is
// lent, carved from it (nothing to free).
class allocations {
public:
    explicit allocations(cudaStream_t stream) : stream_(stream) {}
    ~allocations() {
        for (void* p : held_) cudaFreeAsync(p, stream_);
    }
    allocations(const allocations&) = delete;
    allocations& operator=(const allocations&) = delete;

    // The caller's workspace, which must hold `needed` bytes (the function's
    // workspace query) for `function`'s temporaries.
    status lend(workspace w, size_t needed, const char* function) {
        status s;
        s.code = status_code::invalid_workspace;
        if (w.bytes < needed) {
            s.message = std::string(function) + ": the workspace has " + std::to_string(w.bytes) + " bytes; it needs " +
                        std::to_string(needed) + " (" + function + "_workspace_bytes)";
            return s;
        }
        if (reinterpret_cast<std::uintptr_t>(w.data) % 256 != 0) {
            s.message = std::string(function) + ": the workspace is not 256-byte aligned";
            return s;
        }
        lent_ = static_cast<char*>(w.data);
        left_ = w.bytes;
        return status{};
    }

    // n T's: from the workspace when one is lent, else on the stream.
    template <class T>
    status allocate(T** p, long long n) {
        if (!lent_) return allocate_on_stream(p, n);
        const size_t share = workspace_share<T>(n);
        if (share > left_) {  // the workspace query and the wrapper disagree: a bug in Shoal
            status s;
            s.code = status_code::invalid_workspace;
            s.message = "the workspace ran out (" + std::to_string(left_) + " bytes left for " + std::to_string(share) +
                        "): please report this Shoal bug";
            return s;
        }
        *p = reinterpret_cast<T*>(lent_);
        lent_ += share;
        left_ -= share;
        return status{};
    }
    // n T's on the stream: a temporary whose size depends on the data.
    template <class T>
    status allocate_on_stream(T** p, long long n) {
        void* raw = nullptr;
        const size_t bytes = static_cast<size_t>(n > 0 ? n : 1) * sizeof(T);
        SHOAL_TRY(cuda(cudaMallocAsync(&raw, bytes, stream_), "cudaMallocAsync"));
        held_.push_back(raw);
        *p = static_cast<T*>(raw);
        return status{};
    }
    // Frees one early (a workspace's share is not reused).
    template <class T>
    status release(T* p) {
        for (size_t k = 0; k < held_.size(); ++k)
            if (held_[k] == static_cast<const void*>(p)) {
                held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(k));
                return cuda(cudaFreeAsync(const_cast<void*>(static_cast<const void*>(p)), stream_), "cudaFreeAsync");
            }
        return status{};
    }

private:
    cudaStream_t stream_;
    std::vector<void*> held_;
    char* lent_ = nullptr;
    size_t left_ = 0;
};

// A launch's error record, laid out as the kernels' ShoalError.
struct error_record {
    unsigned long long key;
    int code;
    int lock;
    long long index;
    long long extent;
};
static_assert(sizeof(error_record) == 32, "the kernels' error record is 32 bytes");

inline status reset_errors(error_record* records, int n, cudaStream_t stream) {
    const std::vector<error_record> fresh(static_cast<size_t>(n), error_record{~0ull, -1, 0, 0, 0});
    // From pageable memory: the copy has read `fresh` when it returns.
    return cuda(cudaMemcpyAsync(records, fresh.data(), fresh.size() * sizeof(error_record), cudaMemcpyHostToDevice,
                                stream),
                "cudaMemcpyAsync (error records)");
}

inline status launched(const char* kernel, cudaStream_t) {
    const cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? status{} : cuda_failure(e, (std::string("launching ") + kernel).c_str());
}

// One element, read back to the host: waits for the stream.
template <class T>
status read_back(T* host, const T* device, cudaStream_t stream) {
    SHOAL_TRY(cuda(cudaMemcpyAsync(host, device, sizeof(T), cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync (read back)"));
    return cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

template <class T>
status copy(T* dst, const T* src, long long n, cudaStream_t stream) {
    if (n <= 0) return status{};
    return cuda(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * sizeof(T), cudaMemcpyDeviceToDevice, stream),
                "cudaMemcpyAsync (copy)");
}

inline std::string format_check(std::string message, long long index, long long extent) {
    const std::pair<const char*, long long> holes[] = {{"{index}", index}, {"{extent}", extent}};
    for (const auto& [hole, value] : holes)
        for (size_t at = message.find(hole); at != std::string::npos; at = message.find(hole))
            message.replace(at, std::strlen(hole), std::to_string(value));
    return message;
}

// Waits for the stream, then reports the first failed check in launch order.
inline status kernel_errors(const error_record* records, int n, const char* const* const* messages,
                            cudaStream_t stream) {
    std::vector<error_record> host(static_cast<size_t>(n));
    SHOAL_TRY(cuda(cudaMemcpyAsync(host.data(), records, host.size() * sizeof(error_record), cudaMemcpyDeviceToHost,
                                   stream),
                   "cudaMemcpyAsync (error records)"));
    SHOAL_TRY(cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
    for (int k = 0; k < n; ++k)
        if (host[static_cast<size_t>(k)].code >= 0) {
            const error_record& r = host[static_cast<size_t>(k)];
            status s;
            s.code = status_code::index_out_of_bounds;
            s.message = format_check(messages[k][r.code], r.index, r.extent);
            return s;
        }
    return status{};
}

}  // namespace detail

}  // namespace shoal
