// SpMV value arithmetic shared by the reference and the merge-path kernels, so
// both define the same semantics: complex with the textbook product (as scipy's
// sparsetools: Inf/NaN propagate alike), integers wrapping (as numpy, through
// unsigned math), alpha == 1 leaving the sum untouched.
//
// Everything has internal linkage (an unnamed namespace): each translation
// unit, including the per-ISA ones built with -mavx2, gets its own copy, so the
// linker can never hand a baseline TU an instantiation compiled for AVX2.
#ifndef ASCEND_LINALG_KERNELS_SPMV_ARITH_H
#define ASCEND_LINALG_KERNELS_SPMV_ARITH_H

#include <atomic>
#include <cstdint>
#include <cstring>

#include "ascend_linalg/al_types.h"

namespace al {
namespace {

template <class R> struct Cx {
    R re, im;
    Cx operator*(const Cx& o) const { return {re * o.re - im * o.im, re * o.im + im * o.re}; }
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

}  // namespace
}  // namespace al

#endif
