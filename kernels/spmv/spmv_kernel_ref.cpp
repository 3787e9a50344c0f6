// Reference SpMV kernels: rows split evenly over blocks, every index checked.
// Integer types use wrapping arithmetic (as numpy does) through unsigned math.
#include <algorithm>

#include "../../host/spmv_tiling.h"
#include "ascend_linalg/al_types.h"
#include "spmv_arith.h"
#include "spmv_kernel.h"

namespace al {
namespace {

template <class T>
inline void epilogue(const SpmvTilingData& t, T alpha, T beta, T acc, T* y) {
    T v = scale(alpha, acc);
    if (t.betaMode == SPMV_BETA_ZERO) *y = v;
    else if (t.betaMode == SPMV_BETA_ONE) *y = add(v, *y);
    else *y = add(v, mul(beta, *y));
}

inline void rowRange(int64_t rows, uint32_t b, uint32_t nb, int64_t* r0, int64_t* r1) {
    *r0 = rows * b / nb;
    *r1 = rows * (b + 1) / nb;
}

// Row r's nonzeros [k0, k1), or false when indptr is malformed there.
template <class I>
inline bool rowSpan(const I* indptr, int64_t r, int64_t nnz, int64_t* k0, int64_t* k1) {
    int64_t a = static_cast<int64_t>(indptr[r]), b = static_cast<int64_t>(indptr[r + 1]);
    if (a < 0 || b < a || b > nnz) return false;
    *k0 = a;
    *k1 = b;
    return true;
}

template <class T, class I>
void spmvN(uint32_t b, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    const I* indptr = static_cast<const I*>(args[0]);
    const I* indices = static_cast<const I*>(args[1]);
    const T* val = static_cast<const T*>(args[2]);
    const T* x = static_cast<const T*>(args[3]);
    T* y = static_cast<T*>(args[4]);
    const T alpha = fromBytes<T>(t.alpha), beta = fromBytes<T>(t.beta);
    int64_t r0, r1;
    rowRange(t.rows, b, nb, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) {
        int64_t k0 = 0, k1 = 0;
        bool ok = rowSpan(indptr, r, t.nnz, &k0, &k1);
        if (!ok) flagError(args[5]);
        for (int64_t v = 0; v < t.nvec; ++v) {
            T acc{};
            for (int64_t k = k0; k < k1; ++k) {
                int64_t c = static_cast<int64_t>(indices[k]);
                if (c < 0 || c >= t.cols) {
                    flagError(args[5]);
                    continue;
                }
                acc = add(acc, mul(val[k], x[c * t.xRowStride + v * t.xColStride]));
            }
            epilogue(t, alpha, beta, acc, &y[r * t.yRowStride + v * t.yColStride]);
        }
    }
}

// Block b scatters rows [r0, r1) into its own cols x nvec partial (column-major).
template <class T, class I>
void spmvT(uint32_t b, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    const I* indptr = static_cast<const I*>(args[0]);
    const I* indices = static_cast<const I*>(args[1]);
    const T* val = static_cast<const T*>(args[2]);
    const T* x = static_cast<const T*>(args[3]);
    T* part = reinterpret_cast<T*>(static_cast<char*>(args[5]) + 64) + b * t.cols * t.nvec;
    std::fill(part, part + t.cols * t.nvec, T{});
    int64_t r0, r1;
    rowRange(t.rows, b, nb, &r0, &r1);
    for (int64_t r = r0; r < r1; ++r) {
        int64_t k0 = 0, k1 = 0;
        if (!rowSpan(indptr, r, t.nnz, &k0, &k1)) flagError(args[5]);
        for (int64_t k = k0; k < k1; ++k) {
            int64_t c = static_cast<int64_t>(indices[k]);
            if (c < 0 || c >= t.cols) {
                flagError(args[5]);
                continue;
            }
            for (int64_t v = 0; v < t.nvec; ++v)
                part[c + v * t.cols] = add(part[c + v * t.cols], mul(val[k], x[r * t.xRowStride + v * t.xColStride]));
        }
    }
}

// Block b sums partials for columns [c0, c1) in block order, then the epilogue.
template <class T>
void spmvTReduce(uint32_t b, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    const T* part = reinterpret_cast<const T*>(static_cast<char*>(args[5]) + 64);
    T* y = static_cast<T*>(args[4]);
    const T alpha = fromBytes<T>(t.alpha), beta = fromBytes<T>(t.beta);
    int64_t c0, c1;
    rowRange(t.cols, b, nb, &c0, &c1);
    const int64_t slice = t.cols * t.nvec;
    for (int64_t v = 0; v < t.nvec; ++v) {
        for (int64_t c = c0; c < c1; ++c) {
            T acc{};
            for (uint32_t p = 0; p < nb; ++p) acc = add(acc, part[p * slice + c + v * t.cols]);
            epilogue(t, alpha, beta, acc, &y[c * t.yRowStride + v * t.yColStride]);
        }
    }
}


}  // namespace

void spmv_kernel_ref_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withTypes(t.valueType, t.indexType, [&](auto v, auto i) {
        spmvN<typename decltype(v)::type, typename decltype(i)::type>(b, nb, args, t);
    });
}

void spmvt_kernel_ref_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withTypes(t.valueType, t.indexType, [&](auto v, auto i) {
        spmvT<typename decltype(v)::type, typename decltype(i)::type>(b, nb, args, t);
    });
}

void spmvt_reduce_ref_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withTypes(t.valueType, t.indexType, [&](auto v, auto) {
        spmvTReduce<typename decltype(v)::type>(b, nb, args, t);
    });
}

}  // namespace al
