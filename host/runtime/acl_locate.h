// Stateless helpers of the ACL discovery (acl_locate.cpp): file lookups, the
// SoC family a kernel binary is built for, and the runtime's search order.
// ascendcKernelComputes and aclErrorMeaning are declared in acl_device.h.
#ifndef ASCEND_LINALG_RUNTIME_ACL_LOCATE_H
#define ASCEND_LINALG_RUNTIME_ACL_LOCATE_H

#include <string>
#include <vector>

namespace al {

bool isFile(const std::string& p);
// Kernel directory per SoC family: arch35 (950, dav-3510), arch22 (910B/910_93, dav-2201).
std::string socArch(const std::string& soc);
// Directory of the shared object holding this code (the _core extension).
std::string selfDir();
// $ASCEND_LINALG_KERNEL_BIN, else the installed binary next to _core, else the
// one a meson build tree holds (kernels/ascendc/<arch>/, editable installs).
std::string kernelBinaryPath(const std::string& soc);
// $ASCEND_LINALG_ACL_LIB, $ASCEND_HOME_PATH/lib64, $ASCEND_TOOLKIT_HOME/lib64,
// then the standard install locations.
std::vector<std::string> candidatePaths();

}  // namespace al

#endif
