// Calls the functions kernels.shoal emits (finance.h) on a stream of its
// own, downloads the results and checks them against plain C++ loops.
// Exits 0 when every result matches, 1 on a mismatch or an error, 77 when
// there is no GPU to run on (a build machine).
#include <cmath>
#include <cstdio>
#include <vector>

#include "finance.h"

namespace {

int failures = 0;

void expect_close(const char* what, double got, double want) {
    const double tolerance = 1e-4 * std::max(1.0, std::fabs(want));
    if (std::fabs(got - want) > tolerance) {
        std::printf("MISMATCH %s: got %.7g, expected %.7g\n", what, got, want);
        ++failures;
    }
}

// Host copies of device results, for the checks.
template <class T>
std::vector<T> to_host(shoal::view<const T> v, cudaStream_t stream) {
    std::vector<T> host(static_cast<size_t>(v.size()));
    shoal::check(shoal::download(host.data(), v, stream));
    shoal::check(shoal::detail::cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
    return host;
}

double cnd(double d) {
    const double k = 1.0 / (1.0 + 0.2316419 * std::fabs(d));
    const double c = 0.39894228040143267793994605993438 * std::exp(-0.5 * d * d) *
                     (k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))));
    return d > 0 ? 1.0 - c : c;
}

}  // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("no GPU: built, not run\n");
        return 77;
    }
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    try {
        const long long n = 100000;
        std::vector<float> x(n), y(n), price(n), strike(n), years(n);
        for (long long i = 0; i < n; ++i) {
            x[i] = std::sin(0.001f * i);
            y[i] = static_cast<float>(i % 7);
            price[i] = 5.0f + 25.0f * ((i * 37) % 101) / 100.0f;
            strike[i] = 1.0f + 99.0f * ((i * 53) % 97) / 96.0f;
            years[i] = 0.25f + 9.75f * ((i * 29) % 89) / 88.0f;
        }
        shoal::device_array<float> dx, dy, dprice, dstrike, dyears, out, put;
        for (auto* a : {&dx, &dy, &dprice, &dstrike, &dyears}) shoal::check(a->allocate(n, stream));
        shoal::check(out.allocate(n, stream));
        shoal::check(put.allocate(n, stream));
        shoal::check(shoal::upload(dx.as_view(), x.data(), stream));
        shoal::check(shoal::upload(dy.as_view(), y.data(), stream));
        shoal::check(shoal::upload(dprice.as_view(), price.data(), stream));
        shoal::check(shoal::upload(dstrike.as_view(), strike.data(), stream));
        shoal::check(shoal::upload(dyears.as_view(), years.data(), stream));

        float r = 0;
        shoal::check(finance::rmse(dx, dy, &r, stream));
        double sq = 0;
        for (long long i = 0; i < n; ++i) sq += double(x[i] - y[i]) * (x[i] - y[i]);
        expect_close("rmse", r, std::sqrt(sq / n));
        std::printf("rmse = %.6f\n", r);

        // The same call with scratch memory of our own: it allocates nothing.
        shoal::device_array<unsigned char> scratch;
        shoal::check(scratch.allocate(static_cast<long long>(finance::rmse_workspace_bytes(dx, dy)), stream));
        float r2 = 0;
        shoal::check(finance::rmse(dx, dy, &r2, stream, {scratch.data(), static_cast<size_t>(scratch.size())}));
        expect_close("rmse with a workspace", r2, r);

        shoal::check(finance::saxpy(2.5f, dx, dy, out, stream));
        std::vector<float> z = to_host<float>(out, stream);
        for (long long i = 0; i < n; i += 997) expect_close("saxpy", z[i], 2.5f * x[i] + y[i]);
        std::printf("saxpy[12345] = %.6f\n", z[12345]);

        shoal::view<float> diff = shoal::make_view(out.data(), n - 1);  // part of a larger array
        shoal::check(finance::forwardDiff(dx, diff, stream));
        std::vector<float> d = to_host<float>(diff, stream);
        for (long long i = 0; i < n - 1; i += 991) expect_close("forwardDiff", d[i], x[i + 1] - x[i]);
        std::printf("forwardDiff[0] = %.8f\n", d[0]);

        shoal::device_array<float> kept;
        shoal::check(finance::positives(dx, kept, stream));
        std::vector<float> k = to_host<float>(kept, stream);
        long long want = 0;
        for (float v : x) want += v > 0;
        expect_close("positives count", static_cast<double>(k.size()), static_cast<double>(want));
        std::printf("positives: %zu of %lld\n", k.size(), n);

        shoal::check(finance::blackScholes(dprice, dstrike, dyears, out, put, stream));
        std::vector<float> call = to_host<float>(out, stream), putv = to_host<float>(put, stream);
        for (long long i = 0; i < n; i += 1009) {
            const double s = price[i], xs = strike[i], t = years[i], v = 0.30, rf = 0.02;
            const double d1 = (std::log(s / xs) + (rf + 0.5 * v * v) * t) / (v * std::sqrt(t));
            const double d2 = d1 - v * std::sqrt(t);
            const double e = std::exp(-rf * t);
            expect_close("call", call[i], s * cnd(d1) - xs * e * cnd(d2));
            expect_close("put", putv[i], xs * e * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1)));
        }
        std::printf("call[100] = %.5f, put[100] = %.5f\n", call[100], putv[100]);

        // A shape mismatch is a status, not a crash.
        const shoal::status bad = finance::saxpy(1.0f, dx, shoal::make_view<const float>(dy.data(), n - 1), out, stream);
        if (bad.code != shoal::status_code::shape_mismatch) {
            std::printf("MISMATCH: saxpy on views of different lengths returned '%s'\n", bad.message.c_str());
            ++failures;
        }
        std::printf("shape mismatch: %s\n", bad.message.c_str());
    } catch (const shoal::error& e) {
        std::printf("error: %s\n", e.what());
        return 1;
    }
    cudaStreamDestroy(stream);
    std::printf(failures ? "%d mismatches\n" : "all results match\n", failures);
    return failures ? 1 : 0;
}
