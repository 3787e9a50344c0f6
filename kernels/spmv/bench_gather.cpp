// Standalone: how fast one core loads float32 x at random indices, by the size
// of x (in L1, L2, L3 or memory), with AVX2 gathers (8 lanes, two sums: the
// long rows' dot product of spmv_kernel_merge_avx2.cpp), the same gathers
// with the value and index streams prefetched 8 KiB ahead (as that dot
// product does once the matrix's arrays outgrow kSpmvArraysCachedBytes),
// scalar loads (four sums), and, streams prefetched as well: half of each 16
// lanes by scalar loads into a vector (`half`), all of them so (`lanes`), and
// AVX-512 gathers of 16 lanes (`zmm`, where the CPU has AVX-512F). Not in the
// meson build.
//   g++ -O3 -std=c++17 -mavx2 -mfma -pthread -o /tmp/bench_gather kernels/spmv/bench_gather.cpp
//   /tmp/bench_gather [threads]   (default 1; each thread its own indices, one x)
// Prints ns per loaded element, the median of 7 passes over 8e6 indices a
// thread (wall time of the slowest thread). Without the streams' prefetch a
// gathered element whose line is not in L1 cost about the same whether L2
// or L3 held it (the thirty-fifth session); with it, x in L2 (256 KiB) ran
// 1.5-1.8x faster than without and x of 1-4 MiB 1.0-1.4x (docs/performance.md,
// thirty-sixth session). None of the last three beat the AVX2 gather with x
// in L1, L2 or L3 (thirty-eighth session).
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

namespace {

float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// The value and index streams prefetched 8 KiB ahead of nonzero k, the address
// formed in integer arithmetic (past the arrays' end a prefetch never faults).
void streamsAhead(const float* v, const int32_t* idx, int64_t k) {
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(v + k) + 8192));
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(idx + k) + 8192));
}

// Eight lanes of x at idx[0 .. 7]: one AVX2 gather, or (Scalar) eight scalar
// loads into the vector.
template <bool Scalar> __m256 eight(const float* x, const int32_t* j) {
    if constexpr (Scalar) return _mm256_setr_ps(x[j[0]], x[j[1]], x[j[2]], x[j[3]], x[j[4]], x[j[5]], x[j[6]], x[j[7]]);
    return _mm256_i32gather_ps(x, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(j)), 4);
}

// 16 lanes a step, two sums. Pf: the streams prefetched (streamsAhead);
// Scalar: how many of the two halves of 8 lanes load by scalar loads (0: the
// library's gathers; 1: lanes 8-15, `half`; 2: all, `lanes`).
template <bool Pf, int Scalar = 0>
__attribute__((noinline)) float gathered(const float* v, const int32_t* idx, int64_t n, const float* x) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (int64_t k = 0; k + 16 <= n; k += 16) {
        if constexpr (Pf) streamsAhead(v, idx, k);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(v + k), eight<(Scalar >= 2)>(x, idx + k), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(v + k + 8), eight<(Scalar >= 1)>(x, idx + k + 8), a1);
    }
    return hsum(_mm256_add_ps(a0, a1));
}

__attribute__((noinline)) float scalar(const float* v, const int32_t* idx, int64_t n, const float* x) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int64_t k = 0; k + 4 <= n; k += 4) {
        s0 += v[k] * x[idx[k]];
        s1 += v[k + 1] * x[idx[k + 1]];
        s2 += v[k + 2] * x[idx[k + 2]];
        s3 += v[k + 3] * x[idx[k + 3]];
    }
    return s0 + s1 + s2 + s3;
}

// AVX-512 gathers, 16 lanes, two sums.
__attribute__((noinline, target("avx512f"))) float zmm(const float* v, const int32_t* idx, int64_t n, const float* x) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    for (int64_t k = 0; k + 32 <= n; k += 32) {
        streamsAhead(v, idx, k);
        streamsAhead(v, idx, k + 16);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(v + k), _mm512_i32gather_ps(_mm512_loadu_si512(idx + k), x, 4), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(v + k + 16), _mm512_i32gather_ps(_mm512_loadu_si512(idx + k + 16), x, 4), a1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

}  // namespace

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
    constexpr int64_t kPer = 8'000'000;
    std::vector<float> v(static_cast<size_t>(kPer) * threads, 1.0f);
    std::vector<int32_t> idx(v.size());
    std::mt19937 gen(1);
    volatile float sink = 0;
    std::printf("%d thread(s); ns per element loaded from x at random indices (per thread)\n", threads);
    using Fn = float (*)(const float*, const int32_t*, int64_t, const float*);
    std::vector<Fn> fns{gathered<false>, gathered<true>, scalar, gathered<true, 1>, gathered<true, 2>};
    std::printf("%10s %10s %10s %10s %10s %10s", "x KiB", "gather", "gather+pf", "scalar", "half", "lanes");
    if (__builtin_cpu_supports("avx512f")) {
        fns.push_back(zmm);
        std::printf(" %10s", "zmm");
    }
    std::printf("\n");
    for (int64_t cols : {4096L, 65536L, 262144L, 1000000L, 4000000L, 16000000L}) {
        std::vector<float> x(static_cast<size_t>(cols), 1.0f);
        for (auto& i : idx) i = static_cast<int32_t>(gen() % static_cast<uint32_t>(cols));
        std::printf("%10lld", static_cast<long long>(cols * 4 / 1024));
        for (Fn fn : fns) {
            std::vector<double> ns;
            for (int pass = 0; pass < 7; ++pass) {
                const auto t0 = std::chrono::steady_clock::now();
                std::vector<std::thread> pool;
                for (int t = 0; t < threads; ++t)
                    pool.emplace_back([&, t] { sink = sink + fn(v.data() + t * kPer, idx.data() + t * kPer, kPer, x.data()); });
                for (auto& th : pool) th.join();
                ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kPer);
            }
            std::sort(ns.begin(), ns.end());
            std::printf(" %10.3f", ns[3]);
        }
        std::printf("\n");
    }
    return 0;
}
