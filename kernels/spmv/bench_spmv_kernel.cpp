// Standalone check + benchmark of the merge-path SpMV kernels (not in the meson build).
//   g++ -O3 -std=c++17 -I. -Ihost/include -mavx2 -mfma -mf16c -c kernels/spmv/spmv_kernel_merge_avx2.cpp -o /tmp/spmv_avx2.o
//   g++ -O3 -std=c++17 -I. -Ihost/include -mavx2 -mfma -mf16c -c kernels/spmv/spmvt_kernel_merge_avx2.cpp -o /tmp/spmvt_avx2.o
//   g++ -O3 -std=c++17 -I. -Ihost/include -DAL_CPU_DISPATCH=1 -o /tmp/bench_spmv
//       kernels/spmv/bench_spmv_kernel.cpp kernels/spmv/bench_spmv_bench.cpp kernels/spmv/spmv_kernel_ref.cpp
//       kernels/spmv/spmv_kernel_merge.cpp kernels/spmv/spmvt_kernel_merge.cpp
//       host/spmv_tiling.cpp host/spmv_tune.cpp host/spmv_host.cpp host/spmvt_cpu.cpp host/context.cpp
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
#include "kernels/spmv/bench_spmv_common.h"

namespace {


// shape: 0 random, 1 empty rows + one huge row, 2 all empty, 3 duplicates+unsorted,
// 4 runs of 1-60 rows of one length 0-17 (the kernels' run loops).
Csr makeCsr(int64_t rows, int64_t cols, int shape, int itype, int vtype, bool special) {
    Csr a;
    a.rows = rows; a.cols = cols; a.itype = itype; a.vtype = vtype;
    a.ptr.assign(size_t(rows + 1), 0);
    int64_t runLen = 0, runLeft = 0;
    for (int64_t r = 0; r < rows; ++r) {
        int64_t len = 0;
        if (cols > 0) {
            if (shape == 4 && runLeft-- == 0) {
                runLen = int64_t(rng() % 18);
                runLeft = int64_t(rng() % 60);
            }
            if (shape == 4) len = runLen;
            else if (shape == 0) len = int64_t(rng() % 9);
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

// unitX: x's rows without the gap (nvec == 1: unit stride, the plain
// product's own loops, e.g. the run loops).
void checkCase(const Csr& a, int trans, int64_t nvec, bool colMajorX, const char* what, bool unitX = false) {
    const int t = a.vtype;
    const int64_t xl = trans ? a.rows : a.cols, yl = trans ? a.cols : a.rows;
    const size_t vb = vbytes(t);
    // X/Y: element (i, v) at i*rs + v*cs, with a gap of 1 in the row-major case.
    int64_t xrs = colMajorX ? 1 : nvec + (unitX ? 0 : 1), xcs = colMajorX ? std::max<int64_t>(xl, 1) : 1;
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
    for (int kind = 0; kind < 12; ++kind) {
        Csr a = makeCsr(300, 50, kind < 6 ? 0 : 4, itype, vtype, false);
        if (a.nnz < 10) continue;
        const int64_t k = a.nnz / 2;
        switch (kind % 6) {
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
                            {1, 20000, 1, "single huge row"}, {3000, 500, 4, "runs of one row length"}};
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
                            if (nvec == 1) checkCase(a, trans, nvec, cm, s.name, true);
                        }
            }
    for (int it : {AL_INDEX_32I, AL_INDEX_64I})
        for (int t : types) checkMalformed(it, t);
    checkApi();
    std::printf("check: %d cases, %d failures (dot isa %s)\n", checks, failures, spmvMergeIsa());
}

// ---------------------------------------------------------------- benchmark
}  // namespace

int main(int argc, char** argv) {
    std::string mode = argc > 1 ? argv[1] : "all";
    if (mode == "check" || mode == "all") runChecks();
    if (mode == "bench" || mode == "all") runBench(argc > 2 ? argv[2] : nullptr);
    return failures ? 1 : 0;
}
