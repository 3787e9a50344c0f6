// Standalone test + benchmark of csymm_kernel_packed_cpu against
// csymm_kernel_ref_cpu (not part of the meson build). Build from the repo root:
//   g++ -O3 -std=c++17 -I. -Ihost/include -c kernels/csymm/csymm_ukernel_avx2.cpp -mavx2 -mfma
//   g++ -O3 -std=c++17 -I. -Ihost/include -c kernels/csymm/csymm_pack_avx2.cpp -mavx2 -mfma
//   g++ -O3 -std=c++17 -I. -Ihost/include -c kernels/csymm/csymm_ukernel_avx512.cpp -mavx512f
//   g++ -O3 -std=c++17 -I. -Ihost/include -DAL_CPU_DISPATCH=1 kernels/csymm/bench_csymm_kernel.cpp
//       kernels/csymm/csymm_{kernel_packed,kernel_ref,pack,ukernel_baseline}.cpp
//       csymm_ukernel_avx2.o csymm_pack_avx2.o csymm_ukernel_avx512.o host/csymm_tiling.cpp
//       host/runtime/cpu_device.cpp -lpthread -o bench_csymm
// AVX-512 logic on a CPU without AVX-512: also compile the AVX-512 TU with
//   -include immintrin.h -include kernels/csymm/bench_avx512_emu.h
//   -Dcsymm_ukernel_avx512_16x12=csymm_ukernel_avx512emu_16x12
// and this file with -DAL_BENCH_AVX512_EMU; the emulated kernel is then tested too.
// Usage: bench_csymm [test|bench|all] (default all). Exit status 1 on any mismatch.
// The benchmark prints GFLOP/s (8*m*n*k flops, median of repetitions) on
// cpuNumThreads() threads; compare with scipy.linalg.blas.csymm in the same run.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ascend_linalg/al_types.h"
#include "host/csymm_tiling.h"
#include "host/runtime/cpu_device.h"
#include "kernels/csymm/csymm_kernel.h"
#include "kernels/csymm/csymm_ukernel.h"

#ifdef AL_BENCH_AVX512_EMU
namespace al {
void csymm_ukernel_avx512emu_16x12(int64_t, const float*, const float*, float*, int64_t, int32_t,
                                   int32_t, const CsymmEpilogue&);
}
#endif

namespace {

using al::CsymmTilingData;
struct Cf {
    float re, im;
};
const float kNaN = std::numeric_limits<float>::quiet_NaN();
std::mt19937 rng(12345);

Cf rnd() {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    return Cf{d(rng), d(rng)};
}

struct Case {
    int side, uplo;
    int64_t m, n, padA, padB, padC;
    Cf alpha, beta;
    bool bRowMajor = false;  // B(i, j) at B[i*ldb + j] (CSYMM_CPU_B_ROW_MAJOR)
};

int64_t gChecked = 0, gFailed = 0, gShared = 0;

// Runs every block of `kernel` sequentially (block order must not matter).
void runBlocks(void (*kernel)(uint32_t, uint32_t, void* const*, const void*), const CsymmTilingData& t,
               void* const* args) {
    for (int32_t b = 0; b < t.usedCoreNum; ++b) kernel(b, t.usedCoreNum, args, &t);
}

const al::CsymmUkernel* gUk = nullptr;
void packedWithUk(uint32_t b, uint32_t nb, void* const* args, const void* t) {
    al::csymmPackedRun(*gUk, b, nb, args, t);
}

bool runCase(const Case& c, const al::CsymmPlatform& plat, const char* platName) {
    const int64_t ka = c.side == AL_SIDE_LEFT ? c.m : c.n;
    const int64_t lda = ka + c.padA, ldc = c.m + c.padC;
    // Column-major: ldb >= m, n columns; row-major: ldb >= n, m rows.
    const int64_t ldb = (c.bRowMajor ? c.n : c.m) + c.padB, bLines = c.bRowMajor ? c.m : c.n;
    const int64_t bLen = c.bRowMajor ? c.n : c.m;
    std::vector<Cf> A(lda * ka), B(ldb * bLines), C0(ldc * c.n);
    const bool upper = c.uplo == AL_FILL_UPPER;
    for (int64_t j = 0; j < ka; ++j)
        for (int64_t i = 0; i < lda; ++i) {
            const bool stored = i < ka && (upper ? i <= j : i >= j);
            A[i + j * lda] = stored ? rnd() : Cf{kNaN, kNaN};  // unreferenced: NaN
        }
    for (int64_t l = 0; l < bLines; ++l)
        for (int64_t i = 0; i < ldb; ++i) B[i + l * ldb] = i < bLen ? rnd() : Cf{kNaN, kNaN};
    const bool betaZero = c.beta.re == 0.0f && c.beta.im == 0.0f;
    for (int64_t j = 0; j < c.n; ++j)
        for (int64_t i = 0; i < ldc; ++i)
            C0[i + j * ldc] = (i >= c.m) ? Cf{-7.25f, 3.5f} : betaZero ? Cf{kNaN, kNaN} : rnd();
    CsymmTilingData t = al::csymmTiling(c.side, c.uplo, c.m, c.n, lda, ldb, ldc, c.alpha.re, c.alpha.im,
                                        c.beta.re, c.beta.im, plat);
    if (c.bRowMajor) t.cpuFlags |= al::CSYMM_CPU_B_ROW_MAJOR;
    std::vector<Cf> Cref = C0, Cout = C0;
    void* argsRef[3] = {A.data(), B.data(), Cref.data()};
    void* argsOut[3] = {A.data(), B.data(), Cout.data()};
    runBlocks(al::csymm_kernel_ref_cpu, t, argsRef);
    runBlocks(packedWithUk, t, argsOut);
    // Shared L (the host's CPU workspace): the same bits as private packing,
    // whichever block claims a slot (blocks run forwards, backwards, and on
    // the CPU device's threads).
    if (const int64_t wsBytes = al::csymmPackedWorkspaceBytesFor(*gUk, t); wsBytes > 0) {
        std::vector<char> wsMem(static_cast<size_t>(wsBytes) + 64);
        void* ws = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(wsMem.data()) + 63) / 64 * 64);
        CsymmTilingData ts = t;
        ts.cpuFlags |= al::CSYMM_CPU_SHARED_PACK;
        for (int order = 0; order < 3; ++order) {
            std::vector<Cf> Cs = C0;
            void* argsSh[4] = {A.data(), B.data(), Cs.data(), ws};
            al::csymmPackedWorkspaceInitFor(*gUk, ws, ts);
            if (order == 2) {
                const al::KernelDesc kd{"csymm_packed_uk", packedWithUk};
                al::cpuDevice().launch(kd, ts.usedCoreNum, argsSh, 4, &ts, sizeof ts);
            } else {
                for (int32_t i = 0; i < ts.usedCoreNum; ++i)
                    packedWithUk(order == 0 ? i : ts.usedCoreNum - 1 - i, ts.usedCoreNum, argsSh, &ts);
            }
            if (std::memcmp(Cs.data(), Cout.data(), sizeof(Cf) * Cs.size()) != 0) {
                ++gFailed;
                if (gFailed <= 20)
                    std::printf("FAIL %s %s side=%c uplo=%c m=%ld n=%ld: shared L (order %d) differs from private\n",
                                gUk->name, platName, c.side == AL_SIDE_LEFT ? 'L' : 'R', upper ? 'U' : 'L',
                                (long)c.m, (long)c.n, order);
                return false;
            }
        }
        ++gShared;
    }
    const float atol = std::ldexp(1.0f, -16), rtol = std::ldexp(1.0f, -10);
    int64_t bad = 0;
    double worst = 0;
    for (int64_t j = 0; j < c.n; ++j)
        for (int64_t i = 0; i < ldc; ++i) {
            const Cf r = Cref[i + j * ldc], o = Cout[i + j * ldc];
            if (i >= c.m) {  // padding: must be untouched
                if (std::memcmp(&o, &C0[i + j * ldc], sizeof(Cf)) != 0) ++bad;
                continue;
            }
            const float dr = std::fabs(o.re - r.re), di = std::fabs(o.im - r.im);
            const bool ok = dr <= atol + rtol * std::fabs(r.re) && di <= atol + rtol * std::fabs(r.im);
            if (!ok) ++bad;
            worst = std::max<double>(worst, std::max(dr, di));
        }
    ++gChecked;
    if (bad) {
        ++gFailed;
        if (gFailed <= 20)
            std::printf("FAIL %s %s side=%c uplo=%c m=%ld n=%ld pad=%ld/%ld/%ld%s alpha=(%g,%g) beta=(%g,%g): "
                        "%ld bad, max|d|=%g\n",
                        gUk->name, platName, c.side == AL_SIDE_LEFT ? 'L' : 'R', upper ? 'U' : 'L',
                        (long)c.m, (long)c.n, (long)c.padA, (long)c.padB, (long)c.padC, c.bRowMajor ? " rowB" : "", c.alpha.re,
                        c.alpha.im, c.beta.re, c.beta.im, (long)bad, worst);
    }
    return bad == 0;
}

void testAll() {
    const int64_t sizes[] = {1, 2, 3, 7, 15, 16, 17, 31, 33, 64, 100, 127, 129, 257};
    const Cf scalars[] = {{0, 0}, {1, 0}, {-1, 0}, {0, 1}, {0.75f, -0.375f}};
    struct Plat {
        const char* name;
        al::CsymmPlatform p;
    } plats[] = {{"cpu1", al::csymmPlatformCpu(1)}, {"cpu2", al::csymmPlatformCpu(2)},
                 {"cpu3", al::csymmPlatformCpu(3)}, {"cpu5", al::csymmPlatformCpu(5)},
                 {"ascend", al::csymmPlatformAscend950()}};
    int n = 0;
    const al::CsymmUkernel* builtIn = al::csymmUkernelTable(&n);
    std::vector<al::CsymmUkernel> table(builtIn, builtIn + n);
    std::vector<bool> supported;
    for (const auto& uk : table) supported.push_back(al::csymmUkernelSupported(uk));
#ifdef AL_BENCH_AVX512_EMU
    for (const auto& uk : table)
        if (std::string(uk.name) == "csymm_ukernel_avx512_16x12") {
            al::CsymmUkernel emu = uk;
            emu.name = "csymm_ukernel_avx512_16x12 (emulated)";
            emu.fn = al::csymm_ukernel_avx512emu_16x12;
            table.push_back(emu);
            supported.push_back(true);
            break;
        }
#endif
    for (size_t u = 0; u < table.size(); ++u) {
        gUk = &table[u];
        if (!supported[u]) {
            std::printf("skip %s (not supported by this CPU)\n", gUk->name);
            continue;
        }
        const int64_t before = gFailed, checkedBefore = gChecked;
        int variant = 0;
        for (int side : {AL_SIDE_LEFT, AL_SIDE_RIGHT})
            for (int uplo : {AL_FILL_UPPER, AL_FILL_LOWER})
                for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); ++si)
                    for (int shape = 0; shape < 3; ++shape) {
                        const int64_t m = sizes[si];
                        const int64_t nn = shape == 0 ? m : sizes[(si + 5 * shape) % 14];
                        const bool small = m * nn <= 64 * 64;
                        for (int a = 0; a < 5; ++a)
                            for (int b = 0; b < 5; ++b) {
                                ++variant;
                                // Large shapes: every alpha and every beta, not every pair.
                                if (!small && a != b && !(a == 4 || b == 4)) continue;
                                const int64_t pad = variant % 3 == 0 ? 0 : (variant % 3 == 1 ? 3 : 16);
                                Case c{side, uplo, m, nn, pad, (pad + 1) % 17, (pad + 5) % 17,
                                       scalars[a], scalars[b], variant % 4 == 1};
                                const Plat& pl = plats[variant % 5];
                                runCase(c, pl.p, pl.name);
                            }
                    }
        // Shapes where the blocks' rows span several mc row blocks, so the
        // shared-L workspace is used (column strips; tails in every dimension;
        // K <= 300, within the tolerance above).
        // {m, n, platform}: cpu2 (8 blocks) or cpu1 (4 blocks).
        const int64_t sharedShapes[2][3][3] = {{{300, 1100, 1}, {290, 600, 0}, {263, 400, 0}},  // LEFT: K = m
                                               {{520, 200, 0}, {777, 130, 0}, {600, 290, 0}}};  // RIGHT: K = n
        for (int side : {AL_SIDE_LEFT, AL_SIDE_RIGHT})
            for (int uplo : {AL_FILL_UPPER, AL_FILL_LOWER})
                for (const auto& sh : sharedShapes[side == AL_SIDE_LEFT ? 0 : 1]) {
                    ++variant;
                    Case c{side, uplo, sh[0], sh[1], variant % 3, (variant + 1) % 5, variant % 2,
                           scalars[4], scalars[variant % 5], variant % 2 == 0};
                    const Plat& pl = plats[sh[2]];
                    const int64_t sharedBefore = gShared;
                    runCase(c, pl.p, pl.name);
                    if (gShared == sharedBefore) {  // the shape no longer reaches the shared path
                        ++gFailed;
                        std::printf("FAIL %s: m=%ld n=%ld did not use the shared-L workspace\n", gUk->name,
                                    (long)c.m, (long)c.n);
                    }
                }
        std::printf("%s: %ld cases, %ld failed\n", gUk->name, (long)(gChecked - checkedBefore),
                    (long)(gFailed - before));
    }
}

double benchOne(int side, int64_t n, int reps) {
    const int64_t ka = n;
    std::vector<Cf> A(ka * ka), B(n * n), C(n * n);
    for (auto& x : A) x = rnd();
    for (auto& x : B) x = rnd();
    for (auto& x : C) x = rnd();
    CsymmTilingData t = al::csymmTiling(side, AL_FILL_UPPER, n, n, ka, n, n, 1.0f, 0.5f, 0.5f, 0.0f,
                                        al::csymmPlatformCpu(al::cpuNumThreads()));
    void* args[3] = {A.data(), B.data(), C.data()};
    const al::KernelDesc kd{"csymm_packed", al::csymm_kernel_packed_cpu};
    std::vector<double> ts;
    al::cpuDevice().launch(kd, t.usedCoreNum, args, 3, &t, sizeof t);  // warm up
    for (int r = 0; r < reps; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        al::cpuDevice().launch(kd, t.usedCoreNum, args, 3, &t, sizeof t);
        ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ts.begin(), ts.end());
    return 8.0 * n * n * n / ts[ts.size() / 2] / 1e9;
}

void benchAll() {
    std::printf("bench: %u threads, ukernel %s\n", al::cpuNumThreads(), al::csymmUkernelSelect().name);
    for (int64_t n : {256, 1024, 2048})
        for (int side : {AL_SIDE_LEFT, AL_SIDE_RIGHT}) {
            const int reps = n == 256 ? 41 : (n == 1024 ? 9 : 3);
            std::printf("ours   n=%-5ld side=%c %7.1f GFLOP/s\n", (long)n, side == AL_SIDE_LEFT ? 'L' : 'R',
                        benchOne(side, n, reps));
            std::fflush(stdout);
        }
}

}  // namespace

#ifndef AL_BENCH_NO_MAIN
int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "all";
    if (mode == "test" || mode == "all") {
        testAll();
        std::printf("correctness: %ld cases (%ld also with shared L), %ld failed\n", (long)gChecked, (long)gShared,
                    (long)gFailed);
    }
    if (mode == "bench" || mode == "all") benchAll();
    return gFailed ? 1 : 0;
}
#endif

// For a same-process comparison with scipy (ctypes, alternating calls on the
// same arrays): build this file with -shared -fPIC -DAL_BENCH_NO_MAIN and call
// al_bench_csymm(side, uplo, m, n, A, lda, B, ldb, C, ldc, alpha, beta) with
// alpha/beta as float[2]. Launches the packed kernel on the CPU device.
extern "C" int al_bench_csymm(int side, int uplo, int64_t m, int64_t n, const void* A, int64_t lda,
                              const void* B, int64_t ldb, void* C, int64_t ldc, const float* alpha,
                              const float* beta) {
    CsymmTilingData t = al::csymmTiling(side, uplo, m, n, lda, ldb, ldc, alpha[0], alpha[1], beta[0],
                                        beta[1], al::csymmPlatformCpu(al::cpuNumThreads()));
    void* args[3] = {const_cast<void*>(A), const_cast<void*>(B), C};
    const al::KernelDesc kd{"csymm_packed", al::csymm_kernel_packed_cpu};
    return al::cpuDevice().launch(kd, t.usedCoreNum, args, 3, &t, sizeof t);
}
