// csymm kernels for the CPU (and the fake ACL runtime). Entry contract:
//   args = {A, B, C, workspace}: column-major complex64 with the tiling's
//   lda/ldb/ldc; workspace (the Ascend C kernel's, csymm_tiling.h) is unused here.
//   Block b computes the C tiles t = b, b + numBlocks, ... of the
//   tilesM x tilesN grid (row-major tile order):
//     C_tile := alpha * (sym(A) * B)_tile + beta * C_tile   (LEFT)
//     C_tile := alpha * (B * sym(A))_tile + beta * C_tile   (RIGHT)
//   reading only the `uplo` triangle of A; beta == 0 never reads C;
//   B is row-major (B(i, j) at B[i*ldb + j]) when tiling.cpuFlags has
//   CSYMM_CPU_B_ROW_MAJOR (CPU kernels only; alCsymmRowMajorB);
//   alphaBetaMode == ALPHA_ZERO reads neither A nor B.
// Kernels never validate arguments: the host did.
#ifndef ASCEND_LINALG_KERNELS_CSYMM_KERNEL_H
#define ASCEND_LINALG_KERNELS_CSYMM_KERNEL_H

#include <cstdint>

namespace al {

struct CsymmTilingData;

// Reference kernel: direct triple loop over a tile, float32 accumulation.
// Correct for every case; the fast kernels are tested against it.
void csymm_kernel_ref_cpu(uint32_t blockIdx, uint32_t numBlocks,
                          void* const* args, const void* tiling);

// Packed kernel: BLIS-style cache blocking over a 2-D split of the tile grid,
// symmetric A mirrored while packing into planar re/im panels, register
// micro-kernel chosen at run time (AVX-512F 16x12, AVX2+FMA 8x6, baseline 8x4),
// alpha/beta fused into the micro-tile store. Same contract as the reference,
// except that a block may own a rectangle of whole tiles instead of every
// numBlocks-th tile (each C tile is still written by exactly one block).
void csymm_kernel_packed_cpu(uint32_t blockIdx, uint32_t numBlocks,
                             void* const* args, const void* tiling);

// Shared packing for csymm_kernel_packed_cpu on a device that shares host
// memory: bytes of a workspace in which the blocks of one launch (numBlocks =
// t.usedCoreNum) pack each block of L once instead of once per block that
// covers its rows; 0 when that does not pay: no two blocks share rows, a
// block's rows span fewer than two mc row blocks (its co-row blocks would wait
// for the same slot), or nothing is packed. The
// host allocates it (64-byte aligned), calls csymmPackedWorkspaceInit once
// before the launch, passes it as args[3] and sets CSYMM_CPU_SHARED_PACK in t.cpuFlags. One
// workspace per launch; never reused by a concurrent launch.
int64_t csymmPackedWorkspaceBytes(const CsymmTilingData& t);
void csymmPackedWorkspaceInit(void* ws, const CsymmTilingData& t);

}  // namespace al

#endif
