// The multi-vector (nvec > 1, X's rows contiguous) pieces of the merge-path
// SpMV kernels: a row of X per nonzero, gathered (A X, spmv_kernel_merge.cpp)
// or scattered into (A^T X, spmvt_merge_impl.h), a compile-time width of
// vectors at a time.
#ifndef ASCEND_LINALG_KERNELS_SPMV_MERGE_MV_H
#define ASCEND_LINALG_KERNELS_SPMV_MERGE_MV_H

#include "spmv_merge_common.h"

namespace al {
namespace spmvm {
namespace {  // internal linkage, as spmv_merge_common.h says

// Several vectors (nvec > 1) whose rows are contiguous (X's column stride
// 1): each nonzero works on a row of X, gathered (A X) or scattered into
// (A^T X), kMvWidth vectors at a time. The width is known at compile time,
// so the loop over the vectors becomes SIMD instructions; each vector's sum
// keeps nonzero order with the product rounded before the sum, as scipy's
// csr_matvecs / csc_matvecs (an axpy per nonzero). The loop over vectors
// per nonzero replaced a pass over the row per vector, which read X's row
// lines once per vector and cost a call per row and vector.
constexpr int kMvWidth = 8;
template <int W> using MvWidth = std::integral_constant<int, W>;
// f(MvWidth<W>{}, v0) for vectors [v0, v0 + W) covering [0, nvec).
template <class F>
__attribute__((always_inline)) inline void forMvBlocks(int64_t nvec, F&& f) {
    int64_t v0 = 0;
    for (; v0 + kMvWidth <= nvec; v0 += kMvWidth) f(MvWidth<kMvWidth>{}, v0);
    switch (nvec - v0) {
        case 1: f(MvWidth<1>{}, v0); break;
        case 2: f(MvWidth<2>{}, v0); break;
        case 3: f(MvWidth<3>{}, v0); break;
        case 4: f(MvWidth<4>{}, v0); break;
        case 5: f(MvWidth<5>{}, v0); break;
        case 6: f(MvWidth<6>{}, v0); break;
        case 7: f(MvWidth<7>{}, v0); break;
        default: break;
    }
    static_assert(kMvWidth == 8, "the switch covers widths below kMvWidth");
}
// out[j] := 0 + sum over [ka, kb) of val[k] * x[idx[k] * xs + j], j < W; the
// indices are checked already. Nonzeros [ka, kpf) also prefetch the X row of
// nonzero k + kPrefetch (which must lie inside the index array; its index,
// maybe unchecked, clamped to lim); kpf == ka: no prefetch.
template <int W, class T, class I, class V>
inline void mvGather(const V* val, const I* idx, int64_t ka, int64_t kpf, int64_t kb, const T* x, int64_t xs,
                     T* out, UIndex<I> lim) {
    T acc[W];
    for (int j = 0; j < W; ++j) acc[j] = T{};
    auto term = [&](int64_t k) __attribute__((always_inline)) {
        const T a = widen<T>(val[k]);
        const T* xr = x + static_cast<int64_t>(static_cast<UIndex<I>>(idx[k])) * xs;
        for (int j = 0; j < W; ++j) acc[j] = add(acc[j], mul(a, xr[j]));
    };
    for (int64_t k = ka; k < kpf; ++k) {
        __builtin_prefetch(x + static_cast<int64_t>(std::min(static_cast<UIndex<I>>(idx[k + kPrefetch]), lim)) * xs);
        term(k);
    }
    for (int64_t k = kpf; k < kb; ++k) term(k);
    for (int j = 0; j < W; ++j) out[j] = acc[j];
}
// part[idx[k] * nvec + j] += val[k] * xr[j] over [ka, kb), j < W; the indices
// are checked and their partial rows zeroed already. Pf: nonzero k also
// prefetches the partial row of nonzero k + kPrefetch (inside the index
// array; its index, maybe unchecked, clamped to lim).
template <int W, bool Pf, class T, class I, class V>
inline void mvScatter(const V* val, const I* idx, int64_t ka, int64_t kb, const T* xr, T* part, int64_t nvec,
                      UIndex<I> lim) {
    T xv[W];
    for (int j = 0; j < W; ++j) xv[j] = xr[j];
    for (int64_t k = ka; k < kb; ++k) {
        if (Pf)
            __builtin_prefetch(part + static_cast<int64_t>(std::min(static_cast<UIndex<I>>(idx[k + kPrefetch]), lim)) * nvec, 1);
        const T a = widen<T>(val[k]);
        T* p = part + static_cast<int64_t>(static_cast<UIndex<I>>(idx[k])) * nvec;
        // loaded, updated and stored as three loops: GCC 12 vectorises
        // this form and not the update in place
        T u[W];
        for (int j = 0; j < W; ++j) u[j] = p[j];
        for (int j = 0; j < W; ++j) u[j] = add(u[j], mul(a, xv[j]));
        for (int j = 0; j < W; ++j) p[j] = u[j];
    }
}

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
