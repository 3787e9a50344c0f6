// libFuzzer harness: alCsymm on the CPU device, and the csymm kernels run
// directly (the packed kernel with every micro-kernel this CPU supports, and
// the reference kernel) with 1..9 blocks on tilings for 1..8 cores.
//
// Each input builds one call: side, uplo (sometimes invalid), m, n (sometimes
// negative or huge), lda/ldb/ldc (tight, padded, too small, 0, negative,
// INT64_MAX), alpha/beta (0, 1, -0.0, i, NaN, ...), NULL pointers, and A, B, C
// allocated at exactly the size the arguments claim ((cols-1)*ld + rows).
//
// Oracle (__builtin_trap on any mismatch):
//   * the status is the one the documented validation order gives;
//   * on success C equals a long-double reference built from the stored
//     triangle only (the other triangle and the padding rows of A and B are
//     NaN): to float32 rounding, NaN exactly where the reference has NaN;
//   * beta == 0 never reads C (NaN-filled first); alpha == 0 only scales C;
//     alpha == 0 and beta == 1 leave C bitwise as it was;
//   * A, B and the padding rows of C are never written.
// ASan/UBSan catch any out-of-bounds access or undefined behaviour.
#include <algorithm>
#include <cfloat>
#include <climits>
#include <limits>
#include <vector>

#include "ascend_linalg/al_blas.h"
#include "fuzz_common.h"
#include "host/csymm_tiling.h"
#include "kernels/csymm/csymm_kernel.h"
#include "kernels/csymm/csymm_ukernel.h"

namespace {

using fz::Buf;
using fz::CL;
using fz::fail;
using fz::Reader;

alHandle_t handle() {
    static alHandle_t h = [] {
        alHandle_t x = nullptr;
        if (alCreate(&x, AL_DEVICE_CPU, 0) != AL_STATUS_SUCCESS) fail("alCreate(CPU) failed");
        return x;
    }();
    return h;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float genReal(Reader& r, bool specials, bool bulk) {
    const uint8_t k = bulk ? static_cast<uint8_t>(r.bulk()) : r.byte();
    const uint8_t v = bulk ? static_cast<uint8_t>(r.bulk() >> 8) : r.byte();
    if (specials) {
        switch (k % 32) {
            case 0: return kNaN;
            case 1: return (v & 1) ? INFINITY : -INFINITY;
            case 2: return -0.0f;
            case 3: {
                uint32_t b = bulk ? static_cast<uint32_t>(r.bulk()) : r.u32();
                float f;
                std::memcpy(&f, &b, 4);
                return f;
            }
            default: break;
        }
    }
    return (static_cast<int>(v % 33) - 16) / 4.0f;
}
alComplex genValue(Reader& r, bool specials, bool bulk) {
    float re = genReal(r, specials, bulk);
    return {re, genReal(r, specials, bulk)};
}
alComplex genScalar(Reader& r) {
    switch (r.below(12)) {
        case 0: return {0, 0};
        case 1: return {1, 0};
        case 2: return {-1, 0};
        case 3: return {0.5f, -2};
        case 4: return {-0.0f, 0};   // == 0 by value
        case 5: return {1, -0.0f};   // == 1 by value
        case 6: return {0, 1};
        case 7: return {kNaN, 0};
        case 8: return {0, kNaN};
        default: return genValue(r, r.below(4) == 0, false);
    }
}

int64_t max1(int64_t v) { return v > 1 ? v : 1; }
float bitsToFloat(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
int64_t satAdd(int64_t a, int64_t b) {
    int64_t s;
    return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
}

// A leading dimension for an operand with `rows` rows: mostly valid.
int64_t genLd(Reader& r, int64_t rows) {
    const int64_t need = max1(rows);
    switch (r.below(16)) {
        case 8: return satAdd(need, 1);
        case 9: return satAdd(need, 17);
        case 10: return need - 1;
        case 11: return 0;
        case 12: return -1 - static_cast<int64_t>(r.below(4));
        case 13: return INT64_MIN;
        case 14: return INT64_MAX;
        case 15: return satAdd(need, need);
        default: return satAdd(need, r.below(4) ? 0 : r.below(5));
    }
}

// Elements a column-major rows x cols operand spans with leading dimension ld;
// -1 when it does not fit the harness's budget (or overflows).
int64_t span(int64_t rows, int64_t cols, int64_t ld) {
    if (rows <= 0 || cols <= 0) return 0;
    int64_t a;
    if (__builtin_mul_overflow(cols - 1, ld, &a) || __builtin_add_overflow(a, rows, &a)) return -1;
    return a <= (int64_t(1) << 21) ? a : -1;
}

inline long double mag(long double x) { return std::isnan(x) ? 0.0L : std::fabs(x); }
inline long double cmag(CL a) { return mag(a.re) + mag(a.im); }
inline bool isInf(CL a) { return std::isinf(a.re) || std::isinf(a.im); }
inline CL cl(alComplex z) { return {z.real, z.imag}; }
inline CL cmul(CL a, CL b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
bool isZero(alComplex z) { return z.real == 0.0f && z.imag == 0.0f; }
bool isOne(alComplex z) { return z.real == 1.0f && z.imag == 0.0f; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Reader r(data, size);
    const uint8_t flags = r.byte();
    const bool specials = flags & 0x08, direct = flags & 0x01;
    // B row-major (alCsymmRowMajorB; CSYMM_CPU_B_ROW_MAJOR for the kernels), and
    // for the direct kernel runs the shared-L workspace (CSYMM_CPU_SHARED_PACK).
    const bool rowB = flags & 0x10, sharedWs = flags & 0x20;
    int side = r.below(2) ? AL_SIDE_RIGHT : AL_SIDE_LEFT;
    int uplo = r.below(2) ? AL_FILL_LOWER : AL_FILL_UPPER;
    if (r.below(32) == 0) side = r.below(2) ? 0 : static_cast<int>(r.u32());
    if (r.below(32) == 0) uplo = r.below(2) ? AL_FILL_UPPER + 100 : static_cast<int>(r.u32());
    int64_t m, n;
    switch (r.below(10)) {
        case 8:  // K past one cache block (kc = 256 for every micro-kernel)
            if (r.below(2)) { m = 257 + r.below(64); n = 1 + r.below(4); }
            else { m = 1 + r.below(4); n = 257 + r.below(64); }
            break;
        case 9: {  // sizes the validation must refuse or quick-return on
            const int64_t huge[] = {-1, INT64_MIN, INT64_MAX, int64_t(1) << 31, int64_t(1) << 40, 0};
            m = huge[r.below(6)];
            n = r.below(2) ? huge[r.below(6)] : r.below(8);
            break;
        }
        default:
            m = r.below(41);
            n = r.below(41);
            break;
    }
    const int64_t ka = side == AL_SIDE_RIGHT ? n : m;  // an invalid side reads as LEFT below
    // B(i, j) at B[i*bI + j*bJ]: bLen elements of each of bLines lines.
    const int64_t bLen = rowB ? n : m, bLines = rowB ? m : n;
    const int64_t lda = genLd(r, ka), ldb = genLd(r, bLen), ldc = genLd(r, m);
    const int64_t bI = rowB ? ldb : 1, bJ = rowB ? 1 : ldb;
    const alComplex alpha = genScalar(r), beta = genScalar(r);
    const uint8_t nul = r.byte();
    const bool nullA = nul == 1, nullB = nul == 2, nullC = nul == 3, nullAlpha = nul == 4, nullBeta = nul == 5,
               nullHandle = nul == 6;

    // ---- the status the documented validation order gives
    int expect = AL_STATUS_SUCCESS;
    const bool sideOk = side == AL_SIDE_LEFT || side == AL_SIDE_RIGHT;
    if (nullHandle) expect = AL_STATUS_HANDLE_IS_NULLPTR;
    else if (!sideOk) expect = AL_STATUS_INVALID_ENUM;
    else if (uplo != AL_FILL_UPPER && uplo != AL_FILL_LOWER) expect = AL_STATUS_INVALID_ENUM;
    else if (m < 0 || n < 0) expect = AL_STATUS_INVALID_VALUE;
    else if (nullAlpha || nullBeta) expect = AL_STATUS_INVALID_VALUE;
    else if (lda < max1(ka) || ldb < max1(bLen) || ldc < max1(m)) expect = AL_STATUS_INVALID_VALUE;
    else if (m > 0 && n > 0 && (nullA || nullB || nullC)) expect = AL_STATUS_INVALID_VALUE;

    // ---- exactly sized operands (none beyond the budget: such a call that
    // would succeed is skipped; one that must fail runs on empty buffers)
    const bool valid = expect == AL_STATUS_SUCCESS;
    const bool used = valid && m > 0 && n > 0;  // else nothing may be touched: empty buffers
    const int64_t aN = used ? span(ka, ka, lda) : 0, bN = used ? span(bLen, bLines, ldb) : 0,
                  cN = used ? span(m, n, ldc) : 0;
    if (aN < 0 || bN < 0 || cN < 0) return 0;
    const bool upper = uplo == AL_FILL_UPPER;
    Buf bA(aN * sizeof(alComplex)), bB(bN * sizeof(alComplex)), bC(cN * sizeof(alComplex));
    alComplex* A = reinterpret_cast<alComplex*>(bA.p);
    alComplex* B = reinterpret_cast<alComplex*>(bB.p);
    alComplex* C = reinterpret_cast<alComplex*>(bC.p);
    const alComplex nanZ{kNaN, kNaN};
    // A: the stored triangle holds values, everything else NaN (never read).
    for (int64_t j = 0; j < ka && aN; ++j)
        for (int64_t i = 0; i < lda && j * lda + i < aN; ++i) {
            const bool stored = i < ka && (upper ? i <= j : i >= j);
            A[j * lda + i] = stored ? genValue(r, specials, true) : nanZ;
        }
    for (int64_t j = 0; j < bLines && bN; ++j)
        for (int64_t i = 0; i < ldb && j * ldb + i < bN; ++i) B[j * ldb + i] = i < bLen ? genValue(r, specials, true) : nanZ;
    // C: padding rows hold a NaN with a payload that must survive bit for bit.
    const alComplex pad{bitsToFloat(0x7fc0beefu), bitsToFloat(0xffc0cafeu)};
    for (int64_t j = 0; j < n && cN; ++j)
        for (int64_t i = 0; i < ldc && j * ldc + i < cN; ++i)
            C[j * ldc + i] = i < m ? (isZero(beta) ? nanZ : genValue(r, specials, true)) : pad;
    for (int i = r.below(3); i > 0 && aN + bN > 0; --i) {  // NaN / Inf placed by the fuzzer
        const uint32_t at = r.below(static_cast<uint32_t>(aN + bN));
        alComplex v = genValue(r, true, false);
        if (at < aN) {
            const int64_t ai = at % lda, aj = at / lda;
            if (ai < ka && (upper ? ai <= aj : ai >= aj)) A[at] = v;
        } else if ((at - aN) % ldb < bLen) {
            B[at - aN] = v;
        }
    }
    const std::vector<alComplex> aOld(A, A + aN), bOld(B, B + bN), cOld(C, C + cN);

    // ---- run
    int got;
    if (direct && valid && m > 0 && n > 0) {
        const uint32_t threads = 1 + r.below(8), nb = 1 + r.below(9);
        al::CsymmTilingData t = al::csymmTiling(side, uplo, m, n, lda, ldb, ldc, alpha.real, alpha.imag,
                                                beta.real, beta.imag, al::csymmPlatformCpu(threads));
        if (rowB) t.cpuFlags |= al::CSYMM_CPU_B_ROW_MAJOR;
        void* args[4] = {A, B, C, nullptr};
        int count = 0;
        const al::CsymmUkernel* table = al::csymmUkernelTable(&count);
        const uint32_t pick = r.below(static_cast<uint32_t>(count + 1));
        const bool reverse = r.below(2);
        std::vector<char> wsMem;
        if (sharedWs && pick < static_cast<uint32_t>(count) && al::csymmUkernelSupported(table[pick])) {
            al::CsymmTilingData tw = t;
            tw.usedCoreNum = static_cast<int32_t>(nb);  // the workspace is sized for this launch
            if (const int64_t bytes = al::csymmPackedWorkspaceBytesFor(table[pick], tw); bytes > 0) {
                wsMem.assign(static_cast<size_t>(bytes) + 64, 0);
                args[3] = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(wsMem.data()) + 63) / 64 * 64);
                al::csymmPackedWorkspaceInitFor(table[pick], args[3], t);
                t.cpuFlags |= al::CSYMM_CPU_SHARED_PACK;
            }
        }
        for (uint32_t i = 0; i < nb; ++i) {
            const uint32_t b = reverse ? nb - 1 - i : i;
            if (pick == static_cast<uint32_t>(count) || !al::csymmUkernelSupported(table[pick]))
                al::csymm_kernel_ref_cpu(b, nb, args, &t);
            else
                al::csymmPackedRun(table[pick], b, nb, args, &t);
        }
        got = AL_STATUS_SUCCESS;
        if (isZero(alpha) && isOne(beta)) {  // the kernels compute 1*C; only the host skips it
            for (int64_t j = 0; j < n; ++j)
                for (int64_t i = 0; i < m; ++i) {
                    const CL c = cl(cOld[j * ldc + i]), g = cl(C[j * ldc + i]);
                    const CL want = {1.0L * c.re - 0.0L * c.im, 1.0L * c.im + 0.0L * c.re};
                    if (std::isnan(want.re) != std::isnan(g.re) || std::isnan(want.im) != std::isnan(g.im) ||
                        (!std::isnan(want.re) && want.re != g.re) || (!std::isnan(want.im) && want.im != g.im))
                        fail("direct kernel: 1*C differs", i, j);
                }
            return 0;
        }
    } else {
        got = (rowB ? alCsymmRowMajorB : alCsymm)(
            nullHandle ? nullptr : handle(), static_cast<alSideMode_t>(side), static_cast<alFillMode_t>(uplo), m, n,
            nullAlpha ? nullptr : &alpha, nullA ? nullptr : A, lda, nullB ? nullptr : B, ldb,
            nullBeta ? nullptr : &beta, nullC ? nullptr : C, ldc);
    }
    if (got != expect) fail("status differs from the documented one", got, expect);
    if (aN && std::memcmp(A, aOld.data(), aN * sizeof(alComplex)) != 0) fail("A was written");
    if (bN && std::memcmp(B, bOld.data(), bN * sizeof(alComplex)) != 0) fail("B was written");
    for (int64_t j = 0; j < n && cN; ++j)
        for (int64_t i = m; i < ldc && j * ldc + i < cN; ++i)
            if (std::memcmp(&C[j * ldc + i], &pad, sizeof(pad)) != 0) fail("C written outside its m x n block", i, j);
    if (!valid || m == 0 || n == 0) {
        if (cN && std::memcmp(C, cOld.data(), cN * sizeof(alComplex)) != 0) fail("C written by a call that did nothing");
        return 0;
    }
    if (isZero(alpha) && isOne(beta)) {
        if (std::memcmp(C, cOld.data(), cN * sizeof(alComplex)) != 0) fail("alpha == 0, beta == 1 changed C");
        return 0;
    }

    // ---- values: long double reference from the stored triangle
    auto sym = [&](int64_t i, int64_t k) {
        const bool stored = upper ? i <= k : i >= k;
        return cl(stored ? aOld[i + k * lda] : aOld[k + i * lda]);
    };
    const CL al = cl(alpha), be = cl(beta);
    const bool alphaZero = isZero(alpha), betaZero = isZero(beta), betaOne = isOne(beta);
    const int64_t K = side == AL_SIDE_LEFT ? m : n;
    for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < m; ++i) {
            CL p{0, 0};
            long double bound = 0;
            bool inf = false;
            if (!alphaZero) {
                for (int64_t k = 0; k < K; ++k) {
                    const CL a = side == AL_SIDE_LEFT ? sym(i, k) : sym(k, j);
                    const CL b = cl(side == AL_SIDE_LEFT ? bOld[k * bI + j * bJ] : bOld[i * bI + k * bJ]);
                    const CL ab = cmul(a, b);
                    p.re += ab.re;
                    p.im += ab.im;
                    bound += cmag(a) * cmag(b);
                    inf |= isInf(a) || isInf(b);
                }
                if (!(bound < FLT_MAX / 1e6)) continue;  // P itself may overflow in float32
                p = cmul(al, p);
                bound *= cmag(al);
                inf |= isInf(al);
            }
            const CL c = cl(cOld[i + j * ldc]);
            CL want = p;
            if (alphaZero) {
                want = betaZero ? CL{0, 0} : cmul(be, c);
                bound = betaZero ? 0 : cmag(be) * cmag(c);
                inf = !betaZero && (isInf(be) || isInf(c));
            } else if (betaOne) {
                want = {p.re + c.re, p.im + c.im};
                bound += cmag(c);
                inf |= isInf(c);
            } else if (!betaZero) {
                const CL bc = cmul(be, c);
                want = {p.re + bc.re, p.im + bc.im};
                bound += cmag(be) * cmag(c);
                inf |= isInf(be) || isInf(c);
            }
            if (inf || !(bound < FLT_MAX / 1e6)) continue;  // order-dependent (inf - inf, overflow)
            const CL g = cl(C[i + j * ldc]);
            const long double tol = 8 * (K + 4) * FLT_EPSILON * bound + 16 * (K + 4) * FLT_TRUE_MIN;
            const long double w[2] = {want.re, want.im}, gg[2] = {g.re, g.im};
            for (int q = 0; q < 2; ++q) {
                if (std::isnan(w[q]) != std::isnan(gg[q])) fail("NaN where the reference has none, or the reverse", i, j);
                if (!std::isnan(w[q]) && !(std::fabs(w[q] - gg[q]) <= tol)) fail("value differs from the reference", i, j);
            }
        }
    return 0;
}
