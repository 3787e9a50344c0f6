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
// to the library holding this code). Result cached per process.
const AclDiscovery& discoverAcl();

// A device for NPU `deviceId`, or nullptr with *why set.
std::unique_ptr<Device> openAclDevice(int32_t deviceId, std::string* why);

}  // namespace al

#endif
