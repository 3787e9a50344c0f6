// Shared by the SpMV harness's check (bench_spmv_kernel.cpp) and bench
// (bench_spmv_bench.cpp) halves: typed CSR test matrices and helpers.
#ifndef ASCEND_LINALG_KERNELS_SPMV_BENCH_SPMV_COMMON_H
#define ASCEND_LINALG_KERNELS_SPMV_BENCH_SPMV_COMMON_H

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

}  // namespace

// bench_spmv_bench.cpp
void runBench(const char* only);

#endif
