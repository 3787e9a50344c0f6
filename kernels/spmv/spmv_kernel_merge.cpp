// Non-transposed merge-path SpMV: Y := alpha*A*X + beta*Y, split by rows + nonzeros.
// Per block: the shared head row (begun by earlier blocks) and the open tail row
// go to carry slots; rows completed inside the block are written directly.
// The 1-block fix-up sums each split row's parts in block order: deterministic
// for a given block count.
#include <atomic>
#include <type_traits>
#include <vector>

#include "spmv_kernel_merge.h"
#include "spmv_merge_mv.h"
#include "spmv_rows_n1.h"

namespace al {
namespace spmvm {

namespace {
template <class T, class I, class V = T> DotEntry<T, I, V> scalarEntry() {
    return {DotFns<T, I, ScalarDot<T, I, V>, V>::dot, DotFns<T, I, ScalarDot<T, I, V>, V>::rows};
}
}  // namespace

const DotTable& dotBaseline() {
    static const DotTable t{scalarEntry<float, int32_t>(), scalarEntry<float, int64_t>(),
                            scalarEntry<double, int32_t>(), scalarEntry<double, int64_t>(),
                            scalarEntry<float, int32_t, Half>(), scalarEntry<float, int64_t, Half>(),
                            scalarEntry<float, int32_t, BHalf>(), scalarEntry<float, int64_t, BHalf>(), widenHalfArray,
                            "baseline"};
    return t;
}

namespace {
std::atomic<int32_t> gRowPfForce{-1};
}  // namespace
int32_t rowPrefetchForced() { return gRowPfForce.load(std::memory_order_relaxed); }
void rowPrefetchForce(int32_t mode) { gRowPfForce.store(mode == 0 || mode == 1 ? mode : -1); }

#ifndef AL_CPU_DISPATCH  // meson: the AVX2 TU is built (and linked) exactly when this is set
const DotTable* dotAvx2() { return nullptr; }
#endif

namespace {

const DotTable& dots() {
    static const DotTable* chosen = [] {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        if (const DotTable* t = dotAvx2())
            if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return t;
#endif
        return &dotBaseline();
    }();
    return *chosen;
}
// The table for float16 values: the AVX2 build converts them with F16C.
const DotTable& dotsF16() {
    static const DotTable* chosen = [] {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        if (&dots() != &dotBaseline() && cpuHasF16c()) return &dots();
#endif
        return &dotBaseline();
    }();
    return *chosen;
}

// The dot product and row loop for (T, I) with values stored as V: the ISA
// table for float32/float64, else the scalar templates (complex and integer
// types, and 16-bit values widened to float32).
template <class T, class I, class V = T> struct Dot {
    T operator()(const V* v, const I* i, int64_t a, int64_t b, const T* x, int64_t xs, uint64_t c, int* bad) const {
        return dotScalar<T>(v, i, a, b, x, xs, c, bad);
    }
    static constexpr const DotEntry<T, I, V>* entry() { return nullptr; }
};
template <class T, class I, class V = T> struct TableDot {
    const DotEntry<T, I, V>* e = entry();
    T operator()(const V* v, const I* i, int64_t a, int64_t b, const T* x, int64_t xs, uint64_t c, int* bad) const {
        return e->dot(v, i, a, b, x, xs, c, bad);
    }
    static const DotEntry<T, I, V>* entry();
};
template <> const DotEntry<float, int32_t>* TableDot<float, int32_t>::entry() { return &dots().f32i32; }
template <> const DotEntry<float, int64_t>* TableDot<float, int64_t>::entry() { return &dots().f32i64; }
template <> const DotEntry<double, int32_t>* TableDot<double, int32_t>::entry() { return &dots().f64i32; }
template <> const DotEntry<double, int64_t>* TableDot<double, int64_t>::entry() { return &dots().f64i64; }
template <> const DotEntry<float, int32_t, Half>* TableDot<float, int32_t, Half>::entry() { return &dotsF16().h16i32; }
template <> const DotEntry<float, int64_t, Half>* TableDot<float, int64_t, Half>::entry() { return &dotsF16().h16i64; }
template <> const DotEntry<float, int32_t, BHalf>* TableDot<float, int32_t, BHalf>::entry() { return &dots().b16i32; }
template <> const DotEntry<float, int64_t, BHalf>* TableDot<float, int64_t, BHalf>::entry() { return &dots().b16i64; }
template <> struct Dot<float, int32_t, Half> : TableDot<float, int32_t, Half> {};
template <> struct Dot<float, int64_t, Half> : TableDot<float, int64_t, Half> {};
template <> struct Dot<float, int32_t, BHalf> : TableDot<float, int32_t, BHalf> {};
template <> struct Dot<float, int64_t, BHalf> : TableDot<float, int64_t, BHalf> {};
template <> struct Dot<float, int32_t> : TableDot<float, int32_t> {};
template <> struct Dot<float, int64_t> : TableDot<float, int64_t> {};
template <> struct Dot<double, int32_t> : TableDot<double, int32_t> {};
template <> struct Dot<double, int64_t> : TableDot<double, int64_t> {};

// Nonzeros per chunk when nvec > 1: each chunk's indices and values stay in L1
// while every vector passes over them.
constexpr int64_t kChunk = 1024;

// out[v] := sum over [ka, kb) of val[k] * X[idx[k], v], v < nvec.
template <class T, class I, class V, class D>
void segSums(const SpmvTilingData& t, const I* idx, const V* val, const T* x, int64_t ka, int64_t kb,
             D dot, T* out, int* bad) {
    for (int64_t v = 0; v < t.nvec; ++v) out[v] = T{};
    for (int64_t c = ka; c < kb; c += kChunk) {
        const int64_t ce = std::min(kb, c + kChunk);
        for (int64_t v = 0; v < t.nvec; ++v)
            out[v] = add(out[v], dot(val, idx, c, ce, x + v * t.xColStride, t.xRowStride,
                                     static_cast<uint64_t>(t.cols), bad));
    }
}

// nvec > 1 with X's rows contiguous (mvGather): out[v] := the sum over
// [ka, kb) for every vector; false on an index out of range (checked first).
template <class T, class I, class V>
bool segSumsMv(const SpmvTilingData& t, const I* idx, const V* val, const T* x, int64_t ka, int64_t kb, T* out) {
    const UIndex<I> lim = indexLimit<I>(static_cast<uint64_t>(t.cols));
    if (kb > ka && !chunkIndicesOk(idx, ka, kb, lim)) return false;
    forMvBlocks(t.nvec, [&](auto w, int64_t v0) __attribute__((always_inline)) {
        mvGather<decltype(w)::value>(val, idx, ka, ka, kb, x + v0, t.xRowStride, out + v0, lim);
    });
    return true;
}

// nvec > 1 with X's rows contiguous: full rows [ra, rb) of a block whose
// nonzeros lie in [kLo, kHi], checked as rowsN1Mode checks them (indptr a
// chunk of rows ahead, indices a span ahead), then the epilogue per element.
// Returns nonzero on malformed structure.
// W > 0 (rowsMvAny): nvec == W, beta 0 and y's vectors contiguous (column
// stride 1), fixed for the block, so that the row loop has no switch on the
// width, on beta or on alpha per row or element: the sums stored straight
// into y's row (times alpha unless One). W == 0: any nvec and epilogue.
template <int W, bool One, class T, class I, class V>
int rowsMv(const I* indptr, const I* idx, const V* val, const T* x, T* y, const SpmvTilingData& t,
           int64_t ra, int64_t rb, int64_t kLo, int64_t kHi, T alpha, T beta) {
    const UIndex<I> lim = indexLimit<I>(static_cast<uint64_t>(t.cols));
    int64_t a = static_cast<int64_t>(indptr[ra]);
    if (a < kLo || a > kHi) return 1;
    int64_t chk = a;  // nonzeros [a, chk) are checked
    T out[kMvWidth];
    // Scattered rows of X past kScatterPfMinBytes are prefetched kPrefetch
    // nonzeros ahead, as the transposed kernel prefetches its partial's rows
    // (scatterRowsMv); each loop over kMvWidth vectors prefetches its own
    // piece of the row (float64 rows of 16 vectors span two lines); the
    // block's last kPrefetch nonzeros prefetch nothing. Random 3e5 with 3e6
    // nonzeros, C-order X, 2 threads, through Python, ms (scipy): float32 16
    // vectors 100-105 without -> 13-18 (67-97); float64 4 vectors 24-27 ->
    // 9-10 (24-33); float64 16 vectors, the first piece only 71-96, every
    // piece 70-79 (132-158).
    const int64_t xBytes = static_cast<int64_t>(std::min<uint64_t>(static_cast<uint64_t>(t.cols), uint64_t(1) << 36)) *
                           t.nvec * static_cast<int64_t>(sizeof(T));
    const bool pf = prefetchMode(idx, kLo, kHi, 1, xBytes) == kPfScattered;
    // A run of empty rows, where y is not read (beta 0), is filled as one
    // stretch with alpha * 0 (+0 unless alpha's signs make it -0): the row
    // loop's fixed cost per row was most of a product whose rows are mostly
    // empty (1e5 x 1e6, 5,000 nonzeros, 4 float64 vectors: 0.38 ms against
    // scipy's 0.22, which only skips such rows).
    const bool fillEmpty = t.betaMode == SPMV_BETA_ZERO;
    const bool yRows = t.yColStride == 1 && t.yRowStride == t.nvec;  // rows of y one stretch
    T zero;
    epilogue(SPMV_BETA_ZERO, alpha, beta, T{}, &zero);
    for (int64_t r = ra; r < rb;) {
        const int64_t re = std::min(rb, r + kChunkRows);
        const int64_t e = static_cast<int64_t>(indptr[re]);
        if (e > kHi || !nonDecreasing(indptr, r, re)) return 1;
        for (; r < re; ++r) {
            const int64_t n = static_cast<int64_t>(indptr[r + 1]);
            if (n == a && fillEmpty) {  // rows [r, q) are empty (indptr checked above)
                const int64_t q = emptyRunEnd(indptr, r, re, a);
                if (yRows) {
                    std::fill(y + r * t.nvec, y + q * t.nvec, zero);
                } else {
                    for (int64_t i = r; i < q; ++i)
                        for (int64_t v = 0; v < t.nvec; ++v) y[i * t.yRowStride + v * t.yColStride] = zero;
                }
                r = q - 1;
                continue;
            }
            if (!checkAhead(idx, &chk, n, kHi, lim)) return 1;
            T* yr = y + r * t.yRowStride;
            const int64_t kpf = pf ? std::max(a, std::min(n, kHi - kPrefetch)) : a;
            if constexpr (W > 0) {
                mvGather<W>(val, idx, a, kpf, n, x, t.xRowStride, out, lim);
                for (int j = 0; j < W; ++j) yr[j] = One ? out[j] : mul(alpha, out[j]);
            } else {
                forMvBlocks(t.nvec, [&](auto w, int64_t v0) __attribute__((always_inline)) {
                    constexpr int Wb = decltype(w)::value;
                    mvGather<Wb>(val, idx, a, kpf, n, x + v0, t.xRowStride, out, lim);
                    for (int j = 0; j < Wb; ++j)
                        epilogue(t.betaMode, alpha, beta, out[j], yr + (v0 + j) * t.yColStride);
                });
            }
            a = n;
        }
    }
    return 0;
}

template <class T, class I, class V>
int rowsMvAny(const I* indptr, const I* idx, const V* val, const T* x, T* y, const SpmvTilingData& t,
              int64_t ra, int64_t rb, int64_t kLo, int64_t kHi, T alpha, T beta) {
    // Real values stored as the result type only: complex ones showed no
    // gain (complex64, 4 vectors, random 2e5 x 2e5, 20 a row, into a
    // caller's y: 16-22 ms against 12-22 with the epilogue, alternating
    // processes on a noisy host), and each widened store type would add six
    // copies of the loop.
    if constexpr (std::is_same_v<T, V> && std::is_arithmetic_v<T>) {
        if (t.betaMode == SPMV_BETA_ZERO && t.yColStride == 1) {
            const bool one = isOne(alpha);
#define AL_ROWS_MV(W)                                                                                 \
    return one ? rowsMv<W, true>(indptr, idx, val, x, y, t, ra, rb, kLo, kHi, alpha, beta)            \
               : rowsMv<W, false>(indptr, idx, val, x, y, t, ra, rb, kLo, kHi, alpha, beta)
            switch (t.nvec) {
                case 2: AL_ROWS_MV(2);
                case 4: AL_ROWS_MV(4);
                case 8: AL_ROWS_MV(8);
                default: break;
            }
#undef AL_ROWS_MV
        }
    }
    return rowsMv<0, false>(indptr, idx, val, x, y, t, ra, rb, kLo, kHi, alpha, beta);
}

template <class T, class I, class V>
void spmvN(uint32_t b, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    const I* indptr = static_cast<const I*>(args[0]);
    const I* idx = static_cast<const I*>(args[1]);
    const V* val = static_cast<const V*>(args[2]);
    const T* x = static_cast<const T*>(args[3]);
    T* y = static_cast<T*>(args[4]);
    void* ws = args[5];
    const T alpha = fromBytes<T>(t.alpha), beta = fromBytes<T>(t.beta);
    const int64_t rows = t.rows, nnzT = static_cast<int64_t>(indptr[rows]);
    if (t.cols == 0) {  // X has no rows: no nonzero can be valid, every row sums to 0
        const int64_t r0 = rows * b / nb, r1 = rows * (b + 1) / nb;
        // Still malformed: a decreasing indptr (each block checks its rows' pairs).
        bool bad = b == 0 && nnzT > 0;
        for (int64_t r = r0; r < r1; ++r) bad |= indptr[r + 1] < indptr[r];
        if (bad) flagError(ws);
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t v = 0; v < t.nvec; ++v)
                epilogue(t.betaMode, alpha, beta, T{}, y + r * t.yRowStride + v * t.yColStride);
        return;
    }
    const Segment s = blockSegment(indptr, rows, nnzT, b, nb);
    const bool shared = headShared(indptr, s);
    const Dot<T, I, V> dot{};
    const uint64_t cols = static_cast<uint64_t>(t.cols);
    int bad = 0;
    T* head = carrySlot<T>(ws, t, b, 0);
    T* tail = carrySlot<T>(ws, t, b, 1);
    const int64_t ra = s.r0 + (shared ? 1 : 0);
    // several vectors with X's rows contiguous: a row of X per nonzero
    const bool mv = t.nvec > 1 && t.xColStride == 1;
    if (shared) {  // its indptr pair is this block's to check
        const int64_t e = static_cast<int64_t>(indptr[s.r0 + 1]);
        bad |= e < static_cast<int64_t>(indptr[s.r0]);
        if (mv) bad |= !segSumsMv(t, idx, val, x, s.k0, clampK(e, s.k0, s.k1), head);
        else segSums(t, idx, val, x, s.k0, clampK(e, s.k0, s.k1), dot, head, &bad);
    }
    if (t.nvec == 1) {
        if (ra < s.r1) {
            if (const auto* e = Dot<T, I, V>::entry())  // the ISA's row loop, dot inlined
                bad |= e->rows(indptr, idx, val, x, t.xRowStride, y, t.yRowStride, ra, s.r1, s.k0, s.k1, cols,
                               alpha, beta, t.betaMode, spmvArraysPlan<V, I>(t));
            else
                bad |= rowsN1(indptr, idx, val, x, t.xRowStride, y, t.yRowStride, ra, s.r1, s.k0, s.k1, cols,
                              alpha, beta, t.betaMode, spmvArraysPlan<V, I>(t), dot);
        }
    } else if (mv) {
        if (ra < s.r1) bad |= rowsMvAny(indptr, idx, val, x, y, t, ra, s.r1, s.k0, s.k1, alpha, beta);
    } else {
        std::vector<T> acc(static_cast<size_t>(t.nvec));
        int64_t a = static_cast<int64_t>(indptr[ra]);
        for (int64_t r = ra; r < s.r1; ++r) {
            const int64_t e = static_cast<int64_t>(indptr[r + 1]);
            bad |= e < a;
            const int64_t ka = clampK(a, s.k0, s.k1), kb = clampK(e, ka, s.k1);
            segSums(t, idx, val, x, ka, kb, dot, acc.data(), &bad);
            for (int64_t v = 0; v < t.nvec; ++v)
                epilogue(t.betaMode, alpha, beta, acc[size_t(v)], y + r * t.yRowStride + v * t.yColStride);
            a = e;
        }
    }
    if (s.r1 < rows) {
        const int64_t ka = s.r1 == s.r0 ? s.k0 : clampK(static_cast<int64_t>(indptr[s.r1]), s.k0, s.k1);
        if (mv) bad |= !segSumsMv(t, idx, val, x, ka, s.k1, tail);
        else segSums(t, idx, val, x, ka, s.k1, dot, tail, &bad);
    }
    if (bad) flagError(ws);
}

// Row r's total = tails of the blocks that left it open (in block order) + the
// head of the block that completes it; the epilogue is applied once.
template <class T, class I>
void fixupN(void* const* args, const SpmvTilingData& t) {
    const I* indptr = static_cast<const I*>(args[0]);
    T* y = static_cast<T*>(args[4]);
    void* ws = args[5];
    if (t.cols == 0) return;
    const T alpha = fromBytes<T>(t.alpha), beta = fromBytes<T>(t.beta);
    const uint32_t nb = static_cast<uint32_t>(t.usedCoreNum);
    const int64_t rows = t.rows, nnzT = static_cast<int64_t>(indptr[rows]);
    std::vector<Segment> seg(nb);
    std::vector<char> sh(nb);
    for (uint32_t b = 0; b < nb; ++b) {
        seg[b] = blockSegment(indptr, rows, nnzT, b, nb);
        sh[b] = headShared(indptr, seg[b]);
    }
    for (int64_t v = 0; v < t.nvec; ++v) {
        int64_t carryRow = -1;
        T carry{};
        for (uint32_t b = 0; b < nb; ++b) {
            const Segment& s = seg[b];
            if (s.r0 < s.r1) {
                if (sh[b]) {
                    T acc = carryRow == s.r0 ? add(carry, carrySlot<T>(ws, t, b, 0)[v]) : carrySlot<T>(ws, t, b, 0)[v];
                    epilogue(t.betaMode, alpha, beta, acc, y + s.r0 * t.yRowStride + v * t.yColStride);
                }
                carryRow = -1;
            }
            if (s.r1 < rows) {
                const T tl = carrySlot<T>(ws, t, b, 1)[v];
                carry = carryRow == s.r1 ? add(carry, tl) : tl;
                carryRow = s.r1;
            }
        }
    }
}

// spmv_pack_rows_cpu for elements of type T: block b's share of X's rows.
// Rows contiguous already (only padded): a row at a time. Columns contiguous
// (Fortran order): tiles of kPackTile rows, each column's piece read in
// order and written with stride nvec into a tile that stays in L1.
constexpr int64_t kPackTile = 64;
template <class T>
void packRows(uint32_t b, uint32_t nb, const T* x, T* dst, const SpmvTilingData& t) {
    const int64_t n = t.cols, nv = t.nvec, rs = t.xRowStride, cs = t.xColStride;
    const int64_t r0 = (n / nb) * b + (n % nb) * b / nb;
    const int64_t r1 = (n / nb) * (b + 1) + (n % nb) * (b + 1) / nb;
    if (cs <= rs) {
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t v = 0; v < nv; ++v) dst[r * nv + v] = x[r * rs + v * cs];
        return;
    }
    for (int64_t ra = r0; ra < r1; ra += kPackTile) {
        const int64_t rb = std::min(r1, ra + kPackTile);
        for (int64_t v = 0; v < nv; ++v) {
            const T* s = x + v * cs;
            T* d = dst + v;
            for (int64_t r = ra; r < rb; ++r) d[r * nv] = s[r * rs];
        }
    }
}

}  // namespace
}  // namespace spmvm

void spmv_pack_rows_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withTypes(t.valueType, t.indexType, [&](auto v, auto) {
        using T = typename decltype(v)::type;
        spmvm::packRows<T>(b, nb, static_cast<const T*>(args[0]), static_cast<T*>(args[1]), t);
    });
}

void spmv_kernel_merge_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withStoredTypes(t.valueType, t.valueStore, t.indexType, [&](auto v, auto i, auto s) {
        spmvm::spmvN<typename decltype(v)::type, typename decltype(i)::type, typename decltype(s)::type>(
            b, nb, args, t);
    });
}

void spmv_fixup_merge_cpu(uint32_t b, uint32_t, void* const* args, const void* tiling) {
    if (b != 0) return;
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withTypes(t.valueType, t.indexType, [&](auto v, auto i) {
        spmvm::fixupN<typename decltype(v)::type, typename decltype(i)::type>(args, t);
    });
}

const char* spmvMergeIsa() { return spmvm::dots().isa; }

void spmvWidenF16(const uint16_t* src, float* dst, int64_t n) {
    spmvm::dotsF16().widenF16(reinterpret_cast<const Half*>(src), dst, n);
}
const char* spmvWidenF16Isa() { return spmvm::dotsF16().isa; }

bool spmvScattered32(const int32_t* idx, int64_t lo, int64_t hi, int64_t stride) {
    return spmvm::scattered(idx, lo, hi, stride);
}
bool spmvScattered64(const int64_t* idx, int64_t lo, int64_t hi, int64_t stride) {
    return spmvm::scattered(idx, lo, hi, stride);
}

void spmvRowPrefetchForce(int32_t mode) { spmvm::rowPrefetchForce(mode); }

void spmvWidenBaseline(int32_t store, const uint16_t* src, float* dst, int64_t n) {
    const spmvm::DotTable& t = spmvm::dotBaseline();
    const int32_t zero = 0;
    const float one = 1.0f;
    for (int64_t i = 0; i < n; ++i) {
        int bad = 0;
        dst[i] = store == AL_R_16F ? t.h16i32.dot(reinterpret_cast<const Half*>(src + i), &zero, 0, 1, &one, 1, 1, &bad)
                                   : t.b16i32.dot(reinterpret_cast<const BHalf*>(src + i), &zero, 0, 1, &one, 1, 1, &bad);
    }
}

}  // namespace al
