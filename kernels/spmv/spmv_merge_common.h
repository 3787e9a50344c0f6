// Shared pieces of the nnz-balanced (merge-path) SpMV kernels: the epilogue,
// the merge-path split and the row-block loops (value arithmetic: spmv_arith.h).
// Included by the baseline TU and by the per-ISA TUs (which compile the same
// templates with their own -m flags and an intrinsic dot product).
#ifndef ASCEND_LINALG_KERNELS_SPMV_MERGE_COMMON_H
#define ASCEND_LINALG_KERNELS_SPMV_MERGE_COMMON_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "../../host/spmv_tiling.h"
#include "ascend_linalg/al_types.h"
#include "spmv_arith.h"

namespace al {
namespace spmvm {
// Internal linkage: each ISA's TU gets its own copy of these templates, so the
// linker can never hand the baseline TU an instantiation compiled with -mavx2.
namespace {

// y := alpha*acc (+ beta*y); betaMode ZERO never reads y.
template <class T>
inline void epilogue(int32_t mode, T alpha, T beta, T acc, T* y) {
    T v = scale(alpha, acc);
    if (mode == SPMV_BETA_ZERO) *y = v;
    else if (mode == SPMV_BETA_ONE) *y = add(v, *y);
    else *y = add(v, mul(beta, *y));
}

// A point on the merge path of (row ends, nonzeros): r rows completed and
// k nonzeros consumed, r + k == d. Block b runs from split(b) to split(b+1).
// Block 0 starts at (0, 0) and the last block ends at (rows, nnzT) whatever
// indptr holds; interior splits come from a binary search, which is monotone
// in d even over a malformed indptr, so consecutive blocks tile [0, rows] and
// every pair (indptr[r], indptr[r+1]) is checked by exactly one block.
// k is clamped to [0, nnzT]: no later read can leave the arrays.
template <class I>
inline void mergeSplit(const I* indptr, int64_t rows, int64_t nnzT, uint32_t b, uint32_t nb,
                       int64_t* r, int64_t* k) {
    if (b == 0) { *r = 0; *k = 0; return; }
    if (b >= nb) { *r = rows; *k = nnzT; return; }
    const int64_t total = rows + nnzT;
    // total * b / nb without overflow (total < 2^62, nb < 2^31 is not enough
    // for the product; split it).
    const int64_t d = (total / nb) * b + (total % nb) * b / nb;
    int64_t lo = 0, hi = std::min(rows, d);
    while (lo < hi) {  // largest i with indptr[i] <= d - i
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (static_cast<int64_t>(indptr[mid]) <= d - mid) lo = mid;
        else hi = mid - 1;
    }
    *r = lo;
    *k = std::min(std::max<int64_t>(d - lo, 0), nnzT);
}

// One block's path segment: rows [r0, r1) complete here (r0 possibly begun
// by earlier blocks: shared head), row r1 (< rows) left open as the tail.
struct Segment {
    int64_t r0, k0, r1, k1;
};
template <class I>
inline Segment blockSegment(const I* indptr, int64_t rows, int64_t nnzT, uint32_t b, uint32_t nb) {
    Segment s;
    mergeSplit(indptr, rows, nnzT, b, nb, &s.r0, &s.k0);
    mergeSplit(indptr, rows, nnzT, b + 1, nb, &s.r1, &s.k1);
    if (s.r1 < s.r0) s.r1 = s.r0;  // cannot happen (monotone); keeps loops finite
    if (s.k1 < s.k0) s.k1 = s.k0;
    return s;
}
// Row r0's head is shared when earlier blocks consumed part of it.
template <class I>
inline bool headShared(const I* indptr, const Segment& s) {
    return s.r0 < s.r1 && s.k0 > static_cast<int64_t>(indptr[s.r0]);
}

constexpr int64_t kPrefetch = 64;

// Whether the block's x (or partial) accesses jump around: a sample of 64
// consecutive index pairs, "far" when more than 16 KiB apart. Banded and
// stencil matrices stream (the hardware prefetcher follows them and software
// prefetch only costs); scattered ones wait on memory unless prefetched.
// A performance choice only: results never depend on it.
template <class I>
inline bool scattered(const I* idx, int64_t kLo, int64_t kHi, int64_t stride) {
    const int64_t n = kHi - kLo;
    if (n < 4096) return false;
    const int64_t near = (int64_t(16) << 10) / 8 / std::max<int64_t>(stride, 1);
    int far = 0;
    for (int64_t s = 0; s < 64; ++s) {
        const int64_t k = kLo + (n - 1) * s / 64;
        // Wrapping difference: the indices are not checked yet (INT64_MIN - 1).
        const int64_t d = static_cast<int64_t>(static_cast<uint64_t>(static_cast<int64_t>(idx[k + 1])) -
                                               static_cast<uint64_t>(static_cast<int64_t>(idx[k])));
        far += d > near || d < -near;
    }
    return far > 16;
}

inline int64_t clampK(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

// Index i as a column in [0, cols), or 0 when it is not one (cols > 0).
template <class I>
inline uint64_t inRange(I i, uint64_t cols) {
    const uint64_t c = static_cast<uint64_t>(static_cast<int64_t>(i));
    return c < cols ? c : 0;
}

// Layout of the N kernel's carry slots: per block {head[nvec], tail[nvec]}.
template <class T>
inline T* carrySlot(void* ws, const SpmvTilingData& t, uint32_t b, int which) {
    return reinterpret_cast<T*>(static_cast<char*>(ws) + t.carryOffset) + (2 * int64_t(b) + which) * t.nvec;
}

// Scalar checked dot over nonzeros [ka, kb): sum val[k] * x[indices[k]*xs].
// An index outside [0, cols) sets *bad and reads x[0] instead (cols > 0 is
// guaranteed by the caller), so the loop stays branch-free.
template <class T, class I>
inline T dotScalar(const T* val, const I* idx, int64_t ka, int64_t kb, const T* x, int64_t xs,
                   uint64_t cols, int* bad) {
    T a0{}, a1{};
    int bd = 0;
    int64_t k = ka;
    for (; k + 2 <= kb; k += 2) {
        uint64_t c0 = static_cast<uint64_t>(static_cast<int64_t>(idx[k]));
        uint64_t c1 = static_cast<uint64_t>(static_cast<int64_t>(idx[k + 1]));
        bool o0 = c0 < cols, o1 = c1 < cols;
        bd |= !o0 | !o1;
        c0 = o0 ? c0 : 0;
        c1 = o1 ? c1 : 0;
        a0 = add(a0, mul(val[k], x[static_cast<int64_t>(c0) * xs]));
        a1 = add(a1, mul(val[k + 1], x[static_cast<int64_t>(c1) * xs]));
    }
    if (k < kb) {
        uint64_t c0 = static_cast<uint64_t>(static_cast<int64_t>(idx[k]));
        bool o0 = c0 < cols;
        bd |= !o0;
        c0 = o0 ? c0 : 0;
        a0 = add(a0, mul(val[k], x[static_cast<int64_t>(c0) * xs]));
    }
    *bad |= bd;
    return add(a0, a1);
}

// Full rows [ra, rb) of a block whose nonzeros lie in [kLo, kHi], nvec == 1:
// checks each indptr pair, writes y with the epilogue. Dot is a functor
// (val, idx, ka, kb, x, xs, cols, bad) -> T. Returns nonzero when malformed.
template <int32_t Mode, bool Prefetch, class T, class I, class Dot>
inline int rowsN1Mode(const I* indptr, const I* idx, const T* val, const T* x, int64_t xs, T* y,
                      int64_t ys, int64_t ra, int64_t rb, int64_t kLo, int64_t kHi, uint64_t cols,
                      T alpha, T beta, Dot dot) {
    int bad = 0;
    int64_t a = static_cast<int64_t>(indptr[ra]);
    // x is read in index order, which the hardware cannot predict: prefetch
    // kPrefetch nonzeros ahead. The index is not checked yet: an invalid one
    // prefetches x[0] (merely forming its out-of-range address is undefined).
    int64_t pf = clampK(a, kLo, kHi);
    for (int64_t r = ra; r < rb; ++r) {
        const int64_t e = static_cast<int64_t>(indptr[r + 1]);
        bad |= e < a;
        const int64_t ka = clampK(a, kLo, kHi), kb = clampK(e, ka, kHi);
        if (Prefetch)
            for (const int64_t pe = std::min(kb + kPrefetch, kHi); pf < pe; ++pf)
                __builtin_prefetch(x + static_cast<int64_t>(inRange(idx[pf], cols)) * xs);
        T acc = dot(val, idx, ka, kb, x, xs, cols, &bad);
        epilogue(Mode, alpha, beta, acc, y + r * ys);
        a = e;
    }
    return bad;
}
template <class T, class I, class Dot>
inline int rowsN1(const I* indptr, const I* idx, const T* val, const T* x, int64_t xs, T* y,
                  int64_t ys, int64_t ra, int64_t rb, int64_t kLo, int64_t kHi, uint64_t cols,
                  T alpha, T beta, int32_t mode, Dot dot) {
#define AL_SPMV_ROWS(M, P) rowsN1Mode<M, P>(indptr, idx, val, x, xs, y, ys, ra, rb, kLo, kHi, cols, alpha, beta, dot)
    if (scattered(idx, kLo, kHi, xs)) {
        switch (mode) {
            case SPMV_BETA_ZERO: return AL_SPMV_ROWS(SPMV_BETA_ZERO, true);
            case SPMV_BETA_ONE: return AL_SPMV_ROWS(SPMV_BETA_ONE, true);
            default: return AL_SPMV_ROWS(SPMV_BETA_GENERAL, true);
        }
    }
    switch (mode) {
        case SPMV_BETA_ZERO: return AL_SPMV_ROWS(SPMV_BETA_ZERO, false);
        case SPMV_BETA_ONE: return AL_SPMV_ROWS(SPMV_BETA_ONE, false);
        default: return AL_SPMV_ROWS(SPMV_BETA_GENERAL, false);
    }
#undef AL_SPMV_ROWS
}

// A DotTable row (dot + rows for one (T, I)) built from a dot functor type.
template <class T, class I, class Dot> struct DotFns {
    static T dot(const T* v, const I* i, int64_t a, int64_t b, const T* x, int64_t xs, uint64_t c, int* bad) {
        return Dot{}(v, i, a, b, x, xs, c, bad);
    }
    static int rows(const I* indptr, const I* idx, const T* val, const T* x, int64_t xs, T* y, int64_t ys,
                    int64_t ra, int64_t rb, int64_t kLo, int64_t kHi, uint64_t cols, T alpha, T beta, int32_t mode) {
        return rowsN1(indptr, idx, val, x, xs, y, ys, ra, rb, kLo, kHi, cols, alpha, beta, mode, Dot{});
    }
};
template <class T, class I> struct ScalarDot {
    T operator()(const T* v, const I* i, int64_t a, int64_t b, const T* x, int64_t xs, uint64_t c, int* bad) const {
        return dotScalar(v, i, a, b, x, xs, c, bad);
    }
};

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
