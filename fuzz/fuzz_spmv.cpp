// libFuzzer harness: alSpmv on the CPU device, and the merge-path kernels it
// launches run directly with 1..8 blocks (the host only splits work above
// 16384 nonzeros per block, too large for fuzzing speed), the binned A^T x
// (spmvt_bins.h) among them with 1..4 chunks.
//
// Each input builds one call: op, value and index types (sometimes invalid or
// mismatched), shape (sometimes negative), nvec, X/Y strides, alpha/beta
// (NaN, -0.0 and 0/1 included), NULL pointers, and a CSR structure that starts
// well-formed and is then mutated (indptr decreasing / negative / past nnz /
// huge, indices negative / >= cols / huge, for int32 and int64). Every buffer
// is allocated at exactly the size the descriptor claims.
//
// Oracle (__builtin_trap on any mismatch):
//   * the status is the one the documented validation order gives; malformed
//     structure is AL_STATUS_INVALID_VALUE (an empty Y included);
//   * on success Y equals an independent long-double / wrapping-integer
//     reference: to rounding for finite data, NaN exactly where the reference
//     has NaN, untouched (bitwise) outside the addressed elements;
//   * beta == 0 never reads Y (Y is NaN-filled first);
//   * the structure arrays, values and X are never written.
// ASan/UBSan catch any out-of-bounds access or undefined behaviour.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <limits>
#include <vector>

#include "ascend_linalg/al_sparse.h"
#include "fuzz_common.h"
#include "host/spmv_tiling.h"
#include "kernels/spmv/spmv_kernel_merge.h"

namespace {

using fz::Buf;
using fz::CL;
using fz::fail;
using fz::Reader;

struct CxF {
    float re, im;
};
struct CxD {
    double re, im;
};

alHandle_t handle() {
    static alHandle_t h = [] {
        alHandle_t x = nullptr;
        if (alCreate(&x, AL_DEVICE_CPU, 0) != AL_STATUS_SUCCESS) fail("alCreate(CPU) failed");
        return x;
    }();
    return h;
}

size_t typeBytes(int t) {
    switch (t) {
        case AL_R_32F: case AL_R_32I: return 4;
        case AL_R_64F: case AL_R_64I: case AL_C_32F: return 8;
        case AL_C_64F: return 16;
        default: return 0;
    }
}

// ---------------------------------------------------------------- element types
template <class T> struct Tr;
template <> struct Tr<float> {
    static constexpr bool cx = false, integer = false;
    static constexpr long double eps = FLT_EPSILON, big = FLT_MAX / 1e6, tiny = FLT_TRUE_MIN;
    static CL cl(float v) { return {v, 0}; }
    static float make(long double re, long double) { return static_cast<float>(re); }
};
template <> struct Tr<double> {
    static constexpr bool cx = false, integer = false;
    static constexpr long double eps = DBL_EPSILON, big = DBL_MAX / 1e6, tiny = DBL_TRUE_MIN;
    static CL cl(double v) { return {v, 0}; }
    static double make(long double re, long double) { return static_cast<double>(re); }
};
template <> struct Tr<CxF> {
    static constexpr bool cx = true, integer = false;
    static constexpr long double eps = FLT_EPSILON, big = FLT_MAX / 1e6, tiny = FLT_TRUE_MIN;
    static CL cl(CxF v) { return {v.re, v.im}; }
    static CxF make(long double re, long double im) { return {static_cast<float>(re), static_cast<float>(im)}; }
};
template <> struct Tr<CxD> {
    static constexpr bool cx = true, integer = false;
    static constexpr long double eps = DBL_EPSILON, big = DBL_MAX / 1e6, tiny = DBL_TRUE_MIN;
    static CL cl(CxD v) { return {v.re, v.im}; }
    static CxD make(long double re, long double im) { return {static_cast<double>(re), static_cast<double>(im)}; }
};
template <> struct Tr<int32_t> {
    static constexpr bool cx = false, integer = true;
};
template <> struct Tr<int64_t> {
    static constexpr bool cx = false, integer = true;
};

// One value: mostly small dyadic numbers (sums stay exact), with NaN, +-Inf,
// -0.0 and raw bit patterns when `specials`.
template <class T> T genValue(Reader& r, bool specials, bool bulk);
long double genReal(Reader& r, bool specials, bool bulk, bool f32) {
    const uint8_t k = bulk ? static_cast<uint8_t>(r.bulk()) : r.byte();
    const uint8_t v = bulk ? static_cast<uint8_t>(r.bulk() >> 8) : r.byte();
    if (specials) {
        switch (k % 32) {
            case 0: return std::numeric_limits<long double>::quiet_NaN();
            case 1: return (v & 1) ? INFINITY : -INFINITY;
            case 2: return -0.0L;
            case 3: {  // raw bits
                if (f32) {
                    uint32_t b = bulk ? static_cast<uint32_t>(r.bulk()) : r.u32();
                    float f;
                    std::memcpy(&f, &b, 4);
                    return f;
                }
                uint64_t b = bulk ? r.bulk() : r.u64();
                double d;
                std::memcpy(&d, &b, 8);
                return d;
            }
            default: break;
        }
    }
    return (static_cast<int>(v % 33) - 16) / 4.0L;
}
template <> float genValue<float>(Reader& r, bool s, bool b) { return static_cast<float>(genReal(r, s, b, true)); }
template <> double genValue<double>(Reader& r, bool s, bool b) { return static_cast<double>(genReal(r, s, b, false)); }
template <> CxF genValue<CxF>(Reader& r, bool s, bool b) {
    float re = static_cast<float>(genReal(r, s, b, true));
    return {re, static_cast<float>(genReal(r, s, b, true))};
}
template <> CxD genValue<CxD>(Reader& r, bool s, bool b) {
    double re = static_cast<double>(genReal(r, s, b, false));
    return {re, static_cast<double>(genReal(r, s, b, false))};
}
template <> int32_t genValue<int32_t>(Reader& r, bool s, bool b) {
    const uint8_t k = b ? static_cast<uint8_t>(r.bulk()) : r.byte();
    if (s && k % 4 == 0) return static_cast<int32_t>(b ? static_cast<uint32_t>(r.bulk()) : r.u32());
    return static_cast<int32_t>((b ? r.bulk() >> 8 : r.byte()) % 9) - 4;
}
template <> int64_t genValue<int64_t>(Reader& r, bool s, bool b) {
    const uint8_t k = b ? static_cast<uint8_t>(r.bulk()) : r.byte();
    if (s && k % 4 == 0) return static_cast<int64_t>(b ? r.bulk() : r.u64());
    return static_cast<int64_t>((b ? r.bulk() >> 8 : r.byte()) % 9) - 4;
}

// alpha / beta: the values with fast paths (0, 1, -0.0), NaN, and ordinary ones.
template <class T> T genScalar(Reader& r) {
    const uint8_t k = r.byte() % 12;
    if constexpr (Tr<T>::integer) {
        switch (k) {
            case 0: return 0;
            case 1: return 1;
            case 2: return -1;
            case 3: return 2;
            default: return genValue<T>(r, k >= 10, false);
        }
    } else {
        long double re = 0, im = 0;
        switch (k) {
            case 0: break;
            case 1: re = 1; break;
            case 2: re = -1; break;
            case 3: re = 2; break;
            case 4: re = 0.5; break;
            case 5: re = -0.0L; break;                                              // not bitwise 0: general beta
            case 6: re = std::numeric_limits<long double>::quiet_NaN(); break;
            case 7: im = 1; break;                                                  // i (real types: 0)
            case 8: re = 1; im = -0.0L; break;                                      // == 1 by value
            case 9: im = std::numeric_limits<long double>::quiet_NaN(); break;
            default: return genValue<T>(r, k == 11, false);
        }
        return Tr<T>::make(re, im);
    }
}

// ---------------------------------------------------------------- arithmetic
// The kernels' semantics (spmv_arith.h), in long double or wrapping uint64.
struct Acc {
    CL v{0, 0};
    uint64_t u = 0;
    long double bound = 0;  // sum of |terms| (NaN parts counted as 0)
    int64_t n = 0;          // terms
    bool inf = false;       // an infinite operand was involved
};
inline long double mag(long double x) { return std::isnan(x) ? 0.0L : std::fabs(x); }
inline bool isInf(const CL& a) { return std::isinf(a.re) || std::isinf(a.im); }
inline CL cmul(const CL& a, const CL& b, bool cx) {
    if (!cx) return {a.re * b.re, 0};
    return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
inline long double cmag(const CL& a) { return mag(a.re) + mag(a.im); }

template <class T> uint64_t asU(T v) { return static_cast<uint64_t>(static_cast<int64_t>(v)); }

template <class T>
void accumulate(Acc& acc, const T& a, const T& b) {
    if constexpr (Tr<T>::integer) {
        acc.u += asU(a) * asU(b);
    } else {
        CL x = Tr<T>::cl(a), y = Tr<T>::cl(b);
        acc.inf |= isInf(x) || isInf(y);
        CL p = cmul(x, y, Tr<T>::cx);
        acc.v.re += p.re;
        acc.v.im += p.im;
        acc.bound += cmag(x) * cmag(y);
        ++acc.n;
    }
}

template <class T> bool bitsEqual(const T& a, const T& b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }
template <class T> bool isOneValue(const T& a) {
    if constexpr (Tr<T>::cx) return a.re == 1 && a.im == 0;
    else return a == T(1);
}
enum { MODE_GENERAL = 0, MODE_ZERO = 1, MODE_ONE = 2 };
template <class T> int betaMode(const T& beta) {
    T zero{}, one{};
    if constexpr (Tr<T>::cx) one.re = 1;
    else one = T(1);
    if (bitsEqual(beta, zero)) return MODE_ZERO;
    if (bitsEqual(beta, one)) return MODE_ONE;
    return MODE_GENERAL;
}

// Compare one output element with the reference (alpha/beta epilogue applied here).
template <class T>
void check(const Acc& acc, const T& alpha, const T& beta, int mode, const T& yOld, const T& got, long long where) {
    if constexpr (Tr<T>::integer) {
        uint64_t v = isOneValue(alpha) ? acc.u : asU(alpha) * acc.u;
        if (mode == MODE_ONE) v += asU(yOld);
        else if (mode == MODE_GENERAL) v += asU(beta) * asU(yOld);
        if (static_cast<T>(v) != got) fail("integer result differs from the reference", where);
    } else {
        constexpr bool cx = Tr<T>::cx;
        const CL a = Tr<T>::cl(alpha), b = Tr<T>::cl(beta), y = Tr<T>::cl(yOld), g = Tr<T>::cl(got);
        bool inf = acc.inf;
        long double bound;
        CL res;
        if (isOneValue(alpha)) {
            res = acc.v;
            bound = acc.bound;
        } else {
            res = cmul(a, acc.v, cx);
            bound = cmag(a) * acc.bound;
            inf |= isInf(a);
        }
        if (mode == MODE_ONE) {
            res.re += y.re;
            res.im += y.im;
            bound += cmag(y);
            inf |= isInf(y);
        } else if (mode == MODE_GENERAL) {
            CL by = cmul(b, y, cx);
            res.re += by.re;
            res.im += by.im;
            bound += cmag(b) * cmag(y);
            inf |= isInf(b) || isInf(y);
        }
        // Infinities (inf - inf) and overflow make the value order-dependent;
        // so does an overflowing sum (the long double one does not), even
        // when alpha == 0 hides it from `bound` (0 * inf is NaN).
        if (inf || !(bound < Tr<T>::big) || !(acc.bound < Tr<T>::big)) return;
        // Rounding of every product and sum, and underflow (at most one
        // denormal step per operation). A product of A and x that underflows
        // is then scaled by alpha, so its error is too (alpha = 5e264 turns a
        // value * x of 3e-499, 0 in double, into 1.5e-234).
        const long double tol =
            64 * Tr<T>::eps * (bound + acc.bound) + 16 * (acc.n + 4) * Tr<T>::tiny * (1 + cmag(a));
        const long double rs[2] = {res.re, res.im}, gs[2] = {g.re, g.im};
        if (fz::verbose())
            std::fprintf(stderr, "element %lld: want (%Lg, %Lg) got (%Lg, %Lg) alpha (%Lg, %Lg) beta (%Lg, %Lg) "
                         "mode %d y (%Lg, %Lg) acc (%Lg, %Lg) terms %lld bound %Lg\n", where, res.re, res.im, g.re,
                         g.im, a.re, a.im, b.re, b.im, mode, y.re, y.im, acc.v.re, acc.v.im,
                         static_cast<long long>(acc.n), bound);
        for (int c = 0; c < (cx ? 2 : 1); ++c) {
            if (std::isnan(rs[c]) != std::isnan(gs[c])) fail("NaN where the reference has none, or the reverse", where, c);
            if (!std::isnan(rs[c]) && !(std::fabs(rs[c] - gs[c]) <= tol)) fail("value differs from the reference", where, c);
        }
    }
}

// ---------------------------------------------------------------- one call
struct Layout {
    int64_t len, nvec, rs, cs;
};
size_t extentElems(const Layout& l) {
    if (l.len <= 0 || l.nvec <= 0) return 0;
    return static_cast<size_t>((l.len - 1) * l.rs + (l.nvec - 1) * l.cs + 1);
}
Layout genLayout(Reader& r, int64_t len, int64_t nvec) {
    Layout l{len, nvec, 1, std::max<int64_t>(len, 1)};
    const int64_t pad = 1 + r.below(3);
    switch (r.below(8)) {
        case 0: case 1: break;                                                    // column-major
        case 2: l.rs = nvec; l.cs = 1; break;                                     // row-major
        case 3: l.cs = len + pad; break;                                          // padded columns
        case 4: l.rs = nvec + pad; l.cs = 1; break;                               // padded rows
        case 5: l.rs = r.below(2); l.cs = r.below(2) ? 0 : len; break;            // broadcast (0 strides)
        case 6: l.rs = r.below(5); l.cs = r.below(9); break;                      // anything >= 0
        default: l.rs = 2 + r.below(3); l.cs = 1; break;                          // interleaved
    }
    return l;
}

// 16-bit values (float32 compute): the bits a value is stored as, and the
// float32 the reference takes them for, computed apart from the kernels'
// conversion. Values that float16 cannot hold exactly (raw float32 bits) keep
// their low 16 bits as an arbitrary float16 pattern.
bool isHalf(int vt) { return vt == AL_R_16F || vt == AL_R_16BF; }
uint16_t halfBits(int vt, float v) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    if (vt == AL_R_16BF) return static_cast<uint16_t>(b >> 16);
    const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
    if (std::isnan(v)) return sign | 0x7e00u;
    if (std::isinf(v)) return sign | 0x7c00u;
    if (v == 0.0f) return sign;
    int e;
    const float m = std::frexp(std::fabs(v), &e);  // |v| = (2m) * 2^(e-1), 2m in [1, 2)
    const float frac = (2.0f * m - 1.0f) * 1024.0f;
    if (e - 1 < -14 || e - 1 > 15 || frac != std::floor(frac)) return static_cast<uint16_t>(b);
    return static_cast<uint16_t>(sign | ((e - 1 + 15) << 10) | static_cast<uint16_t>(frac));
}
float halfValue(int vt, uint16_t h) {
    if (vt == AL_R_16BF) {
        const uint32_t b = uint32_t(h) << 16;
        float f;
        std::memcpy(&f, &b, 4);
        return f;
    }
    const int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? std::ldexp(float(m), -24) : std::ldexp(float(1024 + m), e - 25);
    return (h & 0x8000u) ? -v : v;
}

// Values stored narrower than the float32/float64 compute type and widened as
// the kernels read them (the host's documented pairs, stated here apart from
// its own table): int8 and bool under float32; float32, int32, int64, int8
// and bool under float64; int32 indices only.
bool widens(int vt, int ct, int it) {
    if (it != AL_INDEX_32I) return false;
    if (ct == AL_R_32F) return vt == AL_R_8I || vt == AL_B_8;
    if (ct == AL_R_64F) return vt == AL_R_32F || vt == AL_R_32I || vt == AL_R_64I || vt == AL_R_8I || vt == AL_B_8;
    return false;
}
size_t storedBytes(int vt) {
    switch (vt) {
        case AL_R_8I: case AL_B_8: return 1;
        case AL_R_32F: case AL_R_32I: return 4;
        default: return 8;  // AL_R_64I
    }
}
// Stores value v (of compute type T) as type vt at p and returns the value
// the reference takes it for: the stored value widened as numpy's astype
// does (a bool byte: any nonzero byte is 1). A bool's byte comes from the
// fuzzer (`byte`) so that values other than 0 and 1 occur.
template <class T>
T storeNarrow(int vt, T v, uint8_t byte, unsigned char* p) {
    switch (vt) {
        case AL_B_8: *p = byte; return byte ? T(1) : T(0);
        case AL_R_8I: {
            const int8_t q = static_cast<int8_t>(byte);
            std::memcpy(p, &q, 1);
            return static_cast<T>(q);
        }
        case AL_R_32I: {
            const int32_t q = std::isfinite(v) && std::fabs(v) < 2e6 ? static_cast<int32_t>(v * 1000) : INT32_MIN;
            std::memcpy(p, &q, 4);
            return static_cast<T>(q);
        }
        case AL_R_64I: {
            // past 2^53 (rounded to the nearest float64) now and then
            const int64_t q = std::isfinite(v) && std::fabs(v) < 1e6 ? static_cast<int64_t>(v * 1e6) * 1021 + byte
                                                                     : INT64_MAX - byte;
            std::memcpy(p, &q, 8);
            return static_cast<T>(q);
        }
        default: {  // AL_R_32F
            const float q = static_cast<float>(v);
            std::memcpy(p, &q, 4);
            return static_cast<T>(q);
        }
    }
}

constexpr int64_t kI32Specials[] = {-1, INT32_MIN, INT32_MAX, 1 << 30};
constexpr int64_t kI64Specials[] = {-1, INT64_MIN, INT64_MAX, int64_t(1) << 31, (int64_t(1) << 32) + 1,
                                    int64_t(1) << 62};

template <class T, class I>
int runTyped(Reader& r, uint8_t flags, int op, int indexTypeTag, int valueTypeTag, const int typeTags[3]) {
    const bool trans = op == AL_OP_T;
    const bool specials = flags & 0x08;
    const bool direct = flags & 0x01;
    // ---- shape
    int64_t rows, cols, nnz;
    switch (r.below(8)) {
        case 6:  // medium
            rows = r.below(300);
            cols = r.below(300);
            nnz = r.below(1500);
            break;
        case 7:  // long rows: the vector paths and the prefetching loops (>= 4096 nonzeros)
            rows = 1 + r.below(4);
            cols = 1 + r.below(5000);
            nnz = r.below(2) ? 4096 + r.below(2500) : r.below(600);
            break;
        case 5:
            if (r.below(4) == 0) {  // narrow A^T x: 2^16 nonzeros or more, a partial of at most 16 KiB
                rows = 1 + r.below(20000);
                cols = 1 + r.below(r.below(2) ? 16 : 2100);
                nnz = 65536 + r.below(3000);
                break;
            }
            [[fallthrough]];
        default:
            rows = r.below(17);
            cols = r.below(17);
            nnz = r.below(40);
            break;
    }
    // x prefetched inside long rows (the AVX2 dot products of A x) in every
    // such row, or by the rule (which these small x never meet): the
    // prefetch reads indices not checked yet and must stay in bounds
    al::spmvRowPrefetchForce(r.below(2) ? 1 : -1);
    int64_t nvec = 1;
    switch (r.below(12)) {
        case 0: nvec = 0; break;
        case 1: nvec = 2; break;
        case 2: nvec = 3; break;
        case 3: nvec = 5; break;
        case 4: nvec = 4; break;  // 2, 4 and 8: the fixed-width row and scatter loops
        case 5: nvec = 8; break;
        default: break;
    }
    if (nvec > 1 && nnz > 1500) nnz = 1500;  // keep one execution fast
    // Invalid sizes now and then (must be rejected before anything is read).
    uint8_t bad = r.byte();
    if (bad == 1) rows = -1 - static_cast<int64_t>(r.below(3));
    if (bad == 2) cols = -1 - static_cast<int64_t>(r.below(3));
    if (bad == 3) nnz = -1;
    const int64_t xLen = trans ? rows : cols, yLen = trans ? cols : rows;
    Layout xl = genLayout(r, xLen, nvec), yl = genLayout(r, yLen, nvec);
    if (bad == 4) xl.len += 1;
    if (bad == 5) yl.len = std::max<int64_t>(0, yl.len - 1);
    if (bad == 6) yl.nvec += 1;
    if (bad == 7) xl.rs = -1;
    if (bad == 8) yl.cs = -1;
    if (bad == 9) xl.nvec = yl.nvec = -1;
    const bool sizesOk = rows >= 0 && cols >= 0 && nnz >= 0 && xl.len == xLen && yl.len == yLen &&
                         xl.nvec == yl.nvec && xl.nvec >= 0 && xl.rs >= 0 && xl.cs >= 0 && yl.rs >= 0 && yl.cs >= 0;
    // NULL pointers now and then.
    const uint8_t nul = r.byte();
    const bool nullAlpha = nul == 1, nullBeta = nul == 2, nullIndptr = nul == 3, nullIndices = nul == 4,
               nullValues = nul == 5, nullX = nul == 6, nullY = nul == 7, nullA = nul == 8, nullXD = nul == 9,
               nullYD = nul == 10, nullHandle = nul == 11;

    // ---- structure: well-formed first
    const int64_t R = std::max<int64_t>(rows, 0), N = std::max<int64_t>(nnz, 0), Cc = std::max<int64_t>(cols, 0);
    std::vector<I> indptr(static_cast<size_t>(R + 1), 0);
    std::vector<I> indices(static_cast<size_t>(N));
    std::vector<T> values(static_cast<size_t>(N));
    int64_t used = N;
    if (r.below(4) == 0) used = r.below(static_cast<uint32_t>(N + 1));  // indptr[-1] < nnz: a tail never read
    if (R == 0) used = 0;
    {
        std::vector<int64_t> cuts(static_cast<size_t>(R > 0 ? R - 1 : 0));
        const uint8_t shape = r.below(4);
        for (auto& c : cuts) {
            if (shape == 0) c = used;                                   // everything in row 0
            else if (shape == 1) c = r.bulkBelow(8) ? 0 : r.bulkBelow(used + 1);  // mostly empty rows first
            else c = r.bulkBelow(used + 1);
        }
        std::sort(cuts.begin(), cuts.end());
        for (int64_t i = 1; i < R; ++i) indptr[i] = static_cast<I>(cuts[i - 1]);
        if (R > 0) indptr[R] = static_cast<I>(used);
        const uint8_t ishape = r.below(4);
        for (int64_t k = 0; k < N; ++k) {
            int64_t c = 0;
            if (Cc > 0) {
                if (ishape == 0) c = r.bulkBelow(Cc);                  // scattered
                else if (ishape == 1) c = (k * 7) % Cc;                // banded-ish
                else if (ishape == 2) c = Cc - 1;                       // one column
                else c = (k * 4099) % Cc;                               // far jumps
            }
            indices[k] = static_cast<I>(c);
            values[k] = genValue<T>(r, specials, true);
        }
        // A few values from the fuzzer's bytes (NaN placement etc.).
        for (int i = r.below(4); i > 0 && N > 0; --i) values[r.below(static_cast<uint32_t>(N))] = genValue<T>(r, true, false);
    }
    // ---- then mutate
    for (int m = r.below(8) < 5 ? 0 : 1 + r.below(3); m > 0; --m) {
        const bool onIndptr = r.below(2) == 0;
        int64_t v;
        const uint8_t what = r.below(10);
        if (!onIndptr && N == 0) continue;
        const int64_t pos = r.below(static_cast<uint32_t>(onIndptr ? R + 1 : N));
        const int64_t cur = onIndptr ? static_cast<int64_t>(indptr[pos]) : static_cast<int64_t>(indices[pos]);
        switch (what) {
            case 0: v = -1; break;
            case 1: v = onIndptr ? N + 1 : Cc; break;
            case 2: v = onIndptr ? N : Cc + 1; break;
            case 3: v = static_cast<int64_t>(static_cast<uint64_t>(cur) - 1); break;  // wraps at INT64_MIN
            case 4: v = static_cast<int64_t>(static_cast<uint64_t>(cur) + 1); break;
            case 5: v = sizeof(I) == 4 ? kI32Specials[r.below(4)] : kI64Specials[r.below(6)]; break;
            case 6: v = static_cast<int64_t>(sizeof(I) == 4 ? static_cast<int32_t>(r.u32()) : static_cast<int64_t>(r.u64())); break;
            case 7: v = onIndptr ? 0 : -static_cast<int64_t>(Cc); break;
            default: v = r.below(static_cast<uint32_t>((onIndptr ? N : Cc) + 2)); break;
        }
        if (onIndptr) indptr[pos] = static_cast<I>(v);
        else indices[pos] = static_cast<I>(v);
    }

    // 16-bit values: stored as their bits, the reference takes the widened values
    const bool half = isHalf(valueTypeTag) && std::is_same_v<T, float>;
    std::vector<uint16_t> hbits(half ? static_cast<size_t>(N) : 0);
    if constexpr (std::is_same_v<T, float>)
        for (size_t k = 0; k < hbits.size(); ++k) {
            hbits[k] = halfBits(valueTypeTag, values[k]);
            values[k] = halfValue(valueTypeTag, hbits[k]);
        }
    // values stored narrower (widens): stored bytes, the reference takes the widened values
    const bool narrow = !half && widens(valueTypeTag, typeTags[2], indexTypeTag);
    std::vector<unsigned char> nbytes(narrow ? static_cast<size_t>(N) * storedBytes(valueTypeTag) : 0);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
        if (narrow)
            for (int64_t k = 0; k < N; ++k)
                values[k] = storeNarrow<T>(valueTypeTag, values[k], r.byte(), nbytes.data() + k * storedBytes(valueTypeTag));
    const void* valueBytes = half ? static_cast<const void*>(hbits.data())
                           : narrow ? static_cast<const void*>(nbytes.data()) : values.data();

    // ---- exact-size buffers
    Buf bIndptr((R + 1) * sizeof(I)), bIndices(N * sizeof(I)),
        bValues(N * (half ? 2 : narrow ? storedBytes(valueTypeTag) : sizeof(T)));
    std::memcpy(bIndptr.p, indptr.data(), bIndptr.bytes);
    if (N) std::memcpy(bIndices.p, indices.data(), bIndices.bytes);
    if (N) std::memcpy(bValues.p, valueBytes, bValues.bytes);
    const size_t xN = sizesOk ? extentElems(xl) : 0, yN = sizesOk ? extentElems(yl) : 0;
    Buf bX(xN * sizeof(T)), bY(yN * sizeof(T));
    T* X = reinterpret_cast<T*>(bX.p);
    T* Y = reinterpret_cast<T*>(bY.p);
    for (size_t i = 0; i < xN; ++i) X[i] = genValue<T>(r, specials, true);
    for (size_t i = 0; i < yN; ++i) Y[i] = genValue<T>(r, specials, true);
    const T alpha = genScalar<T>(r), beta = genScalar<T>(r);
    const int mode = betaMode(beta);
    // Which Y elements the call addresses (count > 1: overlapping layout).
    std::vector<uint32_t> hits(yN, 0);
    bool overlap = false;
    if (sizesOk)
        for (int64_t i = 0; i < yl.len; ++i)
            for (int64_t v = 0; v < yl.nvec; ++v) overlap |= ++hits[size_t(i * yl.rs + v * yl.cs)] > 1;
    if constexpr (!Tr<T>::integer)
        if (mode == MODE_ZERO)  // never read: NaN must not show through
            for (size_t i = 0; i < yN; ++i)
                if (hits[i]) Y[i] = Tr<T>::make(NAN, NAN);
    std::vector<T> yOld(Y, Y + yN), xOld(X, X + xN);

    alCsrDescr A{rows, cols, nnz, nullIndptr ? nullptr : bIndptr.p, nullIndices ? nullptr : bIndices.p,
                 nullValues ? nullptr : bValues.p, static_cast<alIndexType_t>(indexTypeTag),
                 static_cast<alDataType_t>(valueTypeTag)};
    alDnMatDescr dX{xl.len, xl.nvec, xl.rs, xl.cs, nullX ? nullptr : bX.p, static_cast<alDataType_t>(typeTags[0])};
    alDnMatDescr dY{yl.len, yl.nvec, yl.rs, yl.cs, nullY ? nullptr : bY.p, static_cast<alDataType_t>(typeTags[1])};
    const alDataType_t ct = static_cast<alDataType_t>(typeTags[2]);

    // ---- the status the documented validation order gives
    int expect = AL_STATUS_SUCCESS;
    bool structural = false;  // reached the structure checks
    if (nullHandle) expect = AL_STATUS_HANDLE_IS_NULLPTR;
    else if (op != AL_OP_N && op != AL_OP_T) expect = AL_STATUS_INVALID_ENUM;
    else if (nullA || nullXD || nullYD) expect = AL_STATUS_INVALID_VALUE;
    else if (indexTypeTag != AL_INDEX_32I && indexTypeTag != AL_INDEX_64I) expect = AL_STATUS_INVALID_ENUM;
    else if (typeBytes(ct) == 0 ||
             (valueTypeTag != ct && !(isHalf(valueTypeTag) && ct == AL_R_32F) && !widens(valueTypeTag, ct, indexTypeTag)) ||
             typeTags[0] != ct || typeTags[1] != ct)
        expect = AL_STATUS_NOT_SUPPORTED;
    else if (!sizesOk) expect = AL_STATUS_INVALID_VALUE;
    else if (nullAlpha || nullBeta || nullIndptr || (N > 0 && (nullIndices || nullValues)) ||
             (yLen > 0 && nvec > 0 && nullY) || (xLen > 0 && nvec > 0 && nullX))
        expect = AL_STATUS_INVALID_VALUE;
    else {
        structural = true;
        const int64_t first = indptr[0], last = indptr[R];
        bool malformed = first != 0 || last < 0 || last > N;
        for (int64_t i = 0; i < R && !malformed; ++i) malformed = indptr[i + 1] < indptr[i];
        for (int64_t k = 0; k < last && !malformed; ++k)
            malformed = static_cast<int64_t>(indices[k]) < 0 || static_cast<int64_t>(indices[k]) >= Cc;
        if (malformed) expect = AL_STATUS_INVALID_VALUE;
    }

    // ---- run: the API, or the merge kernels with a chosen block count
    int got;
    const int64_t first = structural ? static_cast<int64_t>(indptr[0]) : -1;
    const int64_t last = structural ? static_cast<int64_t>(indptr[R]) : -1;
    if (direct && structural && yLen > 0 && nvec > 0 && first == 0 && last >= 0 && last <= N) {
        const uint32_t nb = 1 + r.below(8), nbReduce = 1 + r.below(8);
        al::SpmvTilingData t = al::spmvTiling(trans, rows, cols, nnz, nvec, half ? AL_R_32F : narrow ? ct : valueTypeTag,
                                              indexTypeTag, 1);
        t.valueStore = half ? valueTypeTag : !narrow ? 0 : valueTypeTag == AL_R_32F ? al::kSpmvStoreF32 : valueTypeTag;
        t.usedCoreNum = static_cast<int32_t>(nb);
        al::spmvLayout(&t);
        t.xRowStride = xl.rs;
        t.xColStride = xl.cs;
        t.yRowStride = yl.rs;
        t.yColStride = yl.cs;
        t.betaMode = mode == MODE_ZERO ? al::SPMV_BETA_ZERO : mode == MODE_ONE ? al::SPMV_BETA_ONE : al::SPMV_BETA_GENERAL;
        std::memcpy(t.alpha, &alpha, sizeof(T));
        std::memcpy(t.beta, &beta, sizeof(T));
        // Exact workspace; all but the status word poisoned with 0xff (NaN /
        // -1): a kernel reading a partial it never wrote gives a wrong answer.
        Buf ws(static_cast<size_t>(t.workspaceSize));
        std::memset(ws.p, 0xff, ws.bytes);
        std::memset(ws.p, 0, 64);
        void* args[6] = {bIndptr.p, bIndices.p, bValues.p, bX.p, bY.p, ws.p};
        const bool reverse = r.below(2);  // blocks are independent: any order
        // The binned A^T x (spmvt_bins.h) where the host allows it: nb
        // producers, 1..4 chunks, its own exact workspace, poisoned the same
        // way; the plain product sums in y, any other alpha/beta/stride in
        // the workspace's sum buffer.
        const bool binned = trans && nvec == 1 && cols > 0 &&
                            ((cols + (int64_t(1) << al::kSpmvBinShift) - 1) >> al::kSpmvBinShift) <=
                                al::kSpmvBinMaxBins &&
                            r.below(2);
        int32_t status = 0;
        if (binned) {
            const bool plain = mode == MODE_ZERO && betaMode(alpha) == MODE_ONE && yl.rs == 1;
            al::SpmvBinTiling bt = al::spmvBinTiling(t, last, 1 + r.below(4), plain);
            Buf wsb(static_cast<size_t>(bt.workspaceSize));
            std::memset(wsb.p, 0xff, wsb.bytes);
            std::memset(wsb.p, 0, 64);
            args[5] = wsb.p;
            for (bt.chunk = 0; bt.chunk < bt.chunks && !status; ++bt.chunk) {
                for (uint32_t i = 0; i < nb; ++i) al::spmvt_bin_cpu(reverse ? nb - 1 - i : i, nb, args, &bt);
                std::memcpy(&status, wsb.p, 4);
                if (!status)
                    for (uint32_t i = 0; i < nb; ++i) al::spmvt_drain_cpu(reverse ? nb - 1 - i : i, nb, args, &bt);
            }
        } else {
            for (uint32_t i = 0; i < nb; ++i) {
                const uint32_t b = reverse ? nb - 1 - i : i;
                (trans ? al::spmvt_kernel_merge_cpu : al::spmv_kernel_merge_cpu)(b, nb, args, &t);
            }
            if (!trans && nb > 1) al::spmv_fixup_merge_cpu(0, 1, args, &t);
            if (trans)
                for (uint32_t b = 0; b < nbReduce; ++b) al::spmvt_reduce_merge_cpu(b, nbReduce, args, &t);
            std::memcpy(&status, ws.p, 4);
        }
        got = status ? AL_STATUS_INVALID_VALUE : AL_STATUS_SUCCESS;
    } else {
        got = alSpmv(nullHandle ? nullptr : handle(), static_cast<alOperation_t>(op), nullAlpha ? nullptr : &alpha,
                     nullA ? nullptr : &A, nullXD ? nullptr : &dX, nullBeta ? nullptr : &beta,
                     nullYD ? nullptr : &dY, ct);
    }
    if (fz::verbose()) {  // what this input decoded to
        std::fprintf(stderr, "%s op %d value type %d index type %d rows %lld cols %lld nnz %lld nvec %lld "
                     "x strides (%lld, %lld) y strides (%lld, %lld) status %d expected %d\n", direct ? "direct" : "alSpmv", op,
                     valueTypeTag, indexTypeTag, (long long)rows, (long long)cols, (long long)nnz, (long long)nvec,
                     (long long)xl.rs, (long long)xl.cs, (long long)yl.rs, (long long)yl.cs, got, expect);
        for (int64_t i = 0; i <= R; ++i) std::fprintf(stderr, "indptr[%lld] = %lld\n", (long long)i, (long long)indptr[i]);
        for (int64_t k = 0; k < N; ++k) std::fprintf(stderr, "indices[%lld] = %lld\n", (long long)k, (long long)indices[k]);
        if constexpr (!Tr<T>::integer) {
            for (int64_t k = 0; k < N; ++k)
                std::fprintf(stderr, "values[%lld] = (%Lg, %Lg)\n", (long long)k, Tr<T>::cl(values[k]).re,
                             Tr<T>::cl(values[k]).im);
            for (size_t i = 0; i < xN; ++i)
                std::fprintf(stderr, "x[%zu] = (%Lg, %Lg)\n", i, Tr<T>::cl(X[i]).re, Tr<T>::cl(X[i]).im);
        }
    }
    if (got != expect) fail("status differs from the documented one", got, expect);

    // ---- inputs untouched, Y untouched outside the addressed elements
    if (std::memcmp(bIndptr.p, indptr.data(), bIndptr.bytes) != 0) fail("indptr was written");
    if (N && std::memcmp(bIndices.p, indices.data(), bIndices.bytes) != 0) fail("indices were written");
    if (N && std::memcmp(bValues.p, valueBytes, bValues.bytes) != 0) fail("values were written");
    if (xN && std::memcmp(X, xOld.data(), xN * sizeof(T)) != 0) fail("X was written");
    for (size_t i = 0; i < yN; ++i)
        if (!hits[i] && !bitsEqual(Y[i], yOld[i])) fail("Y written outside its addressed elements", i);
    if (expect != AL_STATUS_SUCCESS) {
        if (expect != AL_STATUS_INVALID_VALUE || !structural)  // validation errors write nothing
            for (size_t i = 0; i < yN; ++i)
                if (!bitsEqual(Y[i], yOld[i])) fail("Y written by a call that failed validation", i);
        return 0;
    }
    if (!sizesOk || overlap || yLen == 0 || nvec == 0) return 0;

    // ---- values against the reference
    std::vector<Acc> acc(static_cast<size_t>(yLen * nvec));
    for (int64_t i = 0; i < R; ++i)
        for (int64_t k = indptr[i]; k < static_cast<int64_t>(indptr[i + 1]); ++k) {
            const int64_t c = static_cast<int64_t>(indices[k]);
            for (int64_t v = 0; v < nvec; ++v) {
                if (trans) accumulate(acc[size_t(c * nvec + v)], values[k], X[i * xl.rs + v * xl.cs]);
                else accumulate(acc[size_t(i * nvec + v)], values[k], X[c * xl.rs + v * xl.cs]);
            }
        }
    for (int64_t i = 0; i < yLen; ++i)
        for (int64_t v = 0; v < nvec; ++v) {
            const size_t off = size_t(i * yl.rs + v * yl.cs);
            check(acc[size_t(i * nvec + v)], alpha, beta, mode, yOld[off], Y[off], i * 16 + v);
        }
    return 0;
}

template <class T>
int byIndex(Reader& r, uint8_t flags, int op, int it, int vt, const int tags[3]) {
    // An invalid index type tag still needs some buffers: int64 ones.
    if (it == AL_INDEX_32I) return runTyped<T, int32_t>(r, flags, op, it, vt, tags);
    return runTyped<T, int64_t>(r, flags, op, it, vt, tags);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Reader r(data, size);
    const uint8_t flags = r.byte();
    int op;
    switch (r.below(16)) {
        case 14: op = AL_OP_C; break;
        case 15: op = static_cast<int>(r.u32()); break;
        default: op = r.below(2) ? AL_OP_T : AL_OP_N; break;
    }
    static constexpr int kTypes[6] = {AL_R_32F, AL_R_64F, AL_C_32F, AL_C_64F, AL_R_32I, AL_R_64I};
    const uint8_t tsel = r.below(32);
    const int storage = kTypes[tsel % 6];  // the C++ type the buffers hold
    int vt = storage;
    if (tsel == 30) vt = AL_R_16F;          // float16 X, Y and compute: no kernel for them
    if (tsel == 29) {                       // 16-bit values, float32 X, Y and compute
        vt = r.below(2) ? AL_R_16F : AL_R_16BF;
        int tags[3] = {AL_R_32F, AL_R_32F, AL_R_32F};
        if (r.below(16) == 0) tags[r.below(3)] = kTypes[1 + r.below(5)];  // mismatched: refused
        int it = r.below(2) ? AL_INDEX_64I : AL_INDEX_32I;
        return byIndex<float>(r, flags, op, it, vt, tags);
    }
    if (tsel == 28) {  // values stored narrower, float32/float64 X, Y and compute (widened as read)
        static constexpr int k64[5] = {AL_R_32F, AL_R_32I, AL_R_64I, AL_R_8I, AL_B_8};
        const bool f64 = r.below(3) != 0;
        vt = f64 ? k64[r.below(5)] : (r.below(2) ? AL_R_8I : AL_B_8);
        const int ct = f64 ? AL_R_64F : AL_R_32F;
        int tags[3] = {ct, ct, ct};
        if (r.below(16) == 0) tags[r.below(3)] = kTypes[r.below(6)];  // mismatched: refused (or the same type)
        int it = r.below(8) ? AL_INDEX_32I : AL_INDEX_64I;            // int64 indices: refused
        if (f64) return byIndex<double>(r, flags, op, it, vt, tags);
        return byIndex<float>(r, flags, op, it, vt, tags);
    }
    if (tsel == 31) {  // any other int, but never a valid tag other than the buffers' type
        vt = static_cast<int>(r.u32());
        if (typeBytes(vt)) vt = -1 - vt;
    }
    int tags[3] = {vt, vt, vt};              // X, Y, compute
    const uint8_t mis = r.below(48);
    if (mis < 3) tags[mis] = kTypes[(tsel + 1 + r.below(5)) % 6];
    int it = r.below(2) ? AL_INDEX_64I : AL_INDEX_32I;
    if (r.below(32) == 0) it = r.below(2) ? 2 : static_cast<int>(r.u32());
    switch (storage) {
        case AL_R_32F: return byIndex<float>(r, flags, op, it, vt, tags);
        case AL_R_64F: return byIndex<double>(r, flags, op, it, vt, tags);
        case AL_C_32F: return byIndex<CxF>(r, flags, op, it, vt, tags);
        case AL_C_64F: return byIndex<CxD>(r, flags, op, it, vt, tags);
        case AL_R_32I: return byIndex<int32_t>(r, flags, op, it, vt, tags);
        default: return byIndex<int64_t>(r, flags, op, it, vt, tags);
    }
}
