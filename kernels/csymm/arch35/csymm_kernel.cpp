// csymm on Ascend 950 (arch35, dav-3510): the Cube path of the csymm design
// (seeds 000_*, sections 3.4.1-3.4.6), in Ascend C.
//
// NOT YET COMPILED OR RUN: no machine used so far has CANN or an NPU
// (docs/npu.md). Written to the public Ascend C API; the CPU kernel
// csymm_kernel_packed.cpp is the tested statement of the same contract.
//
// Contract (kernels/csymm/csymm_kernel.h): args {A, B, C, workspace} + tiling
// (host/csymm_tiling.h, the struct the host filled); column-major complex64,
// only the `uplo` triangle of A is read, beta == 0 never reads C,
// alphaBetaMode == ALPHA_ZERO reads neither A nor B. Kernel name csymm_packed:
// the KernelDesc name AclDevice looks up in the binary.
//
// With C = L * R (LEFT: L = sym(A) m x m, R = B; RIGHT: L = B, R = sym(A) n x n),
// k the inner dimension, the complex product becomes two real ones of depth 2k
// on planar panels (csymm_tiling.h, CsymmWorkspaceLayout):
//   Cr = [Lr | -Li] * [Rr ; Ri]        Ci = [Lr | Li] * [Ri ; Rr]
// Phase 1 (vector cores, all blocks): pack. Each column of L and R is read
//   once from GM; for sym(A) the unstored part of a column is the stored row
//   (design 3.4.2: A(i,k) = A(k,i) outside the uplo triangle, no conjugation),
//   fetched with a strided DataCopyPad. Columns are de-interleaved into real
//   and imaginary planes (GatherMask) and written to the four panels.
// SyncAll: every panel is complete before any product reads it.
// Phase 2 (cube through the Matmul API, driven from the vector cores): per
//   output tile, C^T tile = R1^T L1^T and R2^T L2^T, so that the row-major
//   results are C's columns: no transposes anywhere.
// Phase 3 (vector cores): fused alpha/beta epilogue per C column (design
//   3.4.3), planar -> interleaved with Gather, written in place with ldc.
#include "kernel_operator.h"
#include "lib/matmul_intf.h"

#include "ascend_linalg/al_types.h"
#include "host/csymm_tiling.h"
#include "kernels/ascendc/kernel_common.h"

using namespace AscendC;
using al::ascendc::CeilDiv;
using al::ascendc::CopyIn;
using al::ascendc::CopyOut;
using al::ascendc::Min;

namespace {

// Complex elements of one column handled per UB pass (64 KiB of planes).
constexpr int64_t kChunk = 2048;

using PlaneType = matmul::MatmulType<TPosition::GM, CubeFormat::ND, float>;
using PlaneMatmul = matmul::Matmul<PlaneType, PlaneType, PlaneType>;

class CsymmKernel {
public:
    PlaneMatmul mm;
    TCubeTiling cube;

    // Before REGIST_MATMUL_OBJ, which takes the Matmul tiling.
    __aicore__ inline void Prepare(const al::CsymmTilingData& t) {
        t_ = t;
        left_ = t.side == AL_SIDE_LEFT;
        upper_ = t.uplo == AL_FILL_UPPER;
        k_ = t.k;
        FillCubeTiling();
    }

    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace, TPipe* pipe) {
        const al::CsymmTilingData& t = t_;
        a_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(a));
        b_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(b));
        c_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(c));
        w_ = al::csymmWorkspaceLayout(t.m, t.n, t.k, t.blockM, t.blockN, t.usedCoreNum);
        ws_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(workspace + al::kCsymmSysWorkspaceBytes));
        pipe->InitBuffer(inQ_, 2, kChunk * 2 * 8 * sizeof(float));   // strided fetch pads each element to 32 B
        pipe->InitBuffer(outQ_, 2, kChunk * 2 * sizeof(float));
        pipe->InitBuffer(re_, kChunk * sizeof(float));
        pipe->InitBuffer(im_, kChunk * sizeof(float));
        pipe->InitBuffer(tmp_, kChunk * 2 * sizeof(float));
        pipe->InitBuffer(pattern_, kChunk * 2 * sizeof(uint32_t));
        pipe->InitBuffer(offsets_, kChunk * 2 * sizeof(uint32_t));
    }

    __aicore__ inline void Process() {
        const bool product = t_.alphaBetaMode != al::CSYMM_AB_ALPHA_ZERO;
        if (product) {
            Pack();
            SyncAll();
        }
        const int64_t tiles = int64_t(t_.tilesM) * t_.tilesN;
        for (int64_t tile = GetBlockIdx(); tile < tiles; tile += GetBlockNum()) {
            const int64_t tm = tile / t_.tilesN, tn = tile % t_.tilesN;  // row-major tile order, as the CPU kernels
            const int64_t i0 = tm * t_.blockM, j0 = tn * t_.blockN;
            const int64_t curM = Min(t_.blockM, t_.m - i0), curN = Min(t_.blockN, t_.n - j0);
            if (product) Multiply(i0, j0, curM, curN);
            Epilogue(i0, j0, curM, curN, product);
        }
        if (product) mm.End();
    }

private:
    // ---- phase 1: planar panels --------------------------------------------------

    // Units of work: the k columns of L, then the n columns of R (LEFT: L = sym(A),
    // R = B; RIGHT: L = B, R = sym(A)); block b packs units b, b + blocks, ...
    // A column of sym(A) is three segments: rows above the stored range, the
    // stored range, rows below it (UPPER stores rows <= col, LOWER rows >= col);
    // each is staged in chunks that start at UB offset 0 (32-byte aligned).
    __aicore__ inline void Pack() {
        const int64_t lCols = k_, rCols = t_.n, units = lCols + rCols;
        for (int64_t u = GetBlockIdx(); u < units; u += GetBlockNum()) {
            const bool isL = u < lCols;
            const int64_t col = isL ? u : u - lCols;
            const int64_t len = isL ? t_.m : k_;
            const bool fromA = isL == left_;  // this column is one of sym(A)'s
            const int64_t storedLo = upper_ ? 0 : col, storedHi = upper_ ? col + 1 : k_;
            const int64_t bounds[4] = {0, fromA ? storedLo : 0, fromA ? storedHi : len, len};
            for (int seg = 0; seg < 3; ++seg) {
                const bool mirrored = fromA && seg != 1;
                for (int64_t r0 = bounds[seg]; r0 < bounds[seg + 1]; r0 += kChunk) {
                    const int64_t cnt = Min(kChunk, bounds[seg + 1] - r0);
                    if (mirrored) LoadMirrored(col, r0, cnt);
                    else LoadColumn(fromA ? a_ : b_, fromA ? t_.lda : t_.ldb, col, r0, cnt);
                    StorePlanes(isL, col, r0, cnt);
                }
            }
        }
    }

    // Rows [r0, r0 + cnt) of column `col` of sym(A) outside the stored triangle
    // into re_/im_: A(row, col) = A_gm[col + row * lda] (design 3.4.2), i.e. row
    // `col` of the stored triangle, one complex every lda: cnt blocks of 8
    // bytes, each landing in its own 32-byte UB block.
    __aicore__ inline void LoadMirrored(int64_t col, int64_t r0, int64_t cnt) {
        LocalTensor<float> in = inQ_.AllocTensor<float>();
        DataCopyExtParams p{static_cast<uint16_t>(cnt), 8, static_cast<uint32_t>((t_.lda - 1) * 8), 0, 0};
        DataCopyPadExtParams<float> pad{false, 0, 0, 0};
        DataCopyPad(in, a_[(col + r0 * t_.lda) * 2], p, pad);
        inQ_.EnQue(in);
        in = inQ_.DeQue<float>();
        // every 8th float is a real part, the one after it the imaginary part
        LocalTensor<float> re = re_.Get<float>(), im = im_.Get<float>();
        uint64_t got = 0;
        GatherMask(re, in, StridePattern(cnt, 0), true, static_cast<uint32_t>(cnt * 8), {1, 1, 8, 0}, got);
        GatherMask(im, in, StridePattern(cnt, 1), true, static_cast<uint32_t>(cnt * 8), {1, 1, 8, 0}, got);
        inQ_.FreeTensor(in);
    }

    // Rows [r0, r0 + cnt) of column `col` of a general column-major complex
    // matrix into re_/im_ (de-interleaved: even floats real, odd imaginary).
    __aicore__ inline void LoadColumn(const GlobalTensor<float>& g, int64_t ld, int64_t col, int64_t r0, int64_t cnt) {
        LocalTensor<float> in = inQ_.AllocTensor<float>();
        CopyIn(in, g[(r0 + col * ld) * 2], static_cast<uint32_t>(cnt * 2));
        inQ_.EnQue(in);
        in = inQ_.DeQue<float>();
        LocalTensor<float> re = re_.Get<float>(), im = im_.Get<float>();
        uint64_t got = 0;
        // built-in patterns 1 / 2: even / odd elements
        GatherMask(re, in, 1, true, static_cast<uint32_t>(cnt * 2), {1, 1, 8, 0}, got);
        GatherMask(im, in, 2, true, static_cast<uint32_t>(cnt * 2), {1, 1, 8, 0}, got);
        inQ_.FreeTensor(in);
    }

    // Bit pattern selecting float 8*i + which for i < n (user-defined GatherMask).
    __aicore__ inline LocalTensor<uint32_t> StridePattern(int64_t n, int which) {
        LocalTensor<uint32_t> p = pattern_.Get<uint32_t>();
        const int64_t words = CeilDiv(n * 8, 32);
        for (int64_t w = 0; w < words; ++w) p.SetValue(w, which == 0 ? 0x01010101u : 0x02020202u);
        return p;
    }

    // Writes re_/im_ (cnt values, rows r0.. of column `col`) into the panels.
    __aicore__ inline void StorePlanes(bool isL, int64_t col, int64_t r0, int64_t cnt) {
        LocalTensor<float> re = re_.Get<float>(), im = im_.Get<float>(), neg = tmp_.Get<float>();
        const uint32_t n = static_cast<uint32_t>(cnt);
        PipeBarrier<PIPE_V>();
        if (isL) {
            // l1 = [Lr | -Li], l2 = [Lr | Li], column-major m x 2k
            Muls(neg, im, -1.0f, n);
            PipeBarrier<PIPE_ALL>();
            const int64_t lo = col * t_.m + r0, hi = (k_ + col) * t_.m + r0;
            CopyOut(ws_[w_.l1 + lo], re, n);
            CopyOut(ws_[w_.l1 + hi], neg, n);
            CopyOut(ws_[w_.l2 + lo], re, n);
            CopyOut(ws_[w_.l2 + hi], im, n);
        } else {
            // r1 = [Rr ; Ri], r2 = [Ri ; Rr], column-major 2k x n
            PipeBarrier<PIPE_ALL>();
            const int64_t top = col * 2 * k_ + r0, bottom = col * 2 * k_ + k_ + r0;
            CopyOut(ws_[w_.r1 + top], re, n);
            CopyOut(ws_[w_.r1 + bottom], im, n);
            CopyOut(ws_[w_.r2 + top], im, n);
            CopyOut(ws_[w_.r2 + bottom], re, n);
        }
        PipeBarrier<PIPE_ALL>();  // re_/im_ are reused by the next chunk
    }

    // ---- phase 2: the two real products of one tile (Cube) --------------------------

    // Row-major views: r1 as n x 2k (row j = column j of R), l1 as 2k x m, so
    // R1^T L1^T = (L1 R1)^T is the tile of Cr, row jj of it column j0 + jj of C.
    __aicore__ inline void Multiply(int64_t i0, int64_t j0, int64_t curM, int64_t curN) {
        const int64_t accR = w_.acc + int64_t(GetBlockIdx()) * 2 * t_.blockM * t_.blockN;
        const int64_t accI = accR + int64_t(t_.blockM) * t_.blockN;
        mm.SetOrgShape(static_cast<int>(t_.n), static_cast<int>(t_.m), static_cast<int>(2 * k_),
                       static_cast<int>(2 * k_), static_cast<int>(t_.blockM));
        mm.SetSingleShape(static_cast<int>(curN), static_cast<int>(curM), static_cast<int>(2 * k_));
        mm.SetTensorA(ws_[w_.r1 + j0 * 2 * k_]);
        mm.SetTensorB(ws_[w_.l1 + i0]);
        mm.IterateAll(ws_[accR]);
        mm.SetTensorA(ws_[w_.r2 + j0 * 2 * k_]);
        mm.SetTensorB(ws_[w_.l2 + i0]);
        mm.IterateAll(ws_[accI]);
    }

    // Matmul API tiling for the planar products, from the host's block sizes:
    // one tile (blockN x blockM, depth 2k) per call, base blocks of 64 that fit
    // L0A/L0B twice (double buffer) and L0C once (design 3.4.5 limits).
    // On a device, compare with matmul_tiling::MatmulApiTiling for the same shape.
    __aicore__ inline void FillCubeTiling() {
        const int32_t k2 = static_cast<int32_t>(2 * k_);
        cube.usedCoreNum = 1;
        cube.M = static_cast<int32_t>(t_.n);
        cube.N = static_cast<int32_t>(t_.m);
        cube.Ka = k2;
        cube.Kb = k2;
        cube.singleCoreM = t_.blockN;
        cube.singleCoreN = t_.blockM;
        cube.singleCoreK = k2;
        cube.baseM = static_cast<int32_t>(Min(64, t_.blockN));
        cube.baseN = static_cast<int32_t>(Min(64, t_.blockM));
        cube.baseK = static_cast<int32_t>(Min(64, k2));
        cube.depthA1 = 2;
        cube.depthB1 = 2;
        cube.stepM = 1;
        cube.stepN = 1;
        cube.stepKa = 1;
        cube.stepKb = 1;
        cube.isBias = 0;
        cube.transLength = 0;
        cube.iterateOrder = 0;
        cube.dbL0A = 2;
        cube.dbL0B = 2;
        cube.dbL0C = 1;
        cube.shareMode = 0;
        cube.shareL1Size = 0;
        cube.shareL0CSize = 0;
        cube.shareUbSize = 0;
    }

    // ---- phase 3: fused alpha/beta epilogue (Vector) -----------------------------

    // Column jj of the tile: C[i0 .. i0+curM, j0+jj] := alpha * (tr + i ti) + beta * C
    // (design 3.4.3); beta == 0 never reads C; alpha == 0 has no product.
    __aicore__ inline void Epilogue(int64_t i0, int64_t j0, int64_t curM, int64_t curN, bool product) {
        const int64_t accR = w_.acc + int64_t(GetBlockIdx()) * 2 * t_.blockM * t_.blockN;
        const int64_t accI = accR + int64_t(t_.blockM) * t_.blockN;
        const float ar = t_.alphaReal, ai = t_.alphaImag, br = t_.betaReal, bi = t_.betaImag;
        const bool readC = t_.alphaBetaMode != al::CSYMM_AB_BETA_ZERO &&
                           !(t_.alphaBetaMode == al::CSYMM_AB_ALPHA_ZERO && br == 0.0f && bi == 0.0f);
        const uint32_t n = static_cast<uint32_t>(curM);
        BuildInterleaveOffsets(curM);
        for (int64_t jj = 0; jj < curN; ++jj) {
            const int64_t cOff = (i0 + (j0 + jj) * t_.ldc) * 2;
            LocalTensor<float> outR = re_.Get<float>(), outI = im_.Get<float>();
            LocalTensor<float> planes = tmp_.Get<float>();  // [re | im] of the result, then interleaved
            if (product) {
                LocalTensor<float> tr = planes, ti = planes[kChunk];
                CopyIn(tr, ws_[accR + jj * t_.blockM], n);
                CopyIn(ti, ws_[accI + jj * t_.blockM], n);
                PipeBarrier<PIPE_ALL>();
                Muls(outR, tr, ar, n);      // outR = ar*tr - ai*ti
                Axpy(outR, ti, -ai, n);
                Muls(outI, ti, ar, n);      // outI = ar*ti + ai*tr
                Axpy(outI, tr, ai, n);
            } else {
                Duplicate(outR, 0.0f, n);
                Duplicate(outI, 0.0f, n);
            }
            if (readC) {  // old C, de-interleaved into tmp_ (re_/im_ hold the result)
                LocalTensor<float> in = inQ_.AllocTensor<float>();
                CopyIn(in, c_[cOff], n * 2);
                inQ_.EnQue(in);
                in = inQ_.DeQue<float>();
                LocalTensor<float> oldR = planes, oldI = planes[kChunk];
                uint64_t got = 0;
                GatherMask(oldR, in, 1, true, n * 2, {1, 1, 8, 0}, got);
                GatherMask(oldI, in, 2, true, n * 2, {1, 1, 8, 0}, got);
                inQ_.FreeTensor(in);
                PipeBarrier<PIPE_V>();
                if (t_.alphaBetaMode == al::CSYMM_AB_BETA_ONE) {
                    Add(outR, outR, oldR, n);
                    Add(outI, outI, oldI, n);
                } else {                       // outR += br*oldR - bi*oldI, outI += br*oldI + bi*oldR
                    Axpy(outR, oldR, br, n);
                    Axpy(outR, oldI, -bi, n);
                    Axpy(outI, oldI, br, n);
                    Axpy(outI, oldR, bi, n);
                }
            }
            // planar -> interleaved: [outR | outI] gathered by byte offsets 0, 4M, 4, 4M+4, ...
            PipeBarrier<PIPE_V>();
            LocalTensor<float> both = planes;
            DataCopy(both, outR, static_cast<uint32_t>(al::ascendc::AlignUp<float>(n)));
            DataCopy(both[kChunk], outI, static_cast<uint32_t>(al::ascendc::AlignUp<float>(n)));
            LocalTensor<float> out = outQ_.AllocTensor<float>();
            PipeBarrier<PIPE_V>();
            Gather(out, both, offsets_.Get<uint32_t>(), 0u, n * 2);
            outQ_.EnQue(out);
            out = outQ_.DeQue<float>();
            CopyOut(c_[cOff], out, n * 2);
            outQ_.FreeTensor(out);
        }
    }

    // Byte offsets into [re (kChunk floats) | im]: element 2i <- re[i], 2i+1 <- im[i].
    __aicore__ inline void BuildInterleaveOffsets(int64_t n) {
        LocalTensor<uint32_t> off = offsets_.Get<uint32_t>();
        for (int64_t i = 0; i < n; ++i) {
            off.SetValue(2 * i, static_cast<uint32_t>(i * 4));
            off.SetValue(2 * i + 1, static_cast<uint32_t>((kChunk + i) * 4));
        }
    }

    al::CsymmTilingData t_;
    al::CsymmWorkspaceLayout w_;
    bool left_ = true, upper_ = true;
    int64_t k_ = 0;
    GlobalTensor<float> a_, b_, c_, ws_;
    TQue<TPosition::VECIN, 2> inQ_;
    TQue<TPosition::VECOUT, 2> outQ_;
    TBuf<TPosition::VECCALC> re_, im_, tmp_, pattern_, offsets_;
};

}  // namespace

// Blocks: t.usedCoreNum, each one cube core with one vector core (MIX 1:1: the
// vector core runs this code, its cube core serves the Matmul calls).
extern "C" __global__ __aicore__ void csymm_packed(GM_ADDR a, GM_ADDR b, GM_ADDR c, GM_ADDR workspace,
                                                   GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_1);
    al::CsymmTilingData t;
    al::ascendc::LoadTiling(&t, tiling);
    SetSysWorkspace(workspace);
    if (GetSysWorkSpacePtr() == nullptr) return;
    TPipe pipe;
    CsymmKernel op;
    op.Prepare(t);
    REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), op.mm, &op.cube);
    op.Init(a, b, c, workspace, &pipe);
    op.Process();
}
