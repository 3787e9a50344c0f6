// ACL discovery. The device layer (memory, launch) is not part of this build
// yet: discovery reports what it found and why the NPU cannot be used.
#include "acl_device.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace al {

namespace {

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

AclDiscovery discover() {
    AclDiscovery d;
    d.searched = candidatePaths();
    for (const auto& path : d.searched) {
        void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (h) {
            d.libraryPath = path;
            d.reason = "found " + path +
                       ", but this build of ascend_linalg has no NPU device layer yet";
            dlclose(h);
            return d;
        }
    }
    d.reason = "libascendcl.so not found (searched:";
    for (const auto& p : d.searched) d.reason += " " + p;
    d.reason += "); install CANN and source set_env.sh, or set ASCEND_LINALG_ACL_LIB";
    return d;
}

}  // namespace

const AclDiscovery& discoverAcl() {
    static std::once_flag once;
    static AclDiscovery* cached = nullptr;
    std::call_once(once, [] { cached = new AclDiscovery(discover()); });
    return *cached;
}

std::unique_ptr<Device> openAclDevice(int32_t, std::string* why) {
    const AclDiscovery& d = discoverAcl();
    if (why) *why = d.reason;
    return nullptr;
}

}  // namespace al
