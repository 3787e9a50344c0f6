// Device: where a kernel's blocks run. The host layer validates, tiles, and then
// only talks to this interface, so one host path serves the CPU and the NPU.
//
// A kernel is launched as `numBlocks` independent blocks, the way an Ascend
// kernel runs on AI cores: block b calls the entry with blockIdx == b and reads
// its share of the work from the tiling struct (GetBlockIdx()/GetBlockNum()).
#ifndef ASCEND_LINALG_RUNTIME_DEVICE_H
#define ASCEND_LINALG_RUNTIME_DEVICE_H

#include <cstddef>
#include <cstdint>
#include <string>

#include "ascend_linalg/al_types.h"

namespace al {

// CPU form of a kernel entry: args are the kernel's global-memory pointers in
// declaration order, `tiling` the plain tiling struct the host built.
using CpuKernelEntry = void (*)(uint32_t blockIdx, uint32_t numBlocks,
                                void* const* args, const void* tiling);

// One kernel as every device knows it: the NPU looks it up by `name` in its
// kernel binary; the CPU (and the fake ACL runtime) call `cpu`.
struct KernelDesc {
    const char* name;
    CpuKernelEntry cpu;
};

class Device {
public:
    virtual ~Device() = default;
    virtual alDeviceKind_t kind() const = 0;
    virtual std::string describe() const = 0;
    // How many blocks run at the same time (cores); tiling sizes work to it.
    virtual uint32_t coreNum() const = 0;
    // True when kernels read host pointers directly (no copies needed).
    virtual bool sharesHostMemory() const = 0;

    virtual alStatus_t malloc(void** ptr, size_t bytes) = 0;
    virtual alStatus_t free(void* ptr) = 0;
    virtual alStatus_t copyToDevice(void* dst, const void* src, size_t bytes) = 0;
    virtual alStatus_t copyToHost(void* dst, const void* src, size_t bytes) = 0;
    // Whether this device can run `kernel` on values of alDataType_t
    // `valueType` (-1: the kernel's only type), asked before anything is staged
    // so that a call the device cannot serve costs no transfers: SUCCESS,
    // ARCH_MISMATCH (no such kernel in the device's binary) or NOT_SUPPORTED
    // (the kernel exists but not for that type), with the reason set.
    virtual alStatus_t supports(const KernelDesc& kernel, int32_t valueType) = 0;
    // Run `numBlocks` blocks of `kernel`; returns when they are finished.
    virtual alStatus_t launch(const KernelDesc& kernel, uint32_t numBlocks,
                              void* const* args, int numArgs,
                              const void* tiling, size_t tilingBytes) = 0;
};

// Thread-local detail for alGetLastErrorMessage(); set by whoever fails.
void setLastError(const std::string& message);
void clearLastError();
const char* lastErrorCStr();

}  // namespace al

#endif
