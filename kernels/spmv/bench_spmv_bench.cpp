// The bench half of the SpMV harness (bench_spmv_kernel.cpp says how to build
// and run it): alSpmv against scipy's sparsetools loop on the large matrices
// of benchmarks/bench_spmv.py and the small per-call case.
#include "kernels/spmv/bench_spmv_common.h"

namespace {

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

}  // namespace

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
    if (wanted(only, "mid300")) {   // 300 x 300 grid, 449k nonzeros: two blocks, in the last-level cache
        const Csr a = poisson(300);
        benchOne<float>("mid300", a, AL_R_32F, h);
        benchOne<double>("mid300", a, AL_R_64F, h);
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
