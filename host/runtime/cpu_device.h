// CpuDevice: runs kernel blocks on a persistent pool of worker threads.
#ifndef ASCEND_LINALG_RUNTIME_CPU_DEVICE_H
#define ASCEND_LINALG_RUNTIME_CPU_DEVICE_H

#include "device.h"

namespace al {

class CpuDevice final : public Device {
public:
    alDeviceKind_t kind() const override { return AL_DEVICE_CPU; }
    std::string describe() const override;
    uint32_t coreNum() const override;
    bool sharesHostMemory() const override { return true; }
    alStatus_t malloc(void** ptr, size_t bytes) override;
    alStatus_t free(void* ptr) override;
    alStatus_t copyToDevice(void* dst, const void* src, size_t bytes) override;
    alStatus_t copyToHost(void* dst, const void* src, size_t bytes) override;
    alStatus_t supports(const KernelDesc& kernel, int32_t valueType) override;
    alStatus_t launch(const KernelDesc& kernel, uint32_t numBlocks,
                      void* const* args, int numArgs,
                      const void* tiling, size_t tilingBytes) override;
};

// The process-wide CPU device (its thread pool starts on first launch).
CpuDevice& cpuDevice();

// Worker count: ASCEND_LINALG_NUM_THREADS, else OMP_NUM_THREADS, else the
// number of CPUs this process may run on. set_num_threads(n) overrides (n >= 1).
uint32_t cpuNumThreads();
void cpuSetNumThreads(uint32_t n);
// Join the workers (interpreter exit); a later launch starts them again.
void cpuShutdown();

// Run body(i) for i in [0, n) on the pool; the caller's thread takes part.
// Nested calls (from inside a block) run inline, so they never deadlock.
void parallelFor(uint32_t n, void (*body)(uint32_t i, void* ctx), void* ctx);

// Instruction set the CPU kernels dispatch to on this machine:
// "avx512f", "avx2+fma" or "baseline".
const char* cpuIsa();

}  // namespace al

#endif
