// Packed csymm kernel for the CPU: BLIS five-loop blocking over this block's
// share of C, symmetric structure absorbed by packing (csymm_pack.h), a
// run-time selected register micro-kernel (csymm_ukernel.h) with the alpha/beta
// epilogue fused into its store.
//
// side x uplo reduce to one product C = alpha * L * R + beta * C:
//   LEFT:  L = sym(A) (m x m), R = B (m x n)
//   RIGHT: L = B (m x n),      R = sym(A) (n x n)
// The right operand is packed transposed (X_R(j, p) = R(p, j)), so one packer
// and one micro-kernel serve all four cases.
//
// Work split (chooseSplit): the tilesM x tilesN grid of the tiling is cut into
// gm x gn rectangles of whole tiles (gm * gn == numBlocks), one per block, so
// each block packs its B panel once and streams all its rows against it; or,
// with the shared L below, into numBlocks column strips of whole micro-panels
// over all rows. Where neither applies, block b takes tiles b, b + numBlocks, ...
//
// Beta is applied on the first K block (the only one that may read C; with
// beta == 0 C is only written); later K blocks accumulate with beta == 1.
//
// Shared L (tiling.cpuFlags has CSYMM_CPU_SHARED_PACK, CPU device): the blocks of a launch that
// cover the same rows of C need the same packed L. The host then passes a
// workspace (csymmPackedWorkspaceBytes, state zeroed) in which L is cut into
// global blocks of mc rows x kc steps; each is packed once, by the first block
// that needs it (a claim flag per slot), and read by the others. A block visits
// its row blocks starting at an offset of its own, so blocks on the same rows
// pack different slots at once instead of waiting; a block that meets a slot
// another is packing does the others first and waits only at the end. Packing
// writes the same bits whoever does it, so results stay bitwise deterministic.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "../../host/csymm_tiling.h"
#include "ascend_linalg/al_types.h"
#include "csymm_kernel.h"
#include "csymm_pack.h"
#include "csymm_ukernel.h"

namespace al {

namespace {

// Best first. Cache blocks: kc so that a B micro-panel (kc*nr*8 bytes) sits in
// a 32 KB L1 beside the streamed A; mc*kc*8 bytes of A in a 512 KB L2 (measured
// on Zen for AVX2: kc=256, mc=128 is the best of kc 128..512 x mc 64..256).
// The x86 variants exist only where the build compiled their translation units
// with their -m flags and said so (AL_CPU_DISPATCH, kernels/meson.build).
const CsymmUkernel kUkernels[] = {
#if defined(AL_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__))
    {"csymm_ukernel_avx512_16x12", 16, 12, 144, 192, 1536, csymm_ukernel_avx512_16x12},
    {"csymm_ukernel_avx2_8x6", 8, 6, 128, 256, 1536, csymm_ukernel_avx2_8x6},
#endif
    {"csymm_ukernel_baseline_8x4", 8, 4, 64, 256, 1536, csymm_ukernel_baseline_8x4},
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Evened block size: the fewest blocks of at most `cap`, each a multiple of `unit`.
int64_t evenBlock(int64_t extent, int64_t cap, int64_t unit) {
    const int64_t blocks = ceilDiv(std::max<int64_t>(extent, 1), cap);
    return std::min(cap, ceilDiv(ceilDiv(extent, blocks), unit) * unit);
}

// The shared-L workspace: a state word per (row block g, k step s), then one
// slot of packed panels per (g, s), 64-byte aligned.
struct SharedLayout {
    int64_t mc, kc, rowBlocks, kSteps, slotFloats, stateBytes, bytes;
};
SharedLayout sharedLayout(const CsymmUkernel& uk, const CsymmTilingData& t) {
    SharedLayout l{};
    l.mc = evenBlock(t.m, uk.mc, uk.mr);
    l.kc = evenBlock(t.k, uk.kc, 4);
    l.rowBlocks = ceilDiv(t.m, l.mc);
    l.kSteps = ceilDiv(t.k, l.kc);
    l.slotFloats = ceilDiv(l.mc, uk.mr) * uk.mr * l.kc * 2;
    l.stateBytes = ceilDiv(l.rowBlocks * l.kSteps * int64_t(sizeof(uint32_t)), 64) * 64;
    l.bytes = l.stateBytes + l.rowBlocks * l.kSteps * l.slotFloats * int64_t(sizeof(float));
    return l;
}

enum : uint32_t { kSlotFree = 0, kSlotPacking = 1, kSlotPacked = 2 };

struct SharedL {
    SharedLayout lay;
    std::atomic<uint32_t>* state;
    float* data;
    std::atomic<uint32_t>& at(int64_t g, int64_t s) const { return state[g * lay.kSteps + s]; }
    float* slot(int64_t g, int64_t s) const { return data + (g * lay.kSteps + s) * lay.slotFloats; }
};

// Per-thread packing buffers, grown on demand and kept across launches (the
// pool's workers persist). 64-byte aligned for the micro-kernels' vector loads.
struct PackBuffer {
    float* data = nullptr;
    size_t floats = 0;
    ~PackBuffer() { std::free(data); }
    float* reserve(size_t n) {
        if (n <= floats) return data;
        std::free(data);
        data = static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
        floats = data ? n : 0;
        return data;
    }
};
thread_local PackBuffer tlsPackL, tlsPackR;

struct Rect {
    int64_t i0, i1, j0, j1;  // rows [i0, i1), columns [j0, j1) of C
};

struct Problem {
    CsymmOperand L, R;
    float* C;
    int64_t ldc, k;
    int64_t m;            // rows of L (and C)
    CsymmEpilogue first;  // epilogue of the first K block
};

// C := beta * C over a rectangle (alpha == 0); beta == 0 writes zeros unread.
void scaleRect(const CsymmTilingData& t, float* C, const Rect& r) {
    const bool zero = t.betaReal == 0.0f && t.betaImag == 0.0f;
    for (int64_t j = r.j0; j < r.j1; ++j) {
        float* c = C + 2 * (r.i0 + j * t.ldc);
        if (zero) {
            std::memset(c, 0, sizeof(float) * 2 * (r.i1 - r.i0));
            continue;
        }
        for (int64_t i = 0; i < r.i1 - r.i0; ++i) {
            const float cr = c[2 * i], ci = c[2 * i + 1];
            c[2 * i] = t.betaReal * cr - t.betaImag * ci;
            c[2 * i + 1] = t.betaReal * ci + t.betaImag * cr;
        }
    }
}

// The five loops over one rectangle of C. mc/kc/nc are the variant's cache
// blocks, evened out so that no loop ends with a sliver.
void gemmRect(const CsymmUkernel& uk, const Problem& pb, const Rect& r, float* packL,
              float* packR, int64_t mc, int64_t kc, int64_t nc) {
    const int32_t mr = uk.mr, nr = uk.nr;
    for (int64_t jc = r.j0; jc < r.j1; jc += nc) {
        const int64_t ncur = std::min(nc, r.j1 - jc);
        for (int64_t pc = 0; pc < pb.k; pc += kc) {
            const int64_t kcur = std::min(kc, pb.k - pc);
            CsymmEpilogue ep = pb.first;
            if (pc > 0) ep.betaMode = CSYMM_UK_BETA_ONE;
            csymmPackPanels(packR, pb.R, jc, ncur, pc, kcur, nr);
            for (int64_t ic = r.i0; ic < r.i1; ic += mc) {
                const int64_t mcur = std::min(mc, r.i1 - ic);
                csymmPackPanels(packL, pb.L, ic, mcur, pc, kcur, mr);
                for (int64_t jr = 0; jr < ncur; jr += nr) {
                    const float* b = packR + (jr / nr) * kcur * 2 * nr;
                    const int32_t nv = static_cast<int32_t>(std::min<int64_t>(nr, ncur - jr));
                    for (int64_t ir = 0; ir < mcur; ir += mr) {
                        const int32_t mv = static_cast<int32_t>(std::min<int64_t>(mr, mcur - ir));
                        uk.fn(kcur, packL + (ir / mr) * kcur * 2 * mr, b,
                              pb.C + 2 * ((ic + ir) + (jc + jr) * pb.ldc), pb.ldc, mv, nv, ep);
                    }
                }
            }
        }
    }
}


// Software prefetch of `floats` floats into L2 (no-op where unsupported).
inline void prefetchL2(const float* p, int64_t floats) {
#if defined(__GNUC__)
    for (int64_t f = 0; f < floats; f += 16) __builtin_prefetch(p + f, 0, 2);
#else
    (void)p;
    (void)floats;
#endif
}

// Micro-tiles of rows [ia, iz) (inside row block g, whose packed slot is `a`)
// against the packed R panel: the jr/ir loops of gemmRect.
// `cold`: the slot was packed by another block and may be in another core's
// cache or L3; during the first column of micro-tiles each next A micro-panel
// is then prefetched into L2 a micro-tile ahead (the micro-kernels' own
// prefetch assumes L2, where a block's private packing leaves its panels).
void microTiles(const CsymmUkernel& uk, const Problem& pb, const float* a, int64_t aRow0,
                int64_t ia, int64_t iz, const float* packR, int64_t jc, int64_t ncur, int64_t kcur,
                const CsymmEpilogue& ep, bool cold) {
    const int32_t mr = uk.mr, nr = uk.nr;
    const int64_t panelFloats = kcur * 2 * mr;
    if (cold && ia < iz) prefetchL2(a + ((ia - aRow0) / mr) * panelFloats, panelFloats);
    for (int64_t jr = 0; jr < ncur; jr += nr) {
        const float* b = packR + (jr / nr) * kcur * 2 * nr;
        const int32_t nv = static_cast<int32_t>(std::min<int64_t>(nr, ncur - jr));
        for (int64_t i = ia; i < iz; i += mr) {
            const int32_t mv = static_cast<int32_t>(std::min<int64_t>(mr, iz - i));
            const float* ap = a + ((i - aRow0) / mr) * panelFloats;
            if (cold && jr == 0 && i + mr < iz) prefetchL2(ap + panelFloats, panelFloats);
            uk.fn(kcur, ap, b, pb.C + 2 * (i + (jc + jr) * pb.ldc), pb.ldc, mv, nv, ep);
        }
    }
}

// gemmRect with L from the shared workspace. `rot` of `rotOf` spreads the
// starting row block of the blocks that share rows. r.i0 is a multiple of mr
// (tiles are), so every micro-tile starts on a micro-panel of its slot.
void gemmRectShared(const CsymmUkernel& uk, const Problem& pb, const Rect& r, const SharedL& sh,
                    float* packR, int64_t nc, int64_t rot, int64_t rotOf) {
    const int64_t mc = sh.lay.mc, kc = sh.lay.kc;
    const int64_t g0 = r.i0 / mc, g1 = ceilDiv(r.i1, mc), nG = g1 - g0;
    const int64_t start = rotOf > 0 ? (rot % rotOf) * nG / rotOf : 0;
    thread_local std::vector<int64_t> waitFor;
    for (int64_t jc = r.j0; jc < r.j1; jc += nc) {
        const int64_t ncur = std::min(nc, r.j1 - jc);
        for (int64_t s = 0; s * kc < pb.k; ++s) {
            const int64_t pc = s * kc, kcur = std::min(kc, pb.k - pc);
            CsymmEpilogue ep = pb.first;
            if (pc > 0) ep.betaMode = CSYMM_UK_BETA_ONE;
            csymmPackPanels(packR, pb.R, jc, ncur, pc, kcur, uk.nr);
            auto run = [&](int64_t g, bool cold) {
                microTiles(uk, pb, sh.slot(g, s), g * mc, std::max(r.i0, g * mc),
                           std::min(r.i1, (g + 1) * mc), packR, jc, ncur, kcur, ep, cold);
            };
            waitFor.clear();
            for (int64_t v = 0; v < nG; ++v) {
                const int64_t g = g0 + (start + v) % nG;
                std::atomic<uint32_t>& st = sh.at(g, s);
                uint32_t seen = st.load(std::memory_order_acquire);
                if (seen == kSlotFree &&
                    st.compare_exchange_strong(seen, kSlotPacking, std::memory_order_acq_rel)) {
                    csymmPackPanels(sh.slot(g, s), pb.L, g * mc, std::min(mc, pb.m - g * mc), pc,
                                    kcur, uk.mr);
                    st.store(kSlotPacked, std::memory_order_release);
                    run(g, false);
                } else if (seen == kSlotPacked) {
                    run(g, true);
                } else {
                    waitFor.push_back(g);  // another block is packing it: come back
                }
            }
            for (int64_t g : waitFor) {
                std::atomic<uint32_t>& st = sh.at(g, s);
                for (int spin = 0; st.load(std::memory_order_acquire) != kSlotPacked; ++spin)
                    if (spin > 256) std::this_thread::yield();
                run(g, true);
            }
        }
    }
}

void runRect(const CsymmUkernel& uk, const CsymmTilingData& t, const Problem& pb, const Rect& r,
             const SharedL* shared, int64_t rot, int64_t rotOf) {
    if (r.i0 >= r.i1 || r.j0 >= r.j1) return;
    if (t.alphaBetaMode == CSYMM_AB_ALPHA_ZERO) {
        scaleRect(t, pb.C, r);
        return;
    }
    if (shared) {
        const int64_t nc = evenBlock(r.j1 - r.j0, uk.nc, uk.nr);
        float* packR = tlsPackR.reserve(static_cast<size_t>(ceilDiv(nc, uk.nr) * uk.nr * shared->lay.kc * 2));
        if (packR) {
            gemmRectShared(uk, pb, r, *shared, packR, nc, rot, rotOf);
            return;
        }
        // Out of memory: private packing below (its own fallback included). The
        // shared slots this block does not claim are packed by the others.
    }
    const int64_t mc = evenBlock(r.i1 - r.i0, uk.mc, uk.mr);
    const int64_t nc = evenBlock(r.j1 - r.j0, uk.nc, uk.nr);
    const int64_t kc = evenBlock(pb.k, uk.kc, 4);
    float* packL = tlsPackL.reserve(static_cast<size_t>(ceilDiv(mc, uk.mr) * uk.mr * kc * 2));
    float* packR = tlsPackR.reserve(static_cast<size_t>(ceilDiv(nc, uk.nr) * uk.nr * kc * 2));
    if (!packL || !packR) {
        // Out of memory: one micro-panel of each operand on the stack (slow, correct).
        alignas(64) float smallL[16 * 64 * 2], smallR[12 * 64 * 2];
        gemmRect(uk, pb, r, smallL, smallR, uk.mr, 64, uk.nr);
        return;
    }
    gemmRect(uk, pb, r, packL, packR, mc, kc, nc);
}

// gm x gn split of the tile grid with the smallest largest rectangle; ties go
// to more column groups (each block then packs less of R, and with shared L
// nothing of L twice). false: numBlocks does not factor onto the grid.
bool splitGrid(int64_t tilesM, int64_t tilesN, int64_t numBlocks, int64_t* gm, int64_t* gn) {
    int64_t best = -1;
    for (int64_t g = numBlocks; g >= 1; --g) {
        if (numBlocks % g != 0 || g > tilesN || numBlocks / g > tilesM) continue;
        const int64_t cost = ceilDiv(tilesM, numBlocks / g) * ceilDiv(tilesN, g);
        if (best < 0 || cost < best) {
            best = cost;
            *gn = g;
            *gm = numBlocks / g;
        }
    }
    return best >= 0;
}

// The blocks' rectangles of C: gm x gn rectangles of whole tiles (splitGrid),
// or, with `strips`, numBlocks column strips of whole micro-panels over all
// rows. Strips replace a grid that cuts the rows (gm > 1) unless the grid is
// better balanced by more than 1/kStripGain, and a grid that numBlocks does not
// factor onto (320^2: 3 x 3 tiles, 8 blocks; tiles were then handed out in
// turn, each packing its own L and R). Every strip reads all of L, so strips
// need the shared-L workspace with L in two or more slots (each slot is then
// packed once) and at least kStripPanels micro-panels each (a narrow strip
// would read L from L3 for too few columns). A grid with gm == 1 is kept: it is
// already column strips, of whole tiles.
// Each block then packs only its own columns of R, where the grid packed both
// operands gm or gn times, and strips even out a grid whose tiles do not
// (192^2 on four blocks: 128 + 64 rows and columns). Strips over the grid,
// GFLOP/s ratio, two threads, alternating in one process (3 runs each unless
// said): 192: 1.01-1.07, 384: 1.00-1.12, 640: 1.04-1.17, 768: 1.04-1.14, 512:
// 1.02-1.03; 256: 1.06 on a quiet machine, 0.92-1.05 in 6 runs on a loaded
// one; beside a busy-looping process (like OpenBLAS's spinning worker): 256:
// 0.97-1.05, 512: 1.04-1.13. A control size where both pick the same split
// (1000): 1.00-1.01.
struct Split {
    int64_t gm = 0, gn = 0;
    bool strips = false;
    int64_t nr = 1;  // strip edges are multiples of nr
    bool ok() const { return gm > 0; }
    Rect rect(const CsymmTilingData& t, int64_t b) const {
        const int64_t bi = b / gn, bj = b % gn;
        if (strips) {
            const int64_t panels = ceilDiv(t.n, nr);
            return Rect{0, t.m, std::min(t.n, panels * bj / gn * nr), std::min(t.n, panels * (bj + 1) / gn * nr)};
        }
        return Rect{t.tilesM * bi / gm * t.blockM, std::min<int64_t>(t.tilesM * (bi + 1) / gm * t.blockM, t.m),
                    t.tilesN * bj / gn * t.blockN, std::min<int64_t>(t.tilesN * (bj + 1) / gn * t.blockN, t.n)};
    }
};
constexpr int64_t kStripPanels = 8;
constexpr double kStripGain = 0.95;
Split chooseSplit(const CsymmUkernel& uk, const CsymmTilingData& t, int64_t numBlocks, bool sharedL) {
    Split s;
    s.nr = uk.nr;
    if (!splitGrid(t.tilesM, t.tilesN, numBlocks, &s.gm, &s.gn)) s.gm = s.gn = 0;
    const int64_t panels = ceilDiv(t.n, uk.nr);
    if (s.gm == 1 || !sharedL || numBlocks < 2 || panels < numBlocks * kStripPanels ||
        ceilDiv(t.m, evenBlock(t.m, uk.mc, uk.mr)) < 2)
        return s;
    const double stripMax = double(t.m) * double(std::min(t.n, ceilDiv(panels, numBlocks) * uk.nr));
    const double gridMax = s.ok() ? double(std::min<int64_t>(ceilDiv(t.tilesM, s.gm) * t.blockM, t.m)) *
                                        double(std::min<int64_t>(ceilDiv(t.tilesN, s.gn) * t.blockN, t.n))
                                  : 0.0;
    if (!s.ok() || gridMax > kStripGain * stripMax) {
        s.gm = 1;
        s.gn = numBlocks;
        s.strips = true;
    }
    return s;
}

// Workspace header: the layout the host sized it for (the kernel checks it
// against its own micro-kernel before using the workspace).
struct SharedHeader {
    int64_t magic, mr, mc, kc, m, k;
};
constexpr int64_t kSharedMagic = 0x4c53594d43ll;  // "CMYSL"
constexpr int64_t kSharedHeaderBytes = 64;
static_assert(sizeof(SharedHeader) <= kSharedHeaderBytes, "header fits its 64 bytes");
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "state words are plain words");

}  // namespace

int64_t csymmPackedWorkspaceBytes(const CsymmTilingData& t) {
    return csymmPackedWorkspaceBytesFor(csymmUkernelSelect(), t);
}

void csymmPackedWorkspaceInit(void* ws, const CsymmTilingData& t) {
    csymmPackedWorkspaceInitFor(csymmUkernelSelect(), ws, t);
}

int64_t csymmPackedWorkspaceBytesFor(const CsymmUkernel& uk, const CsymmTilingData& t) {
    if (t.m <= 0 || t.n <= 0 || t.alphaBetaMode == CSYMM_AB_ALPHA_ZERO || t.usedCoreNum <= 1) return 0;
    // Shared L pays where several blocks cover the same rows (gn > 1) and each
    // block's rows span at least two row blocks, so that blocks starting at
    // rotated row blocks pack different slots at once; with one row block per
    // block (a 2 x 2 grid over 256 rows) they would all wait for the same
    // slot. Not for the tile-by-tile fallback split (no rotation there).
    const Split sp = chooseSplit(uk, t, t.usedCoreNum, true);
    if (!sp.ok() || sp.gn <= 1) return 0;
    const SharedLayout lay = sharedLayout(uk, t);
    if (lay.rowBlocks < 2 * sp.gm) return 0;
    return kSharedHeaderBytes + lay.bytes;
}

void csymmPackedWorkspaceInitFor(const CsymmUkernel& uk, void* ws, const CsymmTilingData& t) {
    const SharedLayout lay = sharedLayout(uk, t);
    const SharedHeader h{kSharedMagic, uk.mr, lay.mc, lay.kc, t.m, t.k};
    std::memcpy(ws, &h, sizeof h);
    std::memset(static_cast<char*>(ws) + kSharedHeaderBytes, 0, static_cast<size_t>(lay.stateBytes));
}

const CsymmUkernel* csymmUkernelTable(int* count) {
    *count = static_cast<int>(sizeof(kUkernels) / sizeof(kUkernels[0]));
    return kUkernels;
}

bool csymmUkernelSupported(const CsymmUkernel& uk) {
#if defined(AL_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (uk.fn == csymm_ukernel_avx512_16x12) return __builtin_cpu_supports("avx512f");
    if (uk.fn == csymm_ukernel_avx2_8x6)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return uk.fn == csymm_ukernel_baseline_8x4;
}

const CsymmUkernel& csymmUkernelSelect() {
    static const CsymmUkernel* chosen = [] {
        int n = 0;
        const CsymmUkernel* table = csymmUkernelTable(&n);
        for (int i = 0; i < n; ++i)
            if (csymmUkernelSupported(table[i])) return &table[i];
        return &table[n - 1];
    }();
    return *chosen;
}

void csymmPackedRun(const CsymmUkernel& uk, uint32_t blockIdx, uint32_t numBlocks,
                    void* const* args, const void* tiling) {
    const auto& t = *static_cast<const CsymmTilingData*>(tiling);
    const float* A = static_cast<const float*>(args[0]);
    const float* B = static_cast<const float*>(args[1]);
    Problem pb{};
    pb.C = static_cast<float*>(args[2]);
    pb.ldc = t.ldc;
    pb.k = t.k;
    pb.m = t.m;
    const CsymmOperand symA{A, 0, 0, t.lda,
                            t.uplo == AL_FILL_UPPER ? CSYMM_OPERAND_SYM_UPPER : CSYMM_OPERAND_SYM_LOWER};
    // B(i, j) at B[i*bi + j*bj]: column-major, or row-major (CSYMM_CPU_B_ROW_MAJOR).
    const bool bRowMajor = (t.cpuFlags & CSYMM_CPU_B_ROW_MAJOR) != 0;
    const int64_t bi = bRowMajor ? t.ldb : 1, bj = bRowMajor ? 1 : t.ldb;
    if (t.side == AL_SIDE_LEFT) {
        pb.L = symA;
        pb.R = CsymmOperand{B, bj, bi, 0, CSYMM_OPERAND_GENERAL};  // X_R(j, p) = B(p, j)
    } else {
        pb.L = CsymmOperand{B, bi, bj, 0, CSYMM_OPERAND_GENERAL};  // X_L(i, p) = B(i, p)
        pb.R = symA;                                               // sym(A)^T == sym(A)
    }
    pb.first = CsymmEpilogue{t.alphaReal, t.alphaImag, t.betaReal, t.betaImag,
                             t.alphaBetaMode == CSYMM_AB_BETA_ZERO  ? CSYMM_UK_BETA_ZERO
                             : t.alphaBetaMode == CSYMM_AB_BETA_ONE ? CSYMM_UK_BETA_ONE
                                                                    : CSYMM_UK_BETA_GENERAL};

    // Shared L: only with the host's workspace for this micro-kernel's layout
    // (args[3] is read only when the tiling says it is this workspace).
    SharedL shared{};
    const SharedL* sh = nullptr;
    if ((t.cpuFlags & CSYMM_CPU_SHARED_PACK) != 0 && args[3] != nullptr) {
        SharedHeader h{};
        std::memcpy(&h, args[3], sizeof h);
        shared.lay = sharedLayout(uk, t);
        if (h.magic == kSharedMagic && h.mr == uk.mr && h.mc == shared.lay.mc && h.kc == shared.lay.kc &&
            h.m == t.m && h.k == t.k) {
            char* ws = static_cast<char*>(args[3]) + kSharedHeaderBytes;
            shared.state = reinterpret_cast<std::atomic<uint32_t>*>(ws);
            shared.data = reinterpret_cast<float*>(ws + shared.lay.stateBytes);
            sh = &shared;
        }
    }

    const int64_t tilesM = t.tilesM, tilesN = t.tilesN;
    if (const Split sp = chooseSplit(uk, t, numBlocks, sh != nullptr); sp.ok()) {
        runRect(uk, t, pb, sp.rect(t, blockIdx), sh, blockIdx % sp.gn, sp.gn);
        return;
    }
    for (int64_t tile = blockIdx; tile < tilesM * tilesN; tile += numBlocks) {
        const int64_t i0 = (tile / tilesN) * t.blockM, j0 = (tile % tilesN) * t.blockN;
        runRect(uk, t, pb, Rect{i0, std::min<int64_t>(i0 + t.blockM, t.m), j0,
                                std::min<int64_t>(j0 + t.blockN, t.n)}, sh, 0, 0);
    }
}

void csymm_kernel_packed_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args,
                             const void* tiling) {
    csymmPackedRun(csymmUkernelSelect(), blockIdx, numBlocks, args, tiling);
}

}  // namespace al
