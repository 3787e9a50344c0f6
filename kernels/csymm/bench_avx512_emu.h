// Test-only: portable stand-ins for the AVX-512F intrinsics that
// csymm_ukernel_avx512.cpp uses, so that its logic (index tables, shuffles,
// epilogue) can be checked on a CPU without AVX-512. Force-included after
// <immintrin.h> when bench_csymm_kernel.cpp is built with AL_BENCH_AVX512_EMU
// (see that file); never part of the library. Semantics follow the Intel
// Intrinsics Guide; fused operations round once (std::fma).
#ifndef ASCEND_LINALG_BENCH_AVX512_EMU_H
#define ASCEND_LINALG_BENCH_AVX512_EMU_H

#include <cmath>
#include <cstdint>
#include <cstring>

struct EmuPs {
    float v[16];
};
struct EmuEpi {
    int32_t v[16];
};

#define AL_EMU_MAP(expr)                  \
    EmuPs r;                              \
    for (int i = 0; i < 16; ++i) r.v[i] = (expr); \
    return r;
static inline EmuPs emu_setzero() { AL_EMU_MAP(0.0f) }
static inline EmuPs emu_set1(float x) { AL_EMU_MAP(x) }
static inline EmuPs emu_load(const float* p) { AL_EMU_MAP(p[i]) }
static inline void emu_store(float* p, EmuPs a) { std::memcpy(p, a.v, sizeof a.v); }
static inline EmuPs emu_add(EmuPs a, EmuPs b) { AL_EMU_MAP(a.v[i] + b.v[i]) }
static inline EmuPs emu_mul(EmuPs a, EmuPs b) { AL_EMU_MAP(a.v[i] * b.v[i]) }
static inline EmuPs emu_fmadd(EmuPs a, EmuPs b, EmuPs c) { AL_EMU_MAP(std::fma(a.v[i], b.v[i], c.v[i])) }
static inline EmuPs emu_fnmadd(EmuPs a, EmuPs b, EmuPs c) { AL_EMU_MAP(std::fma(-a.v[i], b.v[i], c.v[i])) }
static inline EmuPs emu_fmsub(EmuPs a, EmuPs b, EmuPs c) { AL_EMU_MAP(std::fma(a.v[i], b.v[i], -c.v[i])) }
static inline EmuPs emu_fmaddsub(EmuPs a, EmuPs b, EmuPs c) {
    AL_EMU_MAP(std::fma(a.v[i], b.v[i], (i % 2) ? c.v[i] : -c.v[i]))
}
static inline EmuPs emu_shuffle(EmuPs a, EmuPs b, int imm) {
    AL_EMU_MAP((i % 4 < 2 ? a : b).v[i / 4 * 4 + ((imm >> (2 * (i % 4))) & 3)])
}
static inline EmuPs emu_permutex2var(EmuPs a, EmuEpi idx, EmuPs b) {
    AL_EMU_MAP((idx.v[i] & 16 ? b : a).v[idx.v[i] & 15])
}
static inline EmuEpi emu_setr_epi32(int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7,
                                    int a8, int a9, int a10, int a11, int a12, int a13, int a14,
                                    int a15) {
    return EmuEpi{{a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15}};
}
#undef AL_EMU_MAP

// Some of these are macros in <immintrin.h> (immediate operands); drop them first.
#undef _mm512_setr_epi32
#undef _mm512_shuffle_ps
#undef _mm512_set1_ps
#define __m512 EmuPs
#define __m512i EmuEpi
#define _mm512_setzero_ps emu_setzero
#define _mm512_set1_ps emu_set1
#define _mm512_load_ps emu_load
#define _mm512_loadu_ps emu_load
#define _mm512_store_ps emu_store
#define _mm512_storeu_ps emu_store
#define _mm512_add_ps emu_add
#define _mm512_mul_ps emu_mul
#define _mm512_fmadd_ps emu_fmadd
#define _mm512_fnmadd_ps emu_fnmadd
#define _mm512_fmsub_ps emu_fmsub
#define _mm512_fmaddsub_ps emu_fmaddsub
#define _mm512_shuffle_ps emu_shuffle
#define _mm512_permutex2var_ps emu_permutex2var
#define _mm512_setr_epi32 emu_setr_epi32

#endif
