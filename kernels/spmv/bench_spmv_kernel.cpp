// Standalone check + benchmark of the merge-path SpMV kernels (not in the meson build).
//   g++ -O3 -std=c++17 -I. -Ihost/include -mavx2 -mfma -c kernels/spmv/spmv_kernel_merge_avx2.cpp -o /tmp/spmv_avx2.o
//   g++ -O3 -std=c++17 -I. -Ihost/include -mavx2 -mfma -c kernels/spmv/spmvt_kernel_merge_avx2.cpp -o /tmp/spmvt_avx2.o
//   g++ -O3 -std=c++17 -I. -Ihost/include -DAL_CPU_DISPATCH=1 -o /tmp/bench_spmv
//       kernels/spmv/bench_spmv_kernel.cpp kernels/spmv/spmv_kernel_ref.cpp
//       kernels/spmv/spmv_kernel_merge.cpp kernels/spmv/spmvt_kernel_merge.cpp
//       host/spmv_tiling.cpp host/spmv_host.cpp host/context.cpp
//       host/runtime/cpu_device.cpp host/runtime/acl_device.cpp host/runtime/acl_locate.cpp host/fingerprint.cpp /tmp/spmv_avx2.o /tmp/spmvt_avx2.o -ldl -lpthread
//   (baseline only: drop -DAL_CPU_DISPATCH=1 and the .o; -fsanitize=address,undefined works too)
//   /tmp/bench_spmv [check|bench|all] [matrix name filter for bench, e.g. powlaw]
// check: every kernel variant vs the reference kernels on edge-case matrices, all
// types, block counts 1..8, and malformed structure (must flag). bench:
// BENCH_THREADS threads (default 2), GB/s of values+indices+indptr+x+y
// traffic, STREAM triad in the same run, and the time of scipy's sparsetools
// loop (one thread, same arrays) with the ratio scipy/alSpmv (> 1: ours faster);
// wall times are medians of 15 rounds, each timing one call of ours and one of
// the scipy loop. "kernels ideal": the kernels launched directly, each launch
// counted at its slowest block's thread CPU time (the wall time with a free
// core per block), best of 9.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <new>
#include <sys/mman.h>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ascend_linalg/al_sparse.h"
#include "host/runtime/cpu_device.h"
#include "host/spmv_tiling.h"
#include "kernels/spmv/spmv_kernel.h"
#include "kernels/spmv/spmv_kernel_merge.h"

using namespace al;

namespace {

// Large arrays advised onto transparent huge pages, as numpy does for its
// arrays (>= 4 MiB): what alSpmv sees when called from Python.
template <class T> struct HugeAlloc {
    using value_type = T;
    HugeAlloc() = default;
    template <class U> HugeAlloc(const HugeAlloc<U>&) {}
    T* allocate(size_t n) {
        const size_t bytes = (n * sizeof(T) + (size_t(2) << 20) - 1) / (size_t(2) << 20) * (size_t(2) << 20);
        void* p = std::aligned_alloc(size_t(2) << 20, bytes);
        if (!p) throw std::bad_alloc();
        madvise(p, bytes, MADV_HUGEPAGE);
        return static_cast<T*>(p);
    }
    void deallocate(T* p, size_t) { std::free(p); }
    template <class U> bool operator==(const HugeAlloc<U>&) const { return true; }
    template <class U> bool operator!=(const HugeAlloc<U>&) const { return false; }
};
template <class T> using HVec = std::vector<T, HugeAlloc<T>>;

size_t vbytes(int t) { return t == AL_R_32F || t == AL_R_32I ? 4 : t == AL_C_64F ? 16 : 8; }
bool isInt(int t) { return t == AL_R_32I || t == AL_R_64I; }
bool isCx(int t) { return t == AL_C_32F || t == AL_C_64F; }
int comps(int t) { return isCx(t) ? 2 : 1; }
double eps(int t) { return t == AL_R_32F || t == AL_C_32F ? 1.2e-7 : 2.3e-16; }

// Element i (component j) of a typed buffer as double, and the reverse.
double getd(const void* p, int t, int64_t i, int j = 0) {
    switch (t) {
        case AL_R_32F: return static_cast<const float*>(p)[i];
        case AL_R_64F: return static_cast<const double*>(p)[i];
        case AL_C_32F: return static_cast<const float*>(p)[2 * i + j];
        case AL_C_64F: return static_cast<const double*>(p)[2 * i + j];
        case AL_R_32I: return static_cast<const int32_t*>(p)[i];
        default: return double(static_cast<const int64_t*>(p)[i]);
    }
}
void setd(void* p, int t, int64_t i, double v, double w = 0) {
    switch (t) {
        case AL_R_32F: static_cast<float*>(p)[i] = float(v); break;
        case AL_R_64F: static_cast<double*>(p)[i] = v; break;
        case AL_C_32F: static_cast<float*>(p)[2 * i] = float(v); static_cast<float*>(p)[2 * i + 1] = float(w); break;
        case AL_C_64F: static_cast<double*>(p)[2 * i] = v; static_cast<double*>(p)[2 * i + 1] = w; break;
        case AL_R_32I: static_cast<int32_t*>(p)[i] = int32_t(v); break;
        default: static_cast<int64_t*>(p)[i] = int64_t(v); break;
    }
}

struct Csr {
    int64_t rows = 0, cols = 0, nnz = 0;
    int itype = AL_INDEX_32I, vtype = AL_R_64F;
    std::vector<int64_t> ptr, idx;  // int64 master copy
    HVec<unsigned char> p8, i8, v8;  // typed arrays the kernels read
    void pack() {
        size_t ib = itype == AL_INDEX_64I ? 8 : 4;
        p8.assign(ptr.size() * ib, 0);
        i8.assign(std::max<size_t>(idx.size(), 1) * ib, 0);
        for (size_t i = 0; i < ptr.size(); ++i) {
            if (ib == 8) reinterpret_cast<int64_t*>(p8.data())[i] = ptr[i];
            else reinterpret_cast<int32_t*>(p8.data())[i] = int32_t(ptr[i]);
        }
        for (size_t i = 0; i < idx.size(); ++i) {
            if (ib == 8) reinterpret_cast<int64_t*>(i8.data())[i] = idx[i];
            else reinterpret_cast<int32_t*>(i8.data())[i] = int32_t(idx[i]);
        }
    }
};

std::mt19937_64 rng(12345);
double urand() { return std::uniform_real_distribution<double>(-1, 1)(rng); }

// shape: 0 random, 1 empty rows + one huge row, 2 all empty, 3 duplicates+unsorted.
Csr makeCsr(int64_t rows, int64_t cols, int shape, int itype, int vtype, bool special) {
    Csr a;
    a.rows = rows; a.cols = cols; a.itype = itype; a.vtype = vtype;
    a.ptr.assign(size_t(rows + 1), 0);
    for (int64_t r = 0; r < rows; ++r) {
        int64_t len = 0;
        if (cols > 0) {
            if (shape == 0) len = int64_t(rng() % 9);
            else if (shape == 1) len = (r == rows / 2) ? 3000 + int64_t(rng() % 2000) : (rng() % 4 == 0 ? int64_t(rng() % 5) : 0);
            else if (shape == 3) len = int64_t(rng() % 40);
        }
        for (int64_t k = 0; k < len; ++k) a.idx.push_back(int64_t(rng() % uint64_t(cols)));
        if (shape != 3) std::sort(a.idx.end() - len, a.idx.end());
        a.ptr[size_t(r + 1)] = int64_t(a.idx.size());
    }
    a.nnz = int64_t(a.idx.size());
    a.v8.assign(std::max<size_t>(size_t(a.nnz), 1) * vbytes(vtype), 0);
    for (int64_t k = 0; k < a.nnz; ++k) {
        if (isInt(vtype)) setd(a.v8.data(), vtype, k, double(int64_t(rng() % 2001) - 1000) * (vtype == AL_R_64I ? 1e6 : 1e3));
        else setd(a.v8.data(), vtype, k, urand(), urand());
        if (special && !isInt(vtype) && rng() % 500 == 0)
            setd(a.v8.data(), vtype, k, rng() % 2 ? NAN : INFINITY, 0.5);
    }
    a.pack();
    return a;
}

// Runs `entry` for nb blocks on the pool (really concurrent).
struct Launch { CpuKernelEntry e; uint32_t nb; void* const* args; const void* t; };
void launch(CpuKernelEntry e, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    Launch l{e, nb, args, &t};
    parallelFor(nb, [](uint32_t i, void* p) { auto* l = static_cast<Launch*>(p); l->e(i, l->nb, l->args, l->t); }, &l);
}

struct Run {
    std::vector<unsigned char> y;
    int32_t status;
};

// One product with either the reference (fast=false, 1 block) or merge kernels (nb blocks).
Run runKernels(const Csr& a, int trans, const std::vector<unsigned char>& x, const std::vector<unsigned char>& y0,
               int64_t nvec, int64_t xrs, int64_t xcs, int64_t yrs, int64_t ycs, const unsigned char* alpha,
               const unsigned char* beta, int32_t mode, bool fast, uint32_t nb) {
    SpmvTilingData t = spmvTiling(trans, a.rows, a.cols, a.nnz, nvec, a.vtype, a.itype, nb);
    t.usedCoreNum = int32_t(nb);
    spmvLayout(&t);
    t.xRowStride = xrs; t.xColStride = xcs; t.yRowStride = yrs; t.yColStride = ycs;
    t.betaMode = mode;
    std::memcpy(t.alpha, alpha, 16);
    std::memcpy(t.beta, beta, 16);
    std::vector<unsigned char> ws(size_t(t.workspaceSize) + 64, 0xCD);
    std::memset(ws.data(), 0, 64);
    Run r{y0, 0};
    void* args[6] = {const_cast<unsigned char*>(a.p8.data()), const_cast<unsigned char*>(a.i8.data()),
                     const_cast<unsigned char*>(a.v8.data()), const_cast<unsigned char*>(x.data()), r.y.data(), ws.data()};
    if (!fast) {
        for (uint32_t b = 0; b < nb; ++b) (trans ? spmvt_kernel_ref_cpu : spmv_kernel_ref_cpu)(b, nb, args, &t);
        if (trans) for (uint32_t b = 0; b < nb; ++b) spmvt_reduce_ref_cpu(b, nb, args, &t);
    } else if (!trans) {
        launch(spmv_kernel_merge_cpu, nb, args, t);
        spmv_fixup_merge_cpu(0, 1, args, &t);
    } else {
        launch(spmvt_kernel_merge_cpu, nb, args, t);
        launch(spmvt_reduce_merge_cpu, nb, args, t);
    }
    std::memcpy(&r.status, ws.data(), 4);
    return r;
}

int failures = 0, checks = 0;

bool close(double ref, double got, double tol) {
    if (std::isnan(ref)) return std::isnan(got);
    if (std::isinf(ref)) return got == ref;
    return std::fabs(ref - got) <= tol;
}

void checkCase(const Csr& a, int trans, int64_t nvec, bool colMajorX, const char* what) {
    const int t = a.vtype;
    const int64_t xl = trans ? a.rows : a.cols, yl = trans ? a.cols : a.rows;
    const size_t vb = vbytes(t);
    // X/Y: element (i, v) at i*rs + v*cs, with a gap of 1 in the row-major case.
    int64_t xrs = colMajorX ? 1 : nvec + 1, xcs = colMajorX ? std::max<int64_t>(xl, 1) : 1;
    int64_t yrs = colMajorX ? nvec : 1, ycs = colMajorX ? 1 : std::max<int64_t>(yl, 1);
    std::vector<unsigned char> x(size_t(std::max<int64_t>(xl, 1) * (nvec + 1)) * vb + 16, 0);
    std::vector<unsigned char> y0(size_t(std::max<int64_t>(yl, 1) * (nvec + 1)) * vb + 16, 0);
    for (int64_t i = 0; i < xl; ++i)
        for (int64_t v = 0; v < nvec; ++v)
            setd(x.data(), t, i * xrs + v * xcs, isInt(t) ? double(int64_t(rng() % 200) - 100) : urand(), urand());
    for (int64_t i = 0; i < yl; ++i)
        for (int64_t v = 0; v < nvec; ++v)
            setd(y0.data(), t, i * yrs + v * ycs, isInt(t) ? double(int64_t(rng() % 200) - 100) : urand(), urand());
    struct AB { double a, ai, b, bi; int32_t mode; };
    // alpha == 1, beta == 0 first: the transposed kernel's scatter into y itself.
    const AB abs[] = {{1, 0, 0, 0, SPMV_BETA_ZERO}, {1.5, 0.5, 0, 0, SPMV_BETA_ZERO}, {-2, 0.25, 1, 0, SPMV_BETA_ONE},
                      {0.75, -1, -0.5, 2, SPMV_BETA_GENERAL}, {0, 0, 2, 0, SPMV_BETA_GENERAL},
                      {1, 0, -0.0, 0, SPMV_BETA_GENERAL}};
    for (const AB& ab : abs) {
        unsigned char al[16] = {0}, be[16] = {0};
        setd(al, t, 0, ab.a, ab.ai);
        setd(be, t, 0, ab.b, ab.bi);
        std::vector<unsigned char> yin = y0;
        if (ab.mode == SPMV_BETA_ZERO && !isInt(t))  // beta == 0 must never read Y
            for (int64_t i = 0; i < yl; ++i)
                for (int64_t v = 0; v < nvec; ++v) setd(yin.data(), t, i * yrs + v * ycs, NAN, NAN);
        Run ref = runKernels(a, trans, x, yin, nvec, xrs, xcs, yrs, ycs, al, be, ab.mode, false, 1);
        if (ab.mode == SPMV_BETA_ZERO && !isInt(t)) ref = runKernels(a, trans, x, y0, nvec, xrs, xcs, yrs, ycs, al, be, ab.mode, false, 1);
        // |terms| bound for the tolerance: the same product on absolute values.
        double scale = 1;
        for (int64_t k = 0; k < a.nnz; ++k) scale = std::max(scale, std::fabs(getd(a.v8.data(), t, k)));
        int64_t maxRow = 0;
        for (int64_t r = 0; r < a.rows; ++r) maxRow = std::max(maxRow, a.ptr[size_t(r + 1)] - a.ptr[size_t(r)]);
        for (uint32_t nb : {1u, 2u, 3u, 5u, 8u}) {
            Run got = runKernels(a, trans, x, yin, nvec, xrs, xcs, yrs, ycs, al, be, ab.mode, true, nb);
            ++checks;
            bool ok = got.status == ref.status;
            const int64_t colsTouched = trans ? a.rows : maxRow;
            const double tol = isInt(t) ? 0 : 8 * eps(t) * double(colsTouched + 4) * scale * 4;
            for (int64_t i = 0; ok && i < yl; ++i)
                for (int64_t v = 0; ok && v < nvec; ++v)
                    for (int j = 0; j < comps(t); ++j) {
                        const int64_t e = i * yrs + v * ycs;
                        if (!close(getd(ref.y.data(), t, e, j), getd(got.y.data(), t, e, j), tol)) {
                            std::printf("  mismatch y[%lld,%lld].%d ref %.17g got %.17g\n", (long long)i, (long long)v, j,
                                        getd(ref.y.data(), t, e, j), getd(got.y.data(), t, e, j));
                            ok = false;
                        }
                    }
            // Y's gap elements (never addressed) stay as they were.
            if (ok && std::memcmp(got.y.data() + y0.size() - 16, yin.data() + y0.size() - 16, 16) != 0) ok = false;
            if (!ok) {
                ++failures;
                std::printf("FAIL %s: %lldx%lld nnz %lld type %d idx %d trans %d nvec %lld colMajor %d nb %u mode %d\n", what,
                            (long long)a.rows, (long long)a.cols, (long long)a.nnz, t, a.itype, trans, (long long)nvec,
                            colMajorX, nb, ab.mode);
                return;
            }
        }
    }
}

void checkMalformed(int itype, int vtype) {
    for (int kind = 0; kind < 6; ++kind) {
        Csr a = makeCsr(300, 50, 0, itype, vtype, false);
        if (a.nnz < 10) continue;
        const int64_t k = a.nnz / 2;
        switch (kind) {
            case 0: a.idx[size_t(k)] = -1; break;
            case 1: a.idx[size_t(k)] = a.cols; break;
            case 2: a.idx[size_t(k)] = itype == AL_INDEX_64I ? (int64_t(1) << 40) : INT32_MAX; break;
            case 3: a.ptr[150] = a.ptr[149] > 0 ? a.ptr[149] - 1 : 0; a.ptr[149] = a.ptr[150] + 3; break;  // decreasing
            case 4: a.ptr[100] = a.nnz + 1000; break;  // leaves [0, nnz] in the middle
            case 5: a.ptr[200] = -5; break;
        }
        a.pack();
        for (int trans = 0; trans < 2; ++trans)
            for (int64_t nvec : {1, 3})
                for (uint32_t nb : {1u, 2u, 3u, 8u}) {
                    const int64_t xl = trans ? a.rows : a.cols, yl = trans ? a.cols : a.rows;
                    std::vector<unsigned char> x(size_t(xl * nvec) * vbytes(vtype), 0), y(size_t(yl * nvec) * vbytes(vtype), 0);
                    unsigned char al[16] = {0}, be[16] = {0};
                    setd(al, vtype, 0, 1);
                    Run r = runKernels(a, trans, x, y, nvec, 1, xl, 1, yl, al, be, SPMV_BETA_ZERO, true, nb);
                    ++checks;
                    if (r.status != 1) {
                        ++failures;
                        std::printf("FAIL malformed kind %d not flagged: idx %d type %d trans %d nvec %lld nb %u\n", kind, itype,
                                    vtype, trans, (long long)nvec, nb);
                    }
                }
    }
}

// Through the public C API (host validation + the kernels it launches).
void checkApi() {
    alHandle_t h;
    alCreate(&h, AL_DEVICE_CPU, 0);
    Csr a = makeCsr(2000, 700, 1, AL_INDEX_32I, AL_R_64F, false);
    for (int trans = 0; trans < 2; ++trans) {
        const int64_t xl = trans ? a.rows : a.cols, yl = trans ? a.cols : a.rows;
        std::vector<double> x(static_cast<size_t>(xl)), y(static_cast<size_t>(yl), 0.5), yr(static_cast<size_t>(yl), 0.5);
        for (auto& v : x) v = urand();
        alCsrDescr d{a.rows, a.cols, a.nnz, a.p8.data(), a.i8.data(), a.v8.data(), AL_INDEX_32I, AL_R_64F};
        alDnMatDescr X{xl, 1, 1, xl, x.data(), AL_R_64F}, Y{yl, 1, 1, yl, y.data(), AL_R_64F};
        double al = 2, be = 3;
        alStatus_t st = alSpmv(h, trans ? AL_OP_T : AL_OP_N, &al, &d, &X, &be, &Y, AL_R_64F);
        std::vector<unsigned char> xb(x.size() * 8), yb(yr.size() * 8);
        std::memcpy(xb.data(), x.data(), xb.size());
        std::memcpy(yb.data(), yr.data(), yb.size());
        unsigned char a16[16] = {0}, b16[16] = {0};
        std::memcpy(a16, &al, 8);
        std::memcpy(b16, &be, 8);
        Run ref = runKernels(a, trans, xb, yb, 1, 1, xl, 1, yl, a16, b16, SPMV_BETA_GENERAL, false, 1);
        double err = 0;
        for (int64_t i = 0; i < yl; ++i) err = std::max(err, std::fabs(y[size_t(i)] - getd(ref.y.data(), AL_R_64F, i)));
        ++checks;
        if (st != AL_STATUS_SUCCESS || err > 1e-9) {
            ++failures;
            std::printf("FAIL alSpmv trans %d status %d err %g\n", trans, st, err);
        }
        a.i8[4 * size_t(a.nnz / 3)] = 0xff;  // index -> garbage (negative): must be INVALID_VALUE
        std::memset(a.i8.data() + 4 * size_t(a.nnz / 3), 0xff, 4);
        st = alSpmv(h, trans ? AL_OP_T : AL_OP_N, &al, &d, &X, &be, &Y, AL_R_64F);
        ++checks;
        if (st != AL_STATUS_INVALID_VALUE) { ++failures; std::printf("FAIL alSpmv malformed trans %d status %d\n", trans, st); }
        a.pack();
    }
    alDestroy(h);
}

void runChecks() {
    const int types[] = {AL_R_32F, AL_R_64F, AL_C_32F, AL_C_64F, AL_R_32I, AL_R_64I};
    struct Shape { int64_t r, c; int s; const char* name; };
    const Shape shapes[] = {{200, 150, 0, "random"}, {3000, 6000, 1, "empty rows + huge row"}, {50, 40, 2, "all empty"},
                            {0, 30, 0, "0 x n"}, {30, 0, 0, "n x 0"}, {120, 60, 3, "duplicates/unsorted"},
                            {1, 20000, 1, "single huge row"}};
    for (int t : types)
        for (int it : {AL_INDEX_32I, AL_INDEX_64I})
            for (const Shape& s : shapes) {
                Csr a = makeCsr(s.r, s.c, s.s, it, t, true);
                if (s.r == 1) {  // one row of 20000 nonzeros
                    a.idx.clear();
                    for (int k = 0; k < 20000; ++k) a.idx.push_back(int64_t(rng() % 20000));
                    a.ptr = {0, 20000};
                    a.nnz = 20000;
                    a.v8.assign(20000 * vbytes(t), 0);
                    for (int k = 0; k < 20000; ++k) setd(a.v8.data(), t, k, isInt(t) ? 3 : urand(), urand());
                    a.pack();
                }
                for (int trans = 0; trans < 2; ++trans)
                    for (int64_t nvec : {1, 3})
                        for (bool cm : {false, true}) {
                            if (nvec == 1 && cm) continue;
                            checkCase(a, trans, nvec, cm, s.name);
                        }
            }
    for (int it : {AL_INDEX_32I, AL_INDEX_64I})
        for (int t : types) checkMalformed(it, t);
    checkApi();
    std::printf("check: %d cases, %d failures (dot isa %s)\n", checks, failures, spmvMergeIsa());
}

// ---------------------------------------------------------------- benchmark
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
// Process CPU seconds: under load from other processes, CPU time is a steadier
// measure than wall time (memory stalls count, waiting for a core does not).
double cpuNow() {
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double streamTriad() {
    const size_t n = size_t(1) << 25;  // 3 x 256 MiB
    std::vector<double> a(n), b(n, 1.0), c(n, 2.0);
    struct Ctx { double *a, *b, *c; size_t n; } ctx{a.data(), b.data(), c.data(), n};
    auto body = [](uint32_t i, void* p) {
        auto* c = static_cast<Ctx*>(p);
        size_t lo = c->n * i / 2, hi = c->n * (i + 1) / 2;
        for (size_t k = lo; k < hi; ++k) c->a[k] = c->b[k] + 3.0 * c->c[k];
    };
    parallelFor(2, body, &ctx);
    double best = 1e9;
    for (int rep = 0; rep < 5; ++rep) {
        double t0 = now();
        parallelFor(2, body, &ctx);
        best = std::min(best, now() - t0);
    }
    return 3.0 * double(n) * 8 / best / 1e9;
}

// Direct kernel launch timing each block's thread CPU time: "ideal" = sum over
// launches of the slowest block, i.e. the wall time with one free core per block.
struct Timed { CpuKernelEntry e; uint32_t nb; void* const* args; const void* t; double sec[64]; };
double timedLaunch(CpuKernelEntry e, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    Timed l{e, nb, args, &t, {0}};
    parallelFor(nb, [](uint32_t i, void* p) {
        auto* l = static_cast<Timed*>(p);
        timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        l->e(i, l->nb, l->args, l->t);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        l->sec[i] = double(b.tv_sec - a.tv_sec) + 1e-9 * double(b.tv_nsec - a.tv_nsec);
    }, &l);
    double m = 0;
    for (uint32_t i = 0; i < nb; ++i) m = std::max(m, l.sec[i]);
    return m;
}

template <class T>
double idealKernelTime(const Csr& a, int vtype, int trans, const T* vals, const T* x, T* y) {
    SpmvTilingData t = spmvTiling(trans, a.rows, a.cols, a.nnz, 1, vtype, a.itype, cpuNumThreads());
    t.xRowStride = t.yRowStride = 1;
    t.xColStride = trans ? a.rows : a.cols;
    t.yColStride = trans ? a.cols : a.rows;
    t.betaMode = SPMV_BETA_ZERO;
    T one = 1;
    std::memcpy(t.alpha, &one, sizeof(T));
    std::vector<unsigned char> ws(size_t(t.workspaceSize));
    void* args[6] = {const_cast<unsigned char*>(a.p8.data()), const_cast<unsigned char*>(a.i8.data()),
                     const_cast<T*>(vals), const_cast<T*>(x), y, ws.data()};
    const uint32_t nb = uint32_t(t.usedCoreNum);
    double best = 1e9;
    for (int rep = 0; rep < 10; ++rep) {
        double s = 0;
        if (!trans) {
            s += timedLaunch(spmv_kernel_merge_cpu, nb, args, t);
            s += timedLaunch(spmv_fixup_merge_cpu, 1, args, t);
        } else {
            s += timedLaunch(spmvt_kernel_merge_cpu, nb, args, t);
            s += timedLaunch(spmvt_reduce_merge_cpu, nb, args, t);
        }
        if (rep) best = std::min(best, s);
    }
    return best;
}

template <class T>
void benchOne(const char* name, const Csr& a, int vtype, alHandle_t h) {
    HVec<T> vals(size_t(a.nnz));
    for (auto& v : vals) v = T(urand());
    for (int trans = 0; trans < 2; ++trans) {
        const int64_t xl = trans ? a.rows : a.cols, yl = trans ? a.cols : a.rows;
        HVec<T> x(size_t(xl), T(1)), y(size_t(yl), T(0));
        for (auto& v : x) v = T(urand());
        alCsrDescr d{a.rows, a.cols, a.nnz, a.p8.data(), a.i8.data(), vals.data(), alIndexType_t(a.itype), alDataType_t(vtype)};
        alDnMatDescr X{xl, 1, 1, xl, x.data(), alDataType_t(vtype)}, Y{yl, 1, 1, yl, y.data(), alDataType_t(vtype)};
        T al = 1, be = 0;
        // scipy's sparsetools loops (csr_matvec, and csc_matvec for A^T x), one
        // thread, same arrays (int32 indices only). Interleaved with ours, one
        // call each per round, medians: other tenants' bursts last seconds,
        // longer than a block of repetitions of one candidate.
        const int32_t* p = reinterpret_cast<const int32_t*>(a.p8.data());
        const int32_t* ix = reinterpret_cast<const int32_t*>(a.i8.data());
        auto scipyLoop = [&] {
            if (!trans) {
                for (int64_t r = 0; r < a.rows; ++r) {
                    T sum = 0;
                    for (int64_t k = p[r]; k < p[r + 1]; ++k) sum += vals[size_t(k)] * x[size_t(ix[k])];
                    y[size_t(r)] = sum;
                }
            } else {
                std::fill(y.begin(), y.end(), T(0));
                for (int64_t r = 0; r < a.rows; ++r)
                    for (int64_t k = p[r]; k < p[r + 1]; ++k) y[size_t(ix[k])] += vals[size_t(k)] * x[size_t(r)];
            }
            asm volatile("" ::: "memory");
        };
        const bool withRef = a.itype == AL_INDEX_32I;
        std::vector<double> ours, oursCpu, ref;
        // 16 rounds on the large matrices; small ones (tens of microseconds a
        // call) get more, up to 401, for a steadier median
        const int reps = int(std::min<int64_t>(401, std::max<int64_t>(16, int64_t(2e7) / std::max<int64_t>(a.nnz, 1))));
        for (int rep = 0; rep < reps; ++rep) {
            double t0 = now(), c0 = cpuNow();
            alStatus_t st = alSpmv(h, trans ? AL_OP_T : AL_OP_N, &al, &d, &X, &be, &Y, alDataType_t(vtype));
            double dt = now() - t0, dc = cpuNow() - c0;
            if (st != AL_STATUS_SUCCESS) { std::printf("alSpmv failed %d\n", st); return; }
            double dr = 0;
            if (withRef) {
                const double r0 = now();
                scipyLoop();
                dr = now() - r0;
            }
            if (rep) ours.push_back(dt), oursCpu.push_back(dc), ref.push_back(dr);  // the first warms up
        }
        auto median = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v.empty() ? 0.0 : (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
        };
        const double medWall = median(ours), medCpu = median(oursCpu), medRef = withRef ? median(ref) : 1e9;
        const double bytes = double(a.nnz) * (sizeof(T) + 4) + double(a.rows + 1) * 4 + double(xl + yl) * sizeof(T);
        const double ideal = idealKernelTime<T>(a, vtype, trans, vals.data(), x.data(), y.data());
        std::printf("%-10s %-4s %s  alSpmv wall %8.2f ms %6.2f GB/s, cpu %8.2f ms | kernels ideal %8.2f ms %6.2f GB/s"
                    " | scipy loop %8.2f ms, ratio %5.2f\n",
                    name, sizeof(T) == 4 ? "f32" : "f64", trans ? "T" : "N", medWall * 1e3, bytes / medWall / 1e9,
                    medCpu * 1e3, ideal * 1e3, bytes / ideal / 1e9, medRef * 1e3, medRef / medWall);
    }
}

bool wanted(const char* only, const char* name) { return !only || std::strstr(name, only); }

void runBench(const char* only) {
    const char* th = std::getenv("BENCH_THREADS");  // default 2
    const uint32_t nth = th ? uint32_t(std::max(1, std::atoi(th))) : 2u;
    cpuSetNumThreads(nth);
    std::printf("threads %u, dot isa %s, STREAM triad %.2f GB/s\n", nth, spmvMergeIsa(), streamTriad());
    alHandle_t h;
    alCreate(&h, AL_DEVICE_CPU, 0);
    // 2-D Poisson, 5-point, on a g x g grid
    auto poisson = [](int64_t g) {
        const int64_t n = g * g;
        Csr a;
        a.rows = a.cols = n;
        a.ptr.reserve(size_t(n + 1));
        a.idx.reserve(size_t(5 * n));
        a.ptr.push_back(0);
        for (int64_t i = 0; i < g; ++i)
            for (int64_t j = 0; j < g; ++j) {
                if (i > 0) a.idx.push_back((i - 1) * g + j);
                if (j > 0) a.idx.push_back(i * g + j - 1);
                a.idx.push_back(i * g + j);
                if (j < g - 1) a.idx.push_back(i * g + j + 1);
                if (i < g - 1) a.idx.push_back((i + 1) * g + j);
                a.ptr.push_back(int64_t(a.idx.size()));
            }
        a.nnz = int64_t(a.idx.size());
        a.pack();
        a.ptr.clear(); a.idx.clear(); a.ptr.shrink_to_fit(); a.idx.shrink_to_fit();
        return a;
    };
    if (wanted(only, "poisson2d")) {   // 2000 x 2000 grid, 20M nonzeros
        const Csr a = poisson(2000);
        benchOne<float>("poisson2d", a, AL_R_32F, h);
        benchOne<double>("poisson2d", a, AL_R_64F, h);
    }
    if (wanted(only, "small112")) {   // 112 x 112 grid, 62k nonzeros: per-call cost, in cache
        const Csr a = poisson(112);
        benchOne<float>("small112", a, AL_R_32F, h);
        benchOne<double>("small112", a, AL_R_64F, h);
    }
    if (wanted(only, "banded9")) {   // banded, 2e6 rows, 9 diagonals
        const int64_t n = 2000000, half = 4;
        Csr a;
        a.rows = a.cols = n;
        a.ptr.push_back(0);
        for (int64_t i = 0; i < n; ++i) {
            for (int64_t j = std::max<int64_t>(0, i - half); j <= std::min(n - 1, i + half); ++j) a.idx.push_back(j);
            a.ptr.push_back(int64_t(a.idx.size()));
        }
        a.nnz = int64_t(a.idx.size());
        a.pack();
        a.ptr.clear(); a.idx.clear(); a.ptr.shrink_to_fit(); a.idx.shrink_to_fit();
        benchOne<float>("banded9", a, AL_R_32F, h);
        benchOne<double>("banded9", a, AL_R_64F, h);
    }
    if (wanted(only, "random1e6")) {   // random 1e6 x 1e6, 1e7 nonzeros, sorted within rows
        const int64_t n = 1000000, nnz = 10000000;
        Csr a;
        a.rows = a.cols = n;
        a.ptr.assign(size_t(n + 1), 0);
        for (int64_t k = 0; k < nnz; ++k) a.ptr[size_t(rng() % uint64_t(n)) + 1]++;
        for (int64_t r = 0; r < n; ++r) a.ptr[size_t(r + 1)] += a.ptr[size_t(r)];
        a.idx.resize(size_t(nnz));
        for (auto& c : a.idx) c = int64_t(rng() % uint64_t(n));
        for (int64_t r = 0; r < n; ++r) std::sort(a.idx.begin() + a.ptr[size_t(r)], a.idx.begin() + a.ptr[size_t(r + 1)]);
        a.nnz = nnz;
        a.pack();
        benchOne<float>("random1e6", a, AL_R_32F, h);
        benchOne<double>("random1e6", a, AL_R_64F, h);
    }
    for (int sorted = 0; sorted < 2; ++sorted) {
        // power-law row lengths (Zipf 1.6, capped at n/10, scaled to ~1e7
        // nonzeros, as benchmarks/bench_spmv.py), random columns
        const char* nm = sorted ? "powlaw-s" : "powlaw-u";
        if (!wanted(only, nm)) continue;
        const int64_t n = 1000000;
        std::mt19937_64 g(7);
        std::vector<double> len(static_cast<size_t>(n));
        double tot = 0;
        for (auto& l : len) {  // Zipf(1.6) by inversion of the continuous Pareto tail, floored
            const double u = std::uniform_real_distribution<double>(0, 1)(g);
            l = std::min(std::floor(std::pow(1 - u, -1.0 / 0.6)), double(n / 10));
            tot += l;
        }
        Csr a;
        a.rows = a.cols = n;
        a.ptr.push_back(0);
        for (int64_t r = 0; r < n; ++r) a.ptr.push_back(a.ptr.back() + int64_t(len[size_t(r)] * (1e7 / tot)) + 1);
        a.nnz = a.ptr.back();
        a.idx.resize(size_t(a.nnz));
        for (auto& c : a.idx) c = int64_t(g() % uint64_t(n));
        if (sorted)
            for (int64_t r = 0; r < n; ++r) std::sort(a.idx.begin() + a.ptr[size_t(r)], a.idx.begin() + a.ptr[size_t(r + 1)]);
        a.pack();
        benchOne<float>(nm, a, AL_R_32F, h);
        benchOne<double>(nm, a, AL_R_64F, h);
    }
    alDestroy(h);
}

}  // namespace

int main(int argc, char** argv) {
    std::string mode = argc > 1 ? argv[1] : "all";
    if (mode == "check" || mode == "all") runChecks();
    if (mode == "bench" || mode == "all") runBench(argc > 2 ? argv[2] : nullptr);
    return failures ? 1 : 0;
}
