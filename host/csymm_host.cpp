// alCsymm: validate (design 3.3.2 order) -> quick returns -> tiling -> launch.
#include <string>

#include "ascend_linalg/al_blas.h"
#include "context.h"
#include "csymm_tiling.h"
#include "staging.h"
#include "kernels/csymm/csymm_kernel.h"

namespace al {
namespace {

const KernelDesc kCsymmKernel{"csymm_packed", csymm_kernel_packed_cpu};

bool isZero(const alComplex& z) { return z.real == 0.0f && z.imag == 0.0f; }
bool isOne(const alComplex& z) { return z.real == 1.0f && z.imag == 0.0f; }
int64_t max1(int64_t v) { return v > 1 ? v : 1; }

alStatus_t validate(alHandle_t h, alSideMode_t side, alFillMode_t uplo, int64_t m, int64_t n,
                    const alComplex* alpha, const alComplex* A, int64_t lda,
                    const alComplex* B, int64_t ldb, const alComplex* beta,
                    const alComplex* C, int64_t ldc, bool bRowMajor) {
    if (!h) return fail(AL_STATUS_HANDLE_IS_NULLPTR, "handle is NULL");
    if (side != AL_SIDE_LEFT && side != AL_SIDE_RIGHT)
        return fail(AL_STATUS_INVALID_ENUM, "side must be AL_SIDE_LEFT or AL_SIDE_RIGHT, got " +
                                                std::to_string(side));
    if (uplo != AL_FILL_UPPER && uplo != AL_FILL_LOWER)
        return fail(AL_STATUS_INVALID_ENUM, "uplo must be AL_FILL_UPPER or AL_FILL_LOWER, got " +
                                                std::to_string(uplo));
    if (m < 0) return fail(AL_STATUS_INVALID_VALUE, "m must be >= 0, got " + std::to_string(m));
    if (n < 0) return fail(AL_STATUS_INVALID_VALUE, "n must be >= 0, got " + std::to_string(n));
    if (!alpha || !beta) return fail(AL_STATUS_INVALID_VALUE, alpha ? "beta is NULL" : "alpha is NULL");
    const int64_t ka = side == AL_SIDE_LEFT ? m : n;
    if (lda < max1(ka))
        return fail(AL_STATUS_INVALID_VALUE, "lda must be >= max(1, " + std::string(side == AL_SIDE_LEFT ? "m" : "n") +
                                                 ") = " + std::to_string(max1(ka)) + ", got " + std::to_string(lda));
    if (bRowMajor ? ldb < max1(n) : ldb < max1(m))
        return fail(AL_STATUS_INVALID_VALUE, std::string("ldb must be >= max(1, ") + (bRowMajor ? "n" : "m") +
                                                 ") = " + std::to_string(max1(bRowMajor ? n : m)) +
                                                 (bRowMajor ? " (row-major B)" : "") + ", got " + std::to_string(ldb));
    if (ldc < max1(m))
        return fail(AL_STATUS_INVALID_VALUE, "ldc must be >= max(1, m) = " + std::to_string(max1(m)) +
                                                 ", got " + std::to_string(ldc));
    if (m > 0 && n > 0 && (!A || !B)) return fail(AL_STATUS_INVALID_VALUE, A ? "B is NULL" : "A is NULL");
    if (m > 0 && n > 0 && !C) return fail(AL_STATUS_INVALID_VALUE, "C is NULL");
    return AL_STATUS_SUCCESS;
}

alStatus_t csymm(alHandle_t handle, alSideMode_t side, alFillMode_t uplo, int64_t m, int64_t n,
                 const alComplex* alpha, const alComplex* A, int64_t lda, const alComplex* B, int64_t ldb,
                 const alComplex* beta, alComplex* C, int64_t ldc, bool bRowMajor) {
    clearLastError();
    alStatus_t st = validate(handle, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc, bRowMajor);
    if (st != AL_STATUS_SUCCESS) return st;
    if (m == 0 || n == 0) return AL_STATUS_SUCCESS;
    if (isZero(*alpha) && isOne(*beta)) return AL_STATUS_SUCCESS;

    Device& dev = *handle->device;
    // Asked before staging: a kernel the device lacks costs no transfers.
    if ((st = dev.supports(kCsymmKernel, AL_C_32F)) != AL_STATUS_SUCCESS) return st;
    if (bRowMajor && !dev.sharesHostMemory())
        return fail(AL_STATUS_NOT_SUPPORTED, "row-major B is supported on the CPU device only");
    // Tiled for the device that runs it: the NPU's buffer limits (cube cores,
    // one block each) or this machine's caches and thread pool.
    const CsymmPlatform platform = dev.kind() == AL_DEVICE_NPU ? csymmPlatformAscend(dev.coreNum())
                                                                : csymmPlatformCpu(dev.coreNum());
    CsymmTilingData t = csymmTiling(side, uplo, m, n, lda, ldb, ldc, alpha->real, alpha->imag,
                                    beta->real, beta->imag, platform);
    if (bRowMajor) t.cpuFlags |= CSYMM_CPU_B_ROW_MAJOR;
    // A device with its own memory works on device copies (staging.h): A and B
    // unless alpha == 0, C when it is read (beta != 0) or has gaps between
    // columns that the copy back must preserve; C returns only on success.
    Staging stage(dev);
    if (!dev.sharesHostMemory()) {
        const size_t ka = side == AL_SIDE_LEFT ? m : n, cb = sizeof(alComplex);
        const bool readAB = !isZero(*alpha), readC = !isZero(*beta) || (ldc > m && n > 1);
        void *dA = nullptr, *dB = nullptr, *dC = nullptr;
        if (readAB && ((st = stage.stage(A, Staging::extent(ka, ka, lda, cb), true, false, &dA)) != AL_STATUS_SUCCESS ||
                       (st = stage.stage(B, Staging::extent(m, n, ldb, cb), true, false, &dB)) != AL_STATUS_SUCCESS))
            return st;
        if ((st = stage.stage(C, Staging::extent(m, n, ldc, cb), readC, true, &dC)) != AL_STATUS_SUCCESS) return st;
        A = static_cast<const alComplex*>(dA);
        B = static_cast<const alComplex*>(dB);
        C = static_cast<alComplex*>(dC);
    }
    // The Ascend C kernel's workspace (csymm_tiling.h). On the CPU, the packed
    // kernel's shared-L workspace where blocks share rows (csymm_kernel.h); it
    // only saves work, so without memory for it the launch goes ahead without.
    DeviceBuffer ws(dev);
    if (!dev.sharesHostMemory()) {
        if ((st = ws.allocate(static_cast<size_t>(t.workspaceSize))) != AL_STATUS_SUCCESS) return st;
    } else if (const int64_t bytes = csymmPackedWorkspaceBytes(t); bytes > 0) {
        if (ws.allocate(static_cast<size_t>(bytes)) == AL_STATUS_SUCCESS) {
            csymmPackedWorkspaceInit(ws.get(), t);
            t.cpuFlags |= CSYMM_CPU_SHARED_PACK;
        } else {
            clearLastError();
        }
    }
    void* args[4] = {const_cast<alComplex*>(A), const_cast<alComplex*>(B), C, ws.get()};
    st = dev.launch(kCsymmKernel, static_cast<uint32_t>(t.usedCoreNum), args, 4, &t, sizeof(t));
    if (st != AL_STATUS_SUCCESS) return st;
    return stage.commit();
}

}  // namespace
}  // namespace al

extern "C" alStatus_t alCsymm(alHandle_t handle, alSideMode_t side, alFillMode_t uplo,
                              int64_t m, int64_t n, const alComplex* alpha,
                              const alComplex* A, int64_t lda, const alComplex* B, int64_t ldb,
                              const alComplex* beta, alComplex* C, int64_t ldc) {
    return al::csymm(handle, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc, false);
}

extern "C" alStatus_t alCsymmRowMajorB(alHandle_t handle, alSideMode_t side, alFillMode_t uplo,
                                       int64_t m, int64_t n, const alComplex* alpha,
                                       const alComplex* A, int64_t lda, const alComplex* B, int64_t ldb,
                                       const alComplex* beta, alComplex* C, int64_t ldc) {
    return al::csymm(handle, side, uplo, m, n, alpha, A, lda, B, ldb, beta, C, ldc, true);
}
