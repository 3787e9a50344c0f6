// AclDevice: an Ascend NPU through libascendcl.so, loaded with dlopen at first
// use (never linked), so one build serves machines with and without CANN.
#ifndef ASCEND_LINALG_RUNTIME_ACL_DEVICE_H
#define ASCEND_LINALG_RUNTIME_ACL_DEVICE_H

#include <memory>
#include <string>
#include <vector>

#include "device.h"

namespace al {

struct AclDiscovery {
    bool usable = false;          // an NPU can run this library's kernels
    std::string libraryPath;      // the libascendcl.so that was loaded ("" if none)
    std::vector<std::string> searched;  // where it was looked for, in order
    uint32_t deviceCount = 0;
    std::string socName;
    std::string reason;           // why not usable (empty when usable)
    std::string kernelBinary;     // the Ascend C kernel binary launches look kernels up in
    bool runtimeRunsCpuKernels = false;  // the fake runtime (tests): kernels built in, no binary needed
};

// ACL error code -> what it usually means (ascend-facts.md); "" when unknown.
const char* aclErrorMeaning(int code);

// Search order: $ASCEND_LINALG_ACL_LIB, $ASCEND_HOME_PATH/lib64,
// $ASCEND_TOOLKIT_HOME/lib64, /usr/local/Ascend/cann/lib64,
// /usr/local/Ascend/ascend-toolkit/latest/lib64; the first that dlopens is the
// one used. Then aclInit (100002, already initialised, counts as success),
// aclrtGetDeviceCount and aclrtGetSocName. Usable when every symbol resolves,
// init works, at least one device is present and kernels can be found
// ($ASCEND_LINALG_KERNEL_BIN, else kernels/<arch>/ascend_linalg_kernels.o next
// to the library holding this code, else ../kernels/ascendc/<arch>/ of a meson
// build tree). Result cached per process.
const AclDiscovery& discoverAcl();

// Value types the project's Ascend C build of `kernel` computes on SoC family
// `arch` ("arch22", "arch35"): true for the types its source accepts. The
// kernels reject other types at run time too (SpMV: status word 2), so this
// table only spares the transfers of a call that would come back refused.
// valueType -1: the kernel's only type. Used for real kernel binaries; a
// runtime that runs the CPU kernels (the fake) computes every type.
bool ascendcKernelComputes(const std::string& arch, const std::string& kernel, int32_t valueType);

// A device for NPU `deviceId`, or nullptr with *why set.
std::unique_ptr<Device> openAclDevice(int32_t deviceId, std::string* why);

struct AclShutdownReport {
    bool finalized = false;   // aclFinalize was called and succeeded
    size_t freed = 0;         // device allocations still live, freed here
    int64_t resets = 0;       // aclrtResetDevice calls made (one per aclrtSetDevice of ours)
    std::string note;         // why something was not done ("" when everything was)
    std::string errors;       // ACL calls that failed ("" when none)
};

// Releases what this library holds on the Ascend runtime, for interpreter
// exit: every device's live allocations, loaded binary and stream, then one
// aclrtResetDevice per aclrtSetDevice this process made, then aclFinalize
// only when this library's aclInit initialised ACL (not when it returned
// 100002 because another library had). Waits up to timeoutSeconds for calls
// running on other threads; when they do not finish, does nothing. Afterwards
// device calls fail with AL_STATUS_NOT_INITIALIZED and frees are no-ops.
// Never loads the runtime: a process that did not use it does nothing.
AclShutdownReport aclShutdown(double timeoutSeconds);

}  // namespace al

#endif
