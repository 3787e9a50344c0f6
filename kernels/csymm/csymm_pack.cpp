// csymm packing (contract in csymm_pack.h). O(rows*kc) per call; every source
// read is contiguous along whichever index has unit stride, so packing stays a
// small fraction of the O(m*n*k) product.
#include "csymm_pack.h"

#include <cstdlib>
#include <cstring>

namespace al {

bool csymmPackVectorised() {
    static const bool on = [] {
#if defined(AL_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__))
        const char* env = std::getenv("ASCEND_LINALG_CSYMM_PACK");
        if (env && std::strcmp(env, "scalar") == 0) return false;
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2") != 0;
#else
        return false;
#endif
    }();
    return on;
}

namespace {

// panel[(p-p0)*2w + r] = re X(rb+r, p), panel[... + w + r] = im, for r < rv and
// p in [pa, pb), with X(rb+r, p) = base[(rb+r)*rs + p*cs]. W > 0 is the panel
// width known at compile time (full panels of the usual shapes, so the inner
// loops unroll and vectorise); W == 0 takes w and rv at run time.
template <int W>
void packRectT(float* panel, int32_t w, const float* base, int64_t rs, int64_t cs, int64_t rb,
               int32_t rv, int64_t pa, int64_t pb, int64_t p0) {
    if (W > 0) w = rv = W;
    if (rs == 1) {  // rows contiguous: walk p outer, de-interleave one step
        for (int64_t p = pa; p < pb; ++p) {
            const float* src = base + 2 * (rb + p * cs);
            float* re = panel + (p - p0) * 2 * w;
            for (int32_t r = 0; r < (W > 0 ? W : rv); ++r) {
                re[r] = src[2 * r];
                re[w + r] = src[2 * r + 1];
            }
        }
        return;
    }
    // p contiguous (cs == 1) or neither: four steps at a time, every row, so
    // each source row is read in 32-byte runs and the panel lines stay in L1.
    int64_t p = pa;
    for (; p + 4 <= pb; p += 4) {
        float* dst = panel + (p - p0) * 2 * w;
        for (int32_t r = 0; r < (W > 0 ? W : rv); ++r) {
            const float* s = base + 2 * ((rb + r) * rs + p * cs);
            const int64_t c2 = 2 * cs;
            dst[r] = s[0];
            dst[w + r] = s[1];
            dst[2 * w + r] = s[c2];
            dst[3 * w + r] = s[c2 + 1];
            dst[4 * w + r] = s[2 * c2];
            dst[5 * w + r] = s[2 * c2 + 1];
            dst[6 * w + r] = s[3 * c2];
            dst[7 * w + r] = s[3 * c2 + 1];
        }
    }
    for (; p < pb; ++p) {
        float* dst = panel + (p - p0) * 2 * w;
        for (int32_t r = 0; r < (W > 0 ? W : rv); ++r) {
            const float* s = base + 2 * ((rb + r) * rs + p * cs);
            dst[r] = s[0];
            dst[w + r] = s[1];
        }
    }
}

void packRect(float* panel, int32_t w, const float* base, int64_t rs, int64_t cs, int64_t rb,
              int32_t rv, int64_t pa, int64_t pb, int64_t p0) {
    if (pa >= pb) return;
#if defined(AL_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__))
    if (csymmPackVectorised() && csymmPackRectAvx2(panel, w, base, rs, cs, rb, rv, pa, pb, p0)) return;
#endif
    if (rv == w) {
        switch (w) {
            case 4: return packRectT<4>(panel, w, base, rs, cs, rb, rv, pa, pb, p0);
            case 6: return packRectT<6>(panel, w, base, rs, cs, rb, rv, pa, pb, p0);
            case 8: return packRectT<8>(panel, w, base, rs, cs, rb, rv, pa, pb, p0);
            case 12: return packRectT<12>(panel, w, base, rs, cs, rb, rv, pa, pb, p0);
            case 16: return packRectT<16>(panel, w, base, rs, cs, rb, rv, pa, pb, p0);
            default: break;
        }
    }
    packRectT<0>(panel, w, base, rs, cs, rb, rv, pa, pb, p0);
}

// The diagonal band of a symmetric operand: per element, stored or mirrored.
void packSymBand(float* panel, int32_t w, const float* base, int64_t ld, bool upper, int64_t rb,
                 int32_t rv, int64_t pa, int64_t pb, int64_t p0) {
    for (int64_t p = pa; p < pb; ++p) {
        float* re = panel + (p - p0) * 2 * w;
        for (int32_t r = 0; r < rv; ++r) {
            const int64_t row = rb + r;
            const bool stored = upper ? (row <= p) : (row >= p);
            const float* s = base + 2 * (stored ? row + p * ld : p + row * ld);
            re[r] = s[0];
            re[w + r] = s[1];
        }
    }
}

}  // namespace

void csymmPackPanels(float* dst, const CsymmOperand& X, int64_t r0, int64_t rows, int64_t p0,
                     int64_t kc, int32_t w) {
    const int64_t panels = (rows + w - 1) / w;
    const int64_t pEnd = p0 + kc;
    const int64_t panelStride = kc * 2 * w;
    const bool general = X.kind == CSYMM_OPERAND_GENERAL;
    const bool upper = X.kind == CSYMM_OPERAND_SYM_UPPER;
    // Per panel: padding, and every part not read along unit-stride rows.
    for (int64_t q = 0; q < panels; ++q) {
        float* panel = dst + q * panelStride;
        const int64_t rb = r0 + q * w;
        const int32_t rv = static_cast<int32_t>(rows - q * w < w ? rows - q * w : w);
        if (rv < w) {  // zero padding rows, so the micro-kernel needs no row mask
            for (int64_t p = 0; p < kc; ++p) {
                std::memset(panel + p * 2 * w + rv, 0, sizeof(float) * (w - rv));
                std::memset(panel + p * 2 * w + w + rv, 0, sizeof(float) * (w - rv));
            }
        }
        if (general) {
            if (X.rs != 1) packRect(panel, w, X.base, X.rs, X.cs, rb, rv, p0, pEnd, p0);
            continue;
        }
        // Rows rb..rb+rv-1 meet the diagonal only for p in [rb, rb+rv). Below
        // that band every element is on one side of the diagonal, above it on
        // the other: upper stores r <= p (base[r + p*ld]), lower stores r >= p.
        // The stored side (unit-stride rows) is left to the pass below.
        const int64_t bandLo = rb < p0 ? p0 : (rb > pEnd ? pEnd : rb);
        const int64_t bandHi = rb + rv < p0 ? p0 : (rb + rv > pEnd ? pEnd : rb + rv);
        // p < band: r > p for every row. Upper mirrors (base[p + r*ld]).
        if (upper) packRect(panel, w, X.base, X.ld, 1, rb, rv, p0, bandLo, p0);
        packSymBand(panel, w, X.base, X.ld, upper, rb, rv, bandLo, bandHi, p0);
        // p >= band: r < p for every row. Lower mirrors (base[r*ld + p]).
        if (!upper) packRect(panel, w, X.base, X.ld, 1, rb, rv, bandHi, pEnd, p0);
    }
    // Unit-stride rows (stored side of SYM, GENERAL with rs == 1), a few
    // steps at a time across all panels: each step's source column is then
    // read as one forward run over the panels (a handful of streams the
    // hardware prefetcher follows, a handful of pages), where panel by panel
    // every step would open its own stream and, past a 4 KB column stride,
    // its own page. The panel writes stay runs of kStepChunk steps.
    if (general && X.rs != 1) return;
    constexpr int64_t kStepChunk = 8;
    const int64_t cs = general ? X.cs : X.ld;
    for (int64_t pa = p0; pa < pEnd; pa += kStepChunk) {
        const int64_t pz = pa + kStepChunk < pEnd ? pa + kStepChunk : pEnd;
        for (int64_t q = 0; q < panels; ++q) {
            const int64_t rb = r0 + q * w;
            const int32_t rv = static_cast<int32_t>(rows - q * w < w ? rows - q * w : w);
            int64_t lo = pa, hi = pz;
            if (upper) lo = lo > rb + rv ? lo : rb + rv;  // stored: p >= rb + rv
            else if (!general) hi = hi < rb ? hi : rb;    // stored: p < rb
            packRect(dst + q * panelStride, w, X.base, 1, cs, rb, rv, lo, hi, p0);
        }
    }
}

}  // namespace al
