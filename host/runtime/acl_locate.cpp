// Where the Ascend runtime and the kernel binaries are looked for, and what
// each architecture's binary computes: stateless helpers of AclDevice's
// discovery (acl_device.cpp).
#include "acl_locate.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>

#include "acl_device.h"

namespace al {

bool isFile(const std::string& p) {
    struct stat st;
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Kernel directory per SoC family: arch35 (950, dav-3510), arch22 (910B/910_93, dav-2201).
std::string socArch(const std::string& soc) {
    if (soc.rfind("Ascend950", 0) == 0) return "arch35";
    if (soc.rfind("Ascend910B", 0) == 0 || soc.rfind("Ascend910_93", 0) == 0) return "arch22";
    return "unknown-" + soc;
}

bool ascendcKernelComputes(const std::string& arch, const std::string& kernel, int32_t valueType) {
    if (valueType < 0) return true;
    // kernels/spmv/arch22/spmv_kernel.cpp: float32 values, x and y only.
    if (arch == "arch22" && kernel.rfind("spmv", 0) == 0) return valueType == AL_R_32F;
    // kernels/csymm/arch35/csymm_kernel.cpp: complex64 (csymm has no other type).
    if (kernel.rfind("csymm", 0) == 0) return valueType == AL_C_32F;
    return true;  // a kernel the table does not restrict: the binary lookup decides
}

// Directory of the shared object holding this code (the _core extension).
std::string selfDir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&isFile), &info) && info.dli_fname) {
        std::string f = info.dli_fname;
        auto slash = f.rfind('/');
        if (slash != std::string::npos) return f.substr(0, slash);
    }
    return ".";
}

// $ASCEND_LINALG_KERNEL_BIN, else the installed binary next to _core, else the
// one a meson build tree holds (kernels/ascendc/<arch>/, editable installs).
std::string kernelBinaryPath(const std::string& soc) {
    if (const char* p = std::getenv("ASCEND_LINALG_KERNEL_BIN"); p && *p) return p;
    const std::string installed = selfDir() + "/kernels/" + socArch(soc) + "/ascend_linalg_kernels.o";
    const std::string buildTree = selfDir() + "/../kernels/ascendc/" + socArch(soc) + "/ascend_linalg_kernels.o";
    return !isFile(installed) && isFile(buildTree) ? buildTree : installed;
}

std::vector<std::string> candidatePaths() {
    std::vector<std::string> out;
    if (const char* p = std::getenv("ASCEND_LINALG_ACL_LIB"); p && *p) out.emplace_back(p);
    for (const char* var : {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"}) {
        if (const char* p = std::getenv(var); p && *p) out.push_back(std::string(p) + "/lib64/libascendcl.so");
    }
    out.emplace_back("/usr/local/Ascend/cann/lib64/libascendcl.so");
    out.emplace_back("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so");
    return out;
}

const char* aclErrorMeaning(int code) {
    switch (code) {
        case 100000: return "ACL_ERROR_INVALID_PARAM: an argument the runtime rejected";
        case 100002: return "ACL_ERROR_REPEAT_INITIALIZE: already initialised";
        case 107001: return "invalid device id";
        case 207001: return "device memory allocation failed (out of device memory?)";
        case 207004: return "no device: driver not loaded, or /dev/davinci* not passed into the container";
        case 507008: return "SoC version error, often inside containers (driver/toolkit cannot identify the chip)";
        case 507033: return "device setup error: driver, toolkit and OPP versions do not match";
        case 507899: return "driver internal error";
        default: return "";
    }
}

}  // namespace al
