// Calls the wrappers seeds.shoal emits on the inputs it defines and prints
// each result on a line, as the reference evaluator prints it there;
// run_seeds.py compares the two. Some calls lend a workspace (one too
// small must fail cleanly), one indexes out of bounds (a status).
// Exits 77 without a device to run on.
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "seeds.h"

namespace {

cudaStream_t stream;

template <class T>
struct Device {
    shoal::device_array<T> array;
    explicit Device(const std::vector<T>& host) {
        shoal::check(array.allocate(static_cast<long long>(host.size()), stream));
        shoal::check(shoal::upload(array.as_view(), host.data(), stream));
    }
    explicit Device(long long n) { shoal::check(array.allocate(n, stream)); }
    operator shoal::view<const T>() const { return array; }
    operator shoal::view<T>() const { return array; }
    std::vector<T> host() const {
        std::vector<T> h(static_cast<size_t>(array.size()));
        shoal::check(shoal::download(h.data(), shoal::view<const T>(array), stream));
        shoal::check(shoal::detail::cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
        return h;
    }
};

std::string text(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}
std::string text(int v) { return std::to_string(v); }

template <class T>
std::string text(const std::vector<T>& v, size_t from = 0, size_t n = std::string::npos) {
    std::string s = "[";
    const size_t end = n == std::string::npos ? v.size() : from + n;
    for (size_t k = from; k < end; ++k) s += (k > from ? ", " : "") + text(v[k]);
    return s + "]";
}

void print(const std::string& s) { std::printf("%s\n", s.c_str()); }

// A row-major matrix as the evaluator prints it: [[...], [...]].
std::string matrix_text(const std::vector<float>& h, size_t rows, size_t cols) {
    std::string s = "[";
    for (size_t row = 0; row < rows; ++row) s += (row ? ", " : "") + text(h, row * cols, cols);
    return s + "]";
}

// A rows x cols view of a device array.
template <class T>
shoal::view<T, 2> matrix(const Device<std::remove_const_t<T>>& d, long long rows, long long cols) {
    shoal::view<T, 2> v;
    v.data = d.array.data();
    v.extent[0] = rows;
    v.extent[1] = cols;
    return v;
}

// A workspace of the bytes a query asks for.
struct Workspace {
    shoal::device_array<unsigned char> memory;
    explicit Workspace(size_t bytes) { shoal::check(memory.allocate(static_cast<long long>(bytes), stream)); }
    shoal::workspace lend() const { return {memory.data(), static_cast<size_t>(memory.size())}; }
};

}  // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("no GPU\n");
        return 77;
    }
    shoal::check(shoal::detail::cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate"));
    try {
        const int n = 10000;
        std::vector<float> xs(n), ys(n), u(16 * 16);
        std::vector<int> ks(n), fives(n), in_range(100), out_of_range(100);
        for (int i = 0; i < n; ++i) {
            xs[i] = static_cast<float>((i * 37) % 101) * 0.01f;
            ys[i] = static_cast<float>((i * 53) % 97) * 0.02f - 1.0f;
            ks[i] = (i * 31) % 17 - 8;
            fives[i] = i % 5;
        }
        for (int i = 0; i < 16; ++i)
            for (int j = 0; j < 16; ++j) u[i * 16 + j] = i == 0 ? 1.0f : static_cast<float>((i * 16 + j) % 5) * 0.1f;
        for (int i = 0; i < 100; ++i) {
            in_range[i] = (i * 13) % n;
            out_of_range[i] = i == 42 ? n + 5 : i;
        }
        Device<float> dxs(xs), dys(ys);
        Device<int> dks(ks);

        {  // with a workspace of exactly the size its query gives
            Device<float> r(n);
            Workspace w(seeds::addSum_workspace_bytes(dxs, dys));
            shoal::check(seeds::addSum(dxs, dys, r, stream, w.lend()));
            print(text(r.host()));
        }
        {
            float r = 0;
            shoal::check(seeds::sdot(dxs, dys, &r, stream));
            print(text(r));
        }
        {
            Device<float> du(u), r(16 * 16);
            shoal::check(seeds::affine(0.5f, matrix<const float>(du, 16, 16), matrix<float>(r, 16, 16), stream));
            print(matrix_text(r.host(), 16, 16));
        }
        {
            Device<int> r(n);
            Workspace w(seeds::prefixSum_workspace_bytes(dks));
            shoal::check(seeds::prefixSum(dks, r, stream, w.lend()));
            print(text(r.host()));
            shoal::check(seeds::prefixSumExclusive(dks, r, stream));
            print(text(r.host()));
        }
        {
            Device<int> r(10);
            shoal::check(seeds::histogram(dxs, r, stream));
            print(text(r.host()));
        }
        {
            Device<float> r(n);
            Workspace w(seeds::sorted_workspace_bytes(dys));
            shoal::check(seeds::sorted(dys, r, stream, w.lend()));
            print(text(r.host()));
        }
        {  // the filter's output is sized by the data: on the stream, beside the workspace
            float r = 0;
            Workspace w(seeds::sumPositives_workspace_bytes(dys));
            shoal::check(seeds::sumPositives(dys, &r, stream, w.lend()));
            print(text(r));
        }
        {
            float lo = 0, hi = 0;
            shoal::check(seeds::range(dys, &lo, &hi, stream));
            print("(" + text(lo) + ", " + text(hi) + ")");
        }
        {
            Device<int> b(fives), r(n);
            shoal::check(seeds::quotients(dks, b, r, stream));
            print(text(r.host()));
        }
        {
            Device<int> good(in_range), bad(out_of_range);
            Device<float> r(100);
            shoal::check(seeds::pick(dxs, good, r, stream));
            print(text(r.host()));
            const shoal::status s = seeds::pick(dxs, bad, r, stream);
            print(s.code == shoal::status_code::index_out_of_bounds ? "index_out_of_bounds: " + s.message
                                                                      : "NOT index_out_of_bounds: " + s.message);
        }
        {
            Device<float> r(1000);
            shoal::check(seeds::ramp(1000, 0.5f, r, stream));
            print(text(r.host()));
        }
        {  // 2-D slices: the 4-point stencil of a 16 x 16 grid is 14 x 14
            Device<float> du(u), r(14 * 14);
            shoal::check(seeds::jacobi(matrix<const float>(du, 16, 16), matrix<float>(r, 14, 14), stream));
            print(matrix_text(r.host(), 14, 14));
        }
        {
            Device<float> r(n - 1);
            shoal::check(seeds::fwd(dxs, r, stream));
            print(text(r.host()));
        }
        {  // float permutes, deterministic: bins (10 targets), sorted by target (2000)
            Device<float> r(10), s(2000);
            shoal::check(seeds::weighted(dxs, r, stream));
            print(text(r.host()));
            shoal::check(seeds::spread(dxs, s, stream));
            print(text(s.host()));
        }
        {  // a workspace smaller than the query asks for is refused before anything runs
            Device<float> r(n);
            const size_t needed = seeds::sorted_workspace_bytes(dys);
            Workspace w(needed / 2);
            const shoal::status s = seeds::sorted(dys, r, stream, w.lend());
            print(s.code == shoal::status_code::invalid_workspace ? "invalid_workspace: " + s.message
                                                                    : "NOT invalid_workspace: " + s.message);
        }
    } catch (const shoal::error& e) {
        std::printf("error: %s\n", e.what());
        return 1;
    }
    cudaStreamDestroy(stream);
    return 0;
}
