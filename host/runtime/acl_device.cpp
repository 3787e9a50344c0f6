// AclDevice: the Ascend runtime (libascendcl.so) through dlopen. Every ACL call
// is checked; a failing one becomes an alStatus_t whose last-error message
// names the call, the ACL code and what that code usually means.
//
// Kernel launch uses the runtime's binary API (hicann/runtime
// include/external/acl/acl_rt.h): aclrtBinaryLoadFromFile -> aclrtBinaryGetFunction
// -> aclrtLaunchKernel(func, numBlocks, argsData, argsSize, stream), where
// argsData is a host array of the kernel's GM_ADDR arguments: the operands'
// device pointers in declaration order, then the device copy of the tiling.
#include "acl_device.h"

#include "acl_abi.h"
#include "acl_locate.h"

#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>
#include <vector>

namespace al {

namespace {

using aclError = acl::Error;
using aclrtStream = acl::Stream;
using aclrtBinHandle = acl::BinHandle;
using aclrtFuncHandle = acl::FuncHandle;
using acl::kMallocHugeFirst;
using acl::kMemcpyDeviceToHost;
using acl::kMemcpyHostToDevice;
constexpr aclError kAclSuccess = acl::kSuccess;
constexpr aclError kAclRepeatInitialize = acl::kRepeatInitialize;

// The ACL subset this project calls, resolved once from the loaded library.
struct AclApi {
    aclError (*init)(const char*);
    aclError (*finalize)();
    aclError (*getDeviceCount)(uint32_t*);
    aclError (*setDevice)(int32_t);
    aclError (*resetDevice)(int32_t);
    const char* (*getSocName)();
    aclError (*createStream)(aclrtStream*);
    aclError (*destroyStream)(aclrtStream);
    aclError (*synchronizeStream)(aclrtStream);
    aclError (*malloc)(void**, size_t, int);
    aclError (*free)(void*);
    aclError (*memcpy)(void*, size_t, const void*, size_t, int);
    aclError (*binaryLoadFromFile)(const char*, void*, aclrtBinHandle*);
    aclError (*binaryUnLoad)(aclrtBinHandle);
    aclError (*binaryGetFunction)(aclrtBinHandle, const char*, aclrtFuncHandle*);
    aclError (*launchKernel)(aclrtFuncHandle, uint32_t, const void*, size_t, aclrtStream);
};

AclApi gApi{};

// Process-wide runtime state. Every ACL call made through a device holds gUseMu
// shared; aclShutdown sets gStopping (no new call starts: readers cannot starve
// it) and then holds gUseMu exclusively, so it never tears the runtime down
// under a running call. Every later call fails cleanly; frees become no-ops
// (the reset released that memory).
std::shared_timed_mutex gUseMu;
std::atomic<bool> gStopping{false};
std::atomic<bool> gShutdown{false};   // aclShutdown ran to the end
std::atomic<bool> gApiLoaded{false};  // gApi resolved (discovery got past dlsym)
bool gOwnInit = false;                // our aclInit returned ACL_SUCCESS (not 100002)
constexpr const char* kShutDown = "the Ascend runtime was shut down at interpreter exit";

class AclDevice;
std::mutex gRegMu;
std::vector<AclDevice*> gDevices;         // open devices (released at shutdown)
std::map<int32_t, int64_t> gSetCounts;    // successful aclrtSetDevice calls per device

constexpr const char* kForked =
    "the Ascend runtime was initialised in the parent process; a forked child cannot use it";
std::atomic<bool> gForked{false};

alStatus_t shutDown() {
    setLastError(gForked.load() ? kForked : kShutDown);
    return AL_STATUS_NOT_INITIALIZED;
}

// A child forked after the runtime was loaded must neither use the parent's
// device state nor release it (its exit would reset and finalize the parent's
// runtime): it starts out shut down.
void atforkChild() {
    gForked = true;
    gStopping = true;
    gShutdown = true;
}

// Shared hold on the runtime for one device call; false once shutdown began.
class Use {
public:
    Use() {
        if (gStopping.load()) return;
        lk_ = std::shared_lock<std::shared_timed_mutex>(gUseMu);
        ok_ = !gStopping.load();
    }
    explicit operator bool() const { return ok_; }

private:
    std::shared_lock<std::shared_timed_mutex> lk_;
    bool ok_ = false;
};

// Resolves every symbol of AclApi; returns the first missing name, or "".
std::string resolve(void* lib, AclApi* api) {
    struct Sym {
        const char* name;
        void** slot;
    };
    const Sym syms[] = {
        {"aclInit", reinterpret_cast<void**>(&api->init)},
        {"aclFinalize", reinterpret_cast<void**>(&api->finalize)},
        {"aclrtGetDeviceCount", reinterpret_cast<void**>(&api->getDeviceCount)},
        {"aclrtSetDevice", reinterpret_cast<void**>(&api->setDevice)},
        {"aclrtResetDevice", reinterpret_cast<void**>(&api->resetDevice)},
        {"aclrtGetSocName", reinterpret_cast<void**>(&api->getSocName)},
        {"aclrtCreateStream", reinterpret_cast<void**>(&api->createStream)},
        {"aclrtDestroyStream", reinterpret_cast<void**>(&api->destroyStream)},
        {"aclrtSynchronizeStream", reinterpret_cast<void**>(&api->synchronizeStream)},
        {"aclrtMalloc", reinterpret_cast<void**>(&api->malloc)},
        {"aclrtFree", reinterpret_cast<void**>(&api->free)},
        {"aclrtMemcpy", reinterpret_cast<void**>(&api->memcpy)},
        {"aclrtBinaryLoadFromFile", reinterpret_cast<void**>(&api->binaryLoadFromFile)},
        {"aclrtBinaryUnLoad", reinterpret_cast<void**>(&api->binaryUnLoad)},
        {"aclrtBinaryGetFunction", reinterpret_cast<void**>(&api->binaryGetFunction)},
        {"aclrtLaunchKernel", reinterpret_cast<void**>(&api->launchKernel)},
    };
    for (const Sym& s : syms) {
        *s.slot = dlsym(lib, s.name);
        if (!*s.slot) return s.name;
    }
    return "";
}

std::string aclErr(const char* call, aclError code) {
    std::string s = std::string(call) + " failed: ACL error " + std::to_string(code);
    const char* meaning = aclErrorMeaning(code);
    if (*meaning) s += std::string(" (") + meaning + ")";
    return s;
}

AclDiscovery discover() {
    AclDiscovery d;
    d.searched = candidatePaths();
    if (gStopping.load()) {
        d.reason = kShutDown;
        return d;
    }
    void* lib = nullptr;
    std::string openErrors;
    for (const auto& path : d.searched) {
        lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib) {
            d.libraryPath = path;
            break;
        }
        // A file that exists but does not load (missing dependency, wrong
        // architecture) is worth naming; absent ones are just "not found".
        if (isFile(path)) {
            const char* e = dlerror();
            openErrors += "; " + path + ": " + (e ? e : "dlopen failed");
        }
    }
    if (!lib) {
        d.reason = "libascendcl.so not found (searched:";
        for (const auto& p : d.searched) d.reason += " " + p;
        d.reason += ")" + openErrors +
                    "; install CANN and source set_env.sh, or set ASCEND_LINALG_ACL_LIB";
        return d;
    }
    // The library stays loaded for the life of the process: the device uses it.
    std::string missing = resolve(lib, &gApi);
    if (!missing.empty()) {
        d.reason = d.libraryPath + " lacks symbol " + missing +
                   " (CANN too old for the binary kernel API, or not libascendcl.so)";
        gApi = AclApi{};
        return d;
    }
    d.runtimeRunsCpuKernels = dlsym(lib, "fakeAclRunsCpuKernels") != nullptr;
    gApiLoaded = true;
    pthread_atfork(nullptr, nullptr, atforkChild);
    aclError e = gApi.init(nullptr);
    // Only an init of ours is ours to finalize; 100002 means another library
    // of this process initialised ACL and will finalize it.
    gOwnInit = e == kAclSuccess;
    if (e != kAclSuccess && e != kAclRepeatInitialize) {
        d.reason = aclErr("aclInit", e) + " [" + d.libraryPath + "]";
        return d;
    }
    uint32_t count = 0;
    e = gApi.getDeviceCount(&count);
    if (e != kAclSuccess) {
        d.reason = aclErr("aclrtGetDeviceCount", e) + " [" + d.libraryPath + "]";
        return d;
    }
    d.deviceCount = count;
    if (count == 0) {
        d.reason = "the Ascend runtime " + d.libraryPath +
                   " reports 0 devices (no /dev/davinci*: driver not loaded, or not passed into the container)";
        return d;
    }
    const char* soc = gApi.getSocName();
    d.socName = soc ? soc : "";
    d.kernelBinary = kernelBinaryPath(d.socName);
    if (!d.runtimeRunsCpuKernels && !isFile(d.kernelBinary)) {
        d.reason = std::to_string(count) + " device(s) (SoC " + d.socName +
                   ") found, but no Ascend C kernel binary at " + d.kernelBinary +
                   ": this build has no NPU kernels for this SoC (set ASCEND_LINALG_KERNEL_BIN)";
        return d;
    }
    d.usable = true;
    return d;
}

// Which devices this thread has bound (ACL contexts are per thread).
thread_local std::vector<int32_t> tlsBound;

// Public methods take a Use (shared hold on the runtime) and then call the
// *Impl helpers, which never lock it again.
class AclDevice final : public Device {
public:
    AclDevice(int32_t id, const AclDiscovery& d) : id_(id), disc_(d) {
        std::lock_guard<std::mutex> g(gRegMu);
        gDevices.push_back(this);
    }
    ~AclDevice() override {
        {
            std::lock_guard<std::mutex> g(gRegMu);
            gDevices.erase(std::find(gDevices.begin(), gDevices.end(), this));
        }
        Use u;
        if (u) releaseAll();
        // aclrtResetDevice is left to aclShutdown: other threads may still be bound.
    }

    alStatus_t open() {
        Use u;
        if (!u) return shutDown();
        alStatus_t st = bindThread();
        if (st != AL_STATUS_SUCCESS) return st;
        aclError e = gApi.createStream(&stream_);
        if (e != kAclSuccess) {
            stream_ = nullptr;
            setLastError(aclErr("aclrtCreateStream", e));
            return AL_STATUS_NOT_INITIALIZED;
        }
        return AL_STATUS_SUCCESS;
    }

    alDeviceKind_t kind() const override { return AL_DEVICE_NPU; }
    std::string describe() const override {
        return "NPU " + std::to_string(id_) + " (" + disc_.socName + ") via " + disc_.libraryPath;
    }
    uint32_t coreNum() const override {
        if (const char* v = std::getenv("ASCEND_LINALG_NPU_CORES"); v && std::atoi(v) > 0)
            return static_cast<uint32_t>(std::atoi(v));
        return socArch(disc_.socName) == "arch22" ? 24u : 32u;
    }
    bool sharesHostMemory() const override { return false; }

    alStatus_t malloc(void** ptr, size_t bytes) override {
        *ptr = nullptr;
        Use u;
        if (!u) return shutDown();
        return mallocImpl(ptr, bytes);
    }
    alStatus_t free(void* ptr) override {
        if (!ptr) return AL_STATUS_SUCCESS;
        Use u;
        if (!u) return AL_STATUS_SUCCESS;  // released with the device at shutdown
        return freeImpl(ptr);
    }
    alStatus_t copyToDevice(void* dst, const void* src, size_t bytes) override {
        Use u;
        if (!u) return shutDown();
        return copyImpl(dst, src, bytes, kMemcpyHostToDevice, "aclrtMemcpy(host to device");
    }
    alStatus_t copyToHost(void* dst, const void* src, size_t bytes) override {
        Use u;
        if (!u) return shutDown();
        return copyImpl(dst, src, bytes, kMemcpyDeviceToHost, "aclrtMemcpy(device to host");
    }

    alStatus_t supports(const KernelDesc& kernel, int32_t valueType) override {
        Use u;
        if (!u) return shutDown();
        aclrtFuncHandle fn = nullptr;
        alStatus_t st = boundFunction(kernel.name, &fn);
        if (st != AL_STATUS_SUCCESS) return st;
        if (!disc_.runtimeRunsCpuKernels && !ascendcKernelComputes(socArch(disc_.socName), kernel.name, valueType)) {
            setLastError(std::string("the ") + socArch(disc_.socName) + " Ascend C build of " + kernel.name +
                         " does not compute value type " + std::to_string(valueType) + " (" + disc_.kernelBinary +
                         ")");
            return AL_STATUS_NOT_SUPPORTED;
        }
        return AL_STATUS_SUCCESS;
    }

    alStatus_t launch(const KernelDesc& kernel, uint32_t numBlocks, void* const* args, int numArgs,
                      const void* tiling, size_t tilingBytes) override {
        Use u;
        if (!u) return shutDown();
        aclrtFuncHandle fn = nullptr;
        alStatus_t st = boundFunction(kernel.name, &fn);
        if (st != AL_STATUS_SUCCESS) return st;
        // The tiling struct travels as the last GM_ADDR argument.
        void* devTiling = nullptr;
        if ((st = mallocImpl(&devTiling, tilingBytes ? tilingBytes : 1)) != AL_STATUS_SUCCESS) return st;
        struct Free {
            AclDevice* d;
            void* p;
            ~Free() { d->freeImpl(p); }
        } freeTiling{this, devTiling};
        if (tilingBytes &&
            (st = copyImpl(devTiling, tiling, tilingBytes, kMemcpyHostToDevice, "aclrtMemcpy(host to device")) !=
                AL_STATUS_SUCCESS)
            return st;
        std::vector<void*> argv(args, args + numArgs);
        argv.push_back(devTiling);
        aclError e;
        {
            std::lock_guard<std::mutex> g(streamMu_);
            e = gApi.launchKernel(fn, numBlocks, argv.data(), argv.size() * sizeof(void*), stream_);
            if (e != kAclSuccess) {
                setLastError(aclErr((std::string("aclrtLaunchKernel(") + kernel.name + ", " +
                                     std::to_string(numBlocks) + " blocks)").c_str(), e));
                return AL_STATUS_EXECUTION_FAILED;
            }
            e = gApi.synchronizeStream(stream_);
        }
        if (e != kAclSuccess) {
            setLastError(aclErr((std::string("aclrtSynchronizeStream after ") + kernel.name).c_str(), e));
            return AL_STATUS_EXECUTION_FAILED;
        }
        return AL_STATUS_SUCCESS;
    }

    // Frees every allocation still live, unloads the binary and destroys the
    // stream. Caller holds gUseMu (shared from the destructor, exclusive at
    // shutdown). Returns how many allocations it freed.
    size_t releaseAll() {
        bindThread();  // ACL frees need a context on the calling thread
        std::vector<void*> live;
        {
            std::lock_guard<std::mutex> g(liveMu_);
            live.assign(live_.begin(), live_.end());
        }
        for (void* p : live) freeImpl(p);
        {
            std::lock_guard<std::mutex> g(binMu_);
            if (binary_) gApi.binaryUnLoad(binary_);
            binary_ = nullptr;
            funcs_.clear();
        }
        std::lock_guard<std::mutex> g(streamMu_);
        if (stream_) gApi.destroyStream(stream_);
        stream_ = nullptr;
        return live.size();
    }

private:
    alStatus_t mallocImpl(void** ptr, size_t bytes) {
        *ptr = nullptr;
        alStatus_t st = bindThread();
        if (st != AL_STATUS_SUCCESS) return st;
        aclError e = gApi.malloc(ptr, bytes, kMallocHugeFirst);
        if (e != kAclSuccess) {
            *ptr = nullptr;
            setLastError(aclErr(("aclrtMalloc(" + std::to_string(bytes) + " bytes)").c_str(), e));
            return AL_STATUS_ALLOC_FAILED;
        }
        std::lock_guard<std::mutex> g(liveMu_);
        live_.insert(*ptr);
        return AL_STATUS_SUCCESS;
    }
    alStatus_t freeImpl(void* ptr) {
        {
            std::lock_guard<std::mutex> g(liveMu_);
            if (!live_.erase(ptr)) return AL_STATUS_SUCCESS;  // already released
        }
        aclError e = gApi.free(ptr);
        if (e != kAclSuccess) {
            setLastError(aclErr("aclrtFree", e));
            return AL_STATUS_INTERNAL_ERROR;
        }
        return AL_STATUS_SUCCESS;
    }

    alStatus_t bindThread() {
        for (int32_t b : tlsBound)
            if (b == id_) return AL_STATUS_SUCCESS;
        aclError e = gApi.setDevice(id_);
        if (e != kAclSuccess) {
            setLastError(aclErr(("aclrtSetDevice(" + std::to_string(id_) + ")").c_str(), e));
            return AL_STATUS_NOT_INITIALIZED;
        }
        tlsBound.push_back(id_);
        std::lock_guard<std::mutex> g(gRegMu);
        ++gSetCounts[id_];
        return AL_STATUS_SUCCESS;
    }

    alStatus_t copyImpl(void* dst, const void* src, size_t bytes, int kind, const char* what) {
        if (bytes == 0) return AL_STATUS_SUCCESS;
        alStatus_t st = bindThread();
        if (st != AL_STATUS_SUCCESS) return st;
        aclError e = gApi.memcpy(dst, bytes, src, bytes, kind);
        if (e != kAclSuccess) {
            setLastError(aclErr((std::string(what) + ", " + std::to_string(bytes) + " bytes)").c_str(), e));
            return AL_STATUS_MAPPING_ERROR;
        }
        return AL_STATUS_SUCCESS;
    }

    // This thread bound to the device, then function(name).
    alStatus_t boundFunction(const char* name, aclrtFuncHandle* fn) {
        alStatus_t st = bindThread();
        return st != AL_STATUS_SUCCESS ? st : function(name, fn);
    }

    // Loads the kernel binary on first use and caches one handle per kernel name.
    alStatus_t function(const char* name, aclrtFuncHandle* fn) {
        std::lock_guard<std::mutex> g(binMu_);
        if (!binary_) {
            aclError e = gApi.binaryLoadFromFile(disc_.kernelBinary.c_str(), nullptr, &binary_);
            if (e != kAclSuccess) {
                binary_ = nullptr;
                setLastError(aclErr(("aclrtBinaryLoadFromFile(" + disc_.kernelBinary + ")").c_str(), e));
                return AL_STATUS_ARCH_MISMATCH;
            }
        }
        auto it = funcs_.find(name);
        if (it != funcs_.end()) {
            *fn = it->second;
            return AL_STATUS_SUCCESS;
        }
        aclError e = gApi.binaryGetFunction(binary_, name, fn);
        if (e != kAclSuccess || !*fn) {
            setLastError(aclErr((std::string("aclrtBinaryGetFunction(") + name + ") in " + disc_.kernelBinary).c_str(),
                                e));
            return AL_STATUS_ARCH_MISMATCH;
        }
        funcs_.emplace(name, *fn);
        return AL_STATUS_SUCCESS;
    }

    int32_t id_;
    const AclDiscovery& disc_;
    aclrtStream stream_ = nullptr;
    std::mutex streamMu_;
    std::mutex binMu_;
    aclrtBinHandle binary_ = nullptr;
    std::map<std::string, aclrtFuncHandle> funcs_;
    std::mutex liveMu_;
    std::unordered_set<void*> live_;  // allocations not yet freed
};

}  // namespace

const AclDiscovery& discoverAcl() {
    static std::once_flag once;
    static AclDiscovery* cached = nullptr;
    std::call_once(once, [] { cached = new AclDiscovery(discover()); });
    return *cached;
}

AclShutdownReport aclShutdown(double timeoutSeconds) {
    AclShutdownReport r;
    if (gForked.load()) {
        r.note = "forked child: the runtime is the parent's to release";
        return r;
    }
    if (gStopping.exchange(true) && gShutdown.load()) {
        r.note = "already shut down";
        return r;
    }
    if (!gApiLoaded.load()) {  // and none is loaded (or initialised) after this
        r.note = "the Ascend runtime was never loaded";
        return r;
    }
    std::unique_lock<std::shared_timed_mutex> lk(gUseMu, std::defer_lock);
    if (!lk.try_lock_for(std::chrono::duration<double>(timeoutSeconds))) {
        r.note = "a call was still running on another thread; left to process exit";
        return r;
    }
    if (gShutdown.load()) {
        r.note = "already shut down";
        return r;
    }
    // releaseAll may bind this thread (gSetCounts): not under gRegMu.
    std::vector<AclDevice*> devices;
    {
        std::lock_guard<std::mutex> g(gRegMu);
        devices = gDevices;
    }
    for (AclDevice* d : devices) r.freed += d->releaseAll();
    // aclrtResetDevice is reference counted per aclrtSetDevice call: balance
    // ours exactly, so a device another library also set stays up for it.
    std::map<int32_t, int64_t> sets;
    {
        std::lock_guard<std::mutex> g(gRegMu);
        sets.swap(gSetCounts);
    }
    for (const auto& [id, n] : sets) {
        for (int64_t i = 0; i < n; ++i) {
            aclError e = gApi.resetDevice(id);
            if (e == kAclSuccess) ++r.resets;
            else r.errors += aclErr(("aclrtResetDevice(" + std::to_string(id) + ")").c_str(), e) + "; ";
        }
    }
    if (gOwnInit) {
        aclError e = gApi.finalize();
        if (e == kAclSuccess) r.finalized = true;
        else r.errors += aclErr("aclFinalize", e) + "; ";
    } else {
        r.note = "aclInit was not ours (ACL initialised by another library of this process): not finalized";
    }
    gShutdown = true;
    return r;
}

std::unique_ptr<Device> openAclDevice(int32_t deviceId, std::string* why) {
    if (gStopping.load()) {
        if (why) *why = gForked.load() ? kForked : kShutDown;
        return nullptr;
    }
    const AclDiscovery& d = discoverAcl();
    if (!d.usable) {
        if (why) *why = d.reason;
        return nullptr;
    }
    if (deviceId < 0 || static_cast<uint32_t>(deviceId) >= d.deviceCount) {
        if (why) *why = "NPU " + std::to_string(deviceId) + " does not exist (" + std::to_string(d.deviceCount) +
                        " device(s))";
        return nullptr;
    }
    auto dev = std::make_unique<AclDevice>(deviceId, d);
    if (dev->open() != AL_STATUS_SUCCESS) {
        if (why) *why = lastErrorCStr();
        return nullptr;
    }
    return dev;
}

}  // namespace al
