// SpMV value arithmetic shared by the reference and the merge-path kernels, so
// both define the same semantics: complex with the textbook product (as scipy's
// sparsetools: Inf/NaN propagate alike), integers wrapping (as numpy, through
// unsigned math), alpha == 1 leaving the sum untouched.
//
// Everything but the two 16-bit storage types (plain data) has internal
// linkage (an unnamed namespace): each translation
// unit, including the per-ISA ones built with -mavx2, gets its own copy, so the
// linker can never hand a baseline TU an instantiation compiled for AVX2.
#ifndef ASCEND_LINALG_KERNELS_SPMV_ARITH_H
#define ASCEND_LINALG_KERNELS_SPMV_ARITH_H

#include <atomic>
#include <cstdint>
#include <cstring>

#include "ascend_linalg/al_types.h"
#include "../../host/spmv_tiling.h"  // kSpmvStoreF32

#ifdef __F16C__  // the AVX2 TUs (-mf16c): one instruction per float16 value
#include <immintrin.h>
#endif

namespace al {

// Values stored in 16 bits and computed in float32 (the SpMV seed's
// mixed-precision modes): widened exactly as they are read (widen below), so
// a product over them equals the float32 product over a float32 copy of the
// values. Plain data with external linkage (the per-ISA tables name them);
// the conversions have internal linkage, like everything else here.
struct Half {  // IEEE binary16
    uint16_t bits;
};
struct BHalf {  // bfloat16
    uint16_t bits;
};
// A numpy bool value (one byte, nonzero true): widened to 1 or 0, as numpy's
// cast of a bool array to a number type gives.
struct Bool8 {
    uint8_t bits;
};

namespace {

// A value the optimiser must take as it is: the products of a complex
// multiply pass through it before they are summed. GCC 12's SLP vectoriser
// fuses {a*b - c*d, a*e + c*f} into vfmaddsub (one rounding) even with
// -ffp-contract=off: a row of X times a complex64 value, two vectors at a time
// in the transposed AVX2 kernel, gave sums one rounding away from scipy's
// (test_one_thread_gives_scipys_bits). Products that are opaque register
// values cannot be fused.
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define AL_SPMV_OPAQUE(v) __asm__("" : "+x"(v))
#elif defined(__GNUC__) && defined(__aarch64__)
#define AL_SPMV_OPAQUE(v) __asm__("" : "+w"(v))
#else
#define AL_SPMV_OPAQUE(v) ((void)0)
#endif

template <class R> struct Cx {
    R re, im;
    Cx operator*(const Cx& o) const {
        R rr = re * o.re, ii = im * o.im, ri = re * o.im, ir = im * o.re;
        AL_SPMV_OPAQUE(rr);
        AL_SPMV_OPAQUE(ii);
        AL_SPMV_OPAQUE(ri);
        AL_SPMV_OPAQUE(ir);
        return {rr - ii, ri + ir};
    }
    Cx operator+(const Cx& o) const { return {re + o.re, im + o.im}; }
};

template <class T> struct Acc { using type = T; };
template <> struct Acc<int32_t> { using type = uint32_t; };
template <> struct Acc<int64_t> { using type = uint64_t; };

template <class T> inline T mul(T a, T b) {
    using U = typename Acc<T>::type;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <class T> inline T add(T a, T b) {
    using U = typename Acc<T>::type;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}

// alpha * acc, except that alpha == 1 returns acc untouched: a complex
// product by (1, 0) would turn an infinite part into NaN (inf * 0), which
// scipy's plain product never does.
template <class T> inline bool isOne(const T& a) { return a == T(1); }
template <class R> inline bool isOne(const Cx<R>& a) { return a.re == R(1) && a.im == R(0); }
template <class T> inline T scale(T alpha, T acc) { return isOne(alpha) ? acc : mul(alpha, acc); }

template <class T> inline T fromBytes(const unsigned char* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

// Malformed structure: set the status word at the start of the workspace.
inline void flagError(void* workspace) {
    reinterpret_cast<std::atomic<int32_t>*>(workspace)->store(1, std::memory_order_relaxed);
}

// A stored value as the compute type T (a no-op where they are one type;
// Half and BHalf are widened exactly below).
template <class T, class V> inline T widen(const V& v) { return static_cast<T>(v); }
// float16 -> float32 without branches (selects): the conversion sits inside
// the unrolled row chains, where a branchy one multiplied the code. Normal
// numbers rebias the exponent (15 -> 127); Inf and NaN rebias once more, to
// 255, keeping the payload; subnormals and zero are the float
// 2^-14 * (1 + m/1024) minus 2^-14, which is exactly m * 2^-24. The AVX2 TUs
// (-mf16c) use the one instruction instead.
template <> inline float widen<float, Half>(const Half& h) {
#ifdef __F16C__
    return _cvtsh_ss(h.bits);
#else
    const uint32_t em = h.bits & 0x7fffu, sign = uint32_t(h.bits & 0x8000u) << 16;
    uint32_t o = (em << 13) + (uint32_t(112) << 23);
    o += em >= 0x7c00u ? (uint32_t(112) << 23) : 0u;
    const uint32_t sb = (em << 13) + (uint32_t(113) << 23), mb = uint32_t(113) << 23;
    float sf, mf;
    std::memcpy(&sf, &sb, 4);
    std::memcpy(&mf, &mb, 4);
    const float d = sf - mf;
    uint32_t db;
    std::memcpy(&db, &d, 4);
    o = em < 0x0400u ? db : o;
    o |= sign;
    float out;
    std::memcpy(&out, &o, 4);
    return out;
#endif
}
// n float16 values to float32, exactly: eight at a time with F16C where the
// TU has it (-mf16c), the scalar widen above for the rest.
inline void widenHalfArray(const Half* src, float* dst, int64_t n) {
    int64_t i = 0;
#ifdef __F16C__
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
    for (; i < n; ++i) dst[i] = widen<float>(src[i]);
}
// Without a branch: a jump on each value's truth is mispredicted on random
// bools. GCC, knowing the value is 0 or 1, made one of the conversion (a
// jump to load 0.0 or 1.0) and of value * x (x itself, or x * 0): random
// bools ran a 1000^2 Poisson A x in 10.6-12.0 ms against all-true ones'
// 1.9-2.7. The integer 0 or 1 is made opaque, so it is converted as any
// integer is.
template <class T> inline T widenBool(const Bool8& b) {
    int32_t i = b.bits != 0;
#if defined(__GNUC__)
    __asm__("" : "+r"(i));
#endif
    return static_cast<T>(i);
}
template <> inline float widen<float, Bool8>(const Bool8& b) { return widenBool<float>(b); }
template <> inline double widen<double, Bool8>(const Bool8& b) { return widenBool<double>(b); }
template <> inline float widen<float, BHalf>(const BHalf& h) {  // the upper half of a float32
    const uint32_t f = uint32_t(h.bits) << 16;
    float out;
    std::memcpy(&out, &f, 4);
    return out;
}

template <class T> struct TypeTag { using type = T; };

// f(TypeTag<V>{}, TypeTag<I>{}) for the C++ value type V of an alDataType_t and
// index type I of an alIndexType_t: the one place kernels map enums to types.
template <class F>
inline void withTypes(int32_t valueType, int32_t indexType, F&& f) {
    auto index = [&](auto v) {
        if (indexType == AL_INDEX_64I) f(v, TypeTag<int64_t>{});
        else f(v, TypeTag<int32_t>{});
    };
    switch (valueType) {
        case AL_R_32F: return index(TypeTag<float>{});
        case AL_R_64F: return index(TypeTag<double>{});
        case AL_C_32F: return index(TypeTag<Cx<float>>{});
        case AL_C_64F: return index(TypeTag<Cx<double>>{});
        case AL_R_32I: return index(TypeTag<int32_t>{});
        case AL_R_64I: return index(TypeTag<int64_t>{});
        default: return;  // the host admits no other type
    }
}

// f(TypeTag<T>{}, TypeTag<I>{}, TypeTag<V>{}): withTypes plus the type V the
// values are stored in: T unless valueStore names another type, which the
// host admits only as spmvWidenedValues (host/spmv_internal.h) allows: 16-bit
// values with float32 compute, any index type; and, int32 indices only
// (each pair is one more instantiation of every kernel), int8 or bool values
// with float32 compute and float32 (valueStore kSpmvStoreF32), int32, int64,
// int8 or bool values with float64 compute (scipy's result type of such a
// matrix and a float64 x).
template <class F>
inline void withStoredTypes(int32_t valueType, int32_t valueStore, int32_t indexType, F&& f) {
    if (valueStore != 0 && valueStore != AL_R_16F && valueStore != AL_R_16BF) {
        if (indexType != AL_INDEX_32I) return;
        using I = TypeTag<int32_t>;
        if (valueType == AL_R_64F) {
            using T = TypeTag<double>;
            switch (valueStore) {
                case kSpmvStoreF32: return f(T{}, I{}, TypeTag<float>{});
                case AL_R_32I: return f(T{}, I{}, TypeTag<int32_t>{});
                case AL_R_64I: return f(T{}, I{}, TypeTag<int64_t>{});
                case AL_R_8I: return f(T{}, I{}, TypeTag<int8_t>{});
                case AL_B_8: return f(T{}, I{}, TypeTag<Bool8>{});
                default: return;
            }
        }
        if (valueType == AL_R_32F) {
            using T = TypeTag<float>;
            switch (valueStore) {
                case AL_R_8I: return f(T{}, I{}, TypeTag<int8_t>{});
                case AL_B_8: return f(T{}, I{}, TypeTag<Bool8>{});
                default: return;
            }
        }
        return;
    }
    if (valueStore == AL_R_16F || valueStore == AL_R_16BF) {
        if (valueType != AL_R_32F) return;
        auto index = [&](auto v) {
            if (indexType == AL_INDEX_64I) f(TypeTag<float>{}, TypeTag<int64_t>{}, v);
            else f(TypeTag<float>{}, TypeTag<int32_t>{}, v);
        };
        if (valueStore == AL_R_16F) index(TypeTag<Half>{});
        else index(TypeTag<BHalf>{});
        return;
    }
    withTypes(valueType, indexType, [&](auto v, auto i) { f(v, i, v); });
}

}  // namespace
}  // namespace al

#endif
