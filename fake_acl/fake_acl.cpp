// libascendcl (fake): the subset of the ACL runtime API that ascend_linalg
// calls, over host memory, strict enough to catch staging mistakes.
//
// - Device memory is host memory the fake tracks: frees of unknown pointers,
//   copies that touch anything outside one live allocation, a copy kind that
//   does not match where the pointers live, and kernel arguments that are not
//   device memory all return ACL_ERROR_INVALID_PARAM (100000). Fresh
//   allocations are filled with 0xCD so a kernel that reads memory the host
//   never wrote gives visibly wrong results.
// - The "kernel binary" is built in: aclrtBinaryGetFunction finds the kernel
//   by name in fake_kernels.def and aclrtLaunchKernel runs its CPU entry for
//   blocks 0..numBlocks-1, one after another, with the device copy of the
//   tiling (the last argument).
// - Environment: FAKE_ACL_DEVICE_COUNT (default 1), FAKE_ACL_SOC (default
//   Ascend950PR_9599), FAKE_ACL_FAIL (injected failures, see parseFail),
//   FAKE_ACL_MISSING_KERNELS=<name,...> (the "binary" lacks those kernels),
//   FAKE_ACL_PREINIT=1 (behave as if another library of the process had
//   called aclInit first: our aclInit gets 100002), FAKE_ACL_REPORT=<file>
//   (append one JSON line per aclFinalize and one at process exit with what
//   was still held: allocations, streams, loaded binaries, device references),
//   FAKE_ACL_SPMV_TYPES=<float32,...> (the SpMV kernels refuse other value
//   types with status word 2, as the arch22 Ascend C build does).
// - aclrtSetDevice/aclrtResetDevice keep a per-device reference count, as the
//   real runtime does (each set +1, each reset -1; a reset at 0 fails).
// - Extra C functions for tests (ctypes): fakeAclStat(name), fakeAclReset(),
//   fakeAclSetFail(spec), fakeAclKernelCount(), fakeAclKernelName(i),
//   fakeAclLastTiling(name, buf, cap).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#define FAKE_API extern "C" __attribute__((visibility("default")))

#include "host/runtime/acl_abi.h"

using aclError = al::acl::Error;
using KernelEntry = void (*)(uint32_t, uint32_t, void* const*, const void*);

#include "kernels/csymm/csymm_kernel.h"
#include "kernels/spmv/spmv_kernel.h"
#include "kernels/spmv/spmv_kernel_merge.h"
#include "host/spmv_tiling.h"
#include "ascend_linalg/al_types.h"

namespace {

using namespace al::acl;

struct Kernel {
    const char* name;
    KernelEntry entry;
};

const Kernel kKernels[] = {
#define FAKE_KERNEL(name, fn) {name, &al::fn},
#include "fake_kernels.def"
#undef FAKE_KERNEL
};

// One injected failure: the `nth` call (1-based since the last reset) of an
// operation fails with `code`; nth == 0 means every call.
struct Fail {
    bool on = false;
    uint64_t nth = 0;
    aclError code = 0;
};

struct State {
    std::mutex mu;
    bool initialised = false;
    std::map<uintptr_t, size_t> allocs;  // base -> bytes
    std::set<void*> streams;
    std::map<std::string, uint64_t> stats;
    std::map<std::string, Fail> fails;    // "init", "malloc", "memcpy", "launch", "sync", "setdevice"
    std::map<std::string, uint64_t> calls;
    bool failParsed = false;
    std::map<int32_t, int64_t> deviceRefs;  // aclrtSetDevice - aclrtResetDevice per device
    int64_t binariesLoaded = 0;             // loads - unloads
    bool preinitDone = false;
    std::map<std::string, std::vector<unsigned char>> lastTiling;  // kernel name -> tiling of its last launch
};

State& st() {
    static State* s = new State;  // never destroyed: callers may run at exit
    return *s;
}

// Spec: comma-separated items, each `op`, `op:N` (the Nth call fails) or, for
// init/setdevice/count, `op:CODE` (aclInit/... returns CODE). Codes >= 1000
// are codes; smaller numbers are call counts. Unknown items are ignored.
void parseFail(State& s, const char* spec) {
    s.fails.clear();
    s.failParsed = true;
    if (!spec) return;
    std::string all(spec);
    size_t pos = 0;
    while (pos <= all.size()) {
        size_t end = all.find_first_of(",|", pos);
        if (end == std::string::npos) end = all.size();
        std::string item = all.substr(pos, end - pos);
        pos = end + 1;
        if (item.empty()) continue;
        Fail f;
        f.on = true;
        std::string op = item;
        auto colon = item.find(':');
        if (colon != std::string::npos) {
            op = item.substr(0, colon);
            long long v = std::atoll(item.c_str() + colon + 1);
            if (v >= 1000) f.code = static_cast<aclError>(v);
            else if (v > 0) f.nth = static_cast<uint64_t>(v);
        }
        if (!f.code) {
            if (op == "malloc") f.code = kMemoryAllocation;
            else if (op == "init" || op == "count") f.code = 507033;
            else if (op == "setdevice") f.code = kInvalidDevice;
            else f.code = kDriverInternal;
        }
        s.fails[op] = f;
    }
}

// Counts a call of `op` and returns the injected failure code, or 0.
aclError injected(State& s, const char* op) {
    if (!s.failParsed) parseFail(s, std::getenv("FAKE_ACL_FAIL"));
    uint64_t n = ++s.calls[op];
    auto it = s.fails.find(op);
    if (it == s.fails.end() || !it->second.on) return 0;
    if (it->second.nth == 0 || it->second.nth == n) {
        ++s.stats["injected_failures"];
        return it->second.code;
    }
    return 0;
}

uint32_t deviceCount() {
    const char* v = std::getenv("FAKE_ACL_DEVICE_COUNT");
    if (!v || !*v) return 1;
    long n = std::atol(v);
    return n < 0 ? 0u : static_cast<uint32_t>(n);
}

// The live allocation that holds [p, p + bytes), or allocs.end().
std::map<uintptr_t, size_t>::iterator findRange(State& s, const void* p, size_t bytes) {
    uintptr_t a = reinterpret_cast<uintptr_t>(p);
    auto it = s.allocs.upper_bound(a);
    if (it == s.allocs.begin()) return s.allocs.end();
    --it;
    if (a < it->first || a - it->first > it->second || bytes > it->second - (a - it->first)) return s.allocs.end();
    return it;
}

bool isDevice(State& s, const void* p) { return findRange(s, p, 0) != s.allocs.end(); }

int64_t deviceRefTotal(const State& s) {
    int64_t n = 0;
    for (const auto& kv : s.deviceRefs) n += kv.second;
    return n;
}

// One JSON line on $FAKE_ACL_REPORT: what the process still held at `event`.
void report(State& s, const char* event) {
    const char* path = std::getenv("FAKE_ACL_REPORT");
    if (!path || !*path) return;
    FILE* f = std::fopen(path, "a");
    if (!f) return;
    std::fprintf(f,
                 "{\"event\": \"%s\", \"inits\": %llu, \"finalizes\": %llu, \"initialised\": %d, "
                 "\"outstanding\": %llu, \"outstanding_bytes\": %llu, \"streams\": %zu, "
                 "\"binaries\": %lld, \"device_refs\": %lld, \"resets\": %llu, \"after_finalize\": %llu}\n",
                 event, (unsigned long long)s.stats["inits"], (unsigned long long)s.stats["finalizes"],
                 s.initialised ? 1 : 0, (unsigned long long)s.allocs.size(),
                 (unsigned long long)s.stats["outstanding_bytes"], s.streams.size(), (long long)s.binariesLoaded,
                 (long long)deviceRefTotal(s), (unsigned long long)s.stats["resets"],
                 (unsigned long long)s.stats["after_finalize"]);
    std::fclose(f);
}

__attribute__((destructor)) void reportAtExit() {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    report(s, "exit");
}

}  // namespace

// ---- ACL API subset (signatures as in hicann/runtime include/external/acl) ----

FAKE_API aclError aclInit(const char*) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (aclError e = injected(s, "init")) return e;
    if (!s.preinitDone) {  // FAKE_ACL_PREINIT: someone else initialised ACL before us
        s.preinitDone = true;
        const char* pre = std::getenv("FAKE_ACL_PREINIT");
        if (pre && *pre == '1') {
            s.initialised = true;
            ++s.stats["inits_by_others"];
        }
    }
    if (s.initialised) return kRepeatInitialize;
    s.initialised = true;
    ++s.stats["inits"];
    return kSuccess;
}

FAKE_API aclError aclFinalize() {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.initialised) return kUninitialize;
    ++s.stats["finalizes"];
    report(s, "finalize");
    s.initialised = false;
    return kSuccess;
}

FAKE_API aclError aclrtGetDeviceCount(uint32_t* count) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!count) return kInvalidParam;
    if (aclError e = injected(s, "count")) return e;
    *count = deviceCount();
    return kSuccess;
}

FAKE_API aclError aclrtSetDevice(int32_t id) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.initialised) return kUninitialize;
    if (aclError e = injected(s, "setdevice")) return e;
    if (id < 0 || static_cast<uint32_t>(id) >= deviceCount()) return kInvalidDevice;
    ++s.stats["set_device"];
    ++s.deviceRefs[id];
    return kSuccess;
}

FAKE_API aclError aclrtResetDevice(int32_t id) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.initialised) {
        ++s.stats["after_finalize"];
        return kUninitialize;
    }
    if (id < 0 || static_cast<uint32_t>(id) >= deviceCount()) return kInvalidDevice;
    if (s.deviceRefs[id] <= 0) {
        ++s.stats["bad_calls"];
        return kInvalidDevice;
    }
    --s.deviceRefs[id];
    ++s.stats["resets"];
    return kSuccess;
}

FAKE_API const char* aclrtGetSocName() {
    const char* v = std::getenv("FAKE_ACL_SOC");
    return v && *v ? v : "Ascend950PR_9599";
}

FAKE_API aclError aclrtCreateStream(void** stream) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!stream) return kInvalidParam;
    if (!s.initialised) return kUninitialize;
    *stream = new int(0);
    s.streams.insert(*stream);
    return kSuccess;
}

FAKE_API aclError aclrtDestroyStream(void* stream) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.streams.erase(stream)) return kInvalidParam;
    delete static_cast<int*>(stream);
    return kSuccess;
}

FAKE_API aclError aclrtSynchronizeStream(void* stream) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.streams.count(stream)) return kInvalidParam;
    if (aclError e = injected(s, "sync")) return e;
    return kSuccess;
}

FAKE_API aclError aclrtMalloc(void** ptr, size_t size, int /*policy*/) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!ptr || size == 0) return kInvalidParam;
    if (!s.initialised) return kUninitialize;
    if (aclError e = injected(s, "malloc")) return e;
    size_t rounded = (size + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) return kMemoryAllocation;
    std::memset(p, 0xCD, rounded);
    *ptr = p;
    s.allocs.emplace(reinterpret_cast<uintptr_t>(p), size);
    ++s.stats["mallocs"];
    ++s.stats["outstanding"];
    s.stats["outstanding_bytes"] += size;
    return kSuccess;
}

FAKE_API aclError aclrtFree(void* ptr) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.initialised) {
        ++s.stats["after_finalize"];
        return kUninitialize;
    }
    auto it = s.allocs.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == s.allocs.end()) {
        ++s.stats["bad_calls"];
        return kInvalidParam;
    }
    s.stats["outstanding_bytes"] -= it->second;
    s.allocs.erase(it);
    std::free(ptr);
    ++s.stats["frees"];
    --s.stats["outstanding"];
    return kSuccess;
}

FAKE_API aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, int kind) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!dst || !src || count > destMax) {
        ++s.stats["bad_calls"];
        return kInvalidParam;
    }
    bool srcDev, dstDev;
    switch (kind) {
        case kMemcpyHostToHost: srcDev = false; dstDev = false; break;
        case kMemcpyHostToDevice: srcDev = false; dstDev = true; break;
        case kMemcpyDeviceToHost: srcDev = true; dstDev = false; break;
        case kMemcpyDeviceToDevice: srcDev = true; dstDev = true; break;
        default: ++s.stats["bad_calls"]; return kInvalidParam;
    }
    // A device side must lie inside one allocation; a host side must not be device memory.
    bool ok = (dstDev ? findRange(s, dst, count) != s.allocs.end() : !isDevice(s, dst)) &&
              (srcDev ? findRange(s, src, count) != s.allocs.end() : !isDevice(s, src));
    if (!ok) {
        ++s.stats["bad_calls"];
        return kInvalidParam;
    }
    if (aclError e = injected(s, "memcpy")) return e;
    std::memmove(dst, src, count);
    if (kind == kMemcpyHostToDevice) { s.stats["bytes_h2d"] += count; ++s.stats["copies_h2d"]; }
    if (kind == kMemcpyDeviceToHost) { s.stats["bytes_d2h"] += count; ++s.stats["copies_d2h"]; }
    if (kind == kMemcpyDeviceToDevice) s.stats["bytes_d2d"] += count;
    return kSuccess;
}

FAKE_API aclError aclrtBinaryLoadFromFile(const char* path, void* /*options*/, void** handle) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!path || !handle) return kInvalidParam;
    if (!s.initialised) return kUninitialize;
    static int binary = 0;  // the kernels are built in; the file is not read
    *handle = &binary;
    ++s.stats["binary_loads"];
    ++s.binariesLoaded;
    return kSuccess;
}

FAKE_API aclError aclrtBinaryUnLoad(void* handle) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    if (!handle || s.binariesLoaded <= 0) {
        ++s.stats["bad_calls"];
        return kInvalidParam;
    }
    --s.binariesLoaded;
    ++s.stats["binary_unloads"];
    return kSuccess;
}

FAKE_API aclError aclrtBinaryGetFunction(void* binary, const char* name, void** func) {
    if (!binary || !name || !func) return kInvalidParam;
    // FAKE_ACL_MISSING_KERNELS=a,b: a binary built without those kernels (as an
    // architecture's binary that lacks an op).
    if (const char* missing = std::getenv("FAKE_ACL_MISSING_KERNELS")) {
        const std::string list = std::string(",") + missing + ",";
        if (list.find(std::string(",") + name + ",") != std::string::npos) return kInvalidParam;
    }
    for (const Kernel& k : kKernels) {
        if (k.entry && std::strcmp(k.name, name) == 0) {
            *func = const_cast<Kernel*>(&k);
            return kSuccess;
        }
    }
    return kInvalidParam;
}

// FAKE_ACL_SPMV_TYPES=float32[,...]: the SpMV kernels of this "binary" compute
// only these value types, as a device binary built for fewer types would
// (kernels/spmv/arch22 computes float32 only). Unset: every type.
bool spmvComputes(const al::SpmvTilingData* t) {
    const char* env = std::getenv("FAKE_ACL_SPMV_TYPES");
    if (!env) return true;
    const char* name = "";
    switch (t->valueType) {
        case AL_R_32F: name = "float32"; break;
        case AL_R_64F: name = "float64"; break;
        case AL_C_32F: name = "complex64"; break;
        case AL_C_64F: name = "complex128"; break;
        case AL_R_32I: name = "int32"; break;
        case AL_R_64I: name = "int64"; break;
        default: return false;
    }
    const std::string list = std::string(",") + env + ",";
    return list.find(std::string(",") + name + ",") != std::string::npos;
}

FAKE_API aclError aclrtLaunchKernel(void* func, uint32_t numBlocks, const void* argsData, size_t argsSize,
                                    void* stream) {
    State& s = st();
    const Kernel* k = static_cast<const Kernel*>(func);
    std::vector<void*> args;
    {
        std::lock_guard<std::mutex> g(s.mu);
        bool known = false;
        for (const Kernel& kk : kKernels) known |= (&kk == k);
        if (!known || !k->entry || numBlocks == 0 || !argsData || argsSize < sizeof(void*) ||
            argsSize % sizeof(void*) || !s.streams.count(stream)) {
            ++s.stats["bad_calls"];
            return kInvalidParam;
        }
        args.resize(argsSize / sizeof(void*));
        std::memcpy(args.data(), argsData, argsSize);
        // Every argument a kernel may dereference must be device memory (null: unused).
        for (void* a : args) {
            if (a && !isDevice(s, a)) {
                ++s.stats["bad_calls"];
                return kInvalidParam;
            }
        }
        if (!args.back()) {
            ++s.stats["bad_calls"];
            return kInvalidParam;  // the tiling
        }
        if (aclError e = injected(s, "launch")) return e;
        ++s.stats["launches"];
        s.stats["blocks"] += numBlocks;
        // Keep the tiling as the kernel receives it (the whole allocation the
        // host copied it into), for fakeAclLastTiling.
        auto it = findRange(s, args.back(), 0);  // checked above: a live allocation
        const unsigned char* t0 = static_cast<const unsigned char*>(args.back());
        s.lastTiling[k->name].assign(t0, reinterpret_cast<const unsigned char*>(it->first + it->second));
    }
    const void* tiling = args.back();
    if (std::strncmp(k->name, "spmv", 4) == 0 && !spmvComputes(static_cast<const al::SpmvTilingData*>(tiling))) {
        // FAKE_ACL_SPMV_TYPES: what the arch22 Ascend C build does with a value
        // type it lacks: block 0 sets the status word (workspace byte 0) to 2.
        int32_t unsupported = 2;
        std::memcpy(args[5], &unsupported, sizeof unsupported);
        return kSuccess;
    }
    for (uint32_t b = 0; b < numBlocks; ++b) k->entry(b, numBlocks, args.data(), tiling);
    return kSuccess;
}

// ---- test hooks ----

// Marker that discovery looks for: kernels run from this library, no binary file needed.
FAKE_API int fakeAclRunsCpuKernels() { return 1; }

// Named counters: bytes_h2d, bytes_d2h, bytes_d2d, copies_h2d, copies_d2h,
// mallocs, frees, outstanding, outstanding_bytes, launches, blocks, inits,
// inits_by_others, finalizes, set_device, resets, binary_loads,
// binary_unloads, bad_calls, injected_failures, after_finalize; and the live
// counts streams_live, binaries_live, device_refs. Unknown names: 0.
FAKE_API uint64_t fakeAclStat(const char* name) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    const std::string n = name ? name : "";
    if (n == "streams_live") return s.streams.size();
    if (n == "binaries_live") return static_cast<uint64_t>(s.binariesLoaded);
    if (n == "device_refs") return static_cast<uint64_t>(deviceRefTotal(s));
    auto it = s.stats.find(name ? name : "");
    return it == s.stats.end() ? 0 : it->second;
}

// Zero the counters (live allocations stay, and stay counted, as do inits and
// finalizes) and the call
// counts behind `op:N` failures; re-read FAKE_ACL_FAIL.
FAKE_API void fakeAclReset() {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    std::map<std::string, uint64_t> keep;  // live counts and the runtime's lifecycle
    for (const char* k : {"outstanding", "outstanding_bytes", "inits", "inits_by_others", "finalizes"})
        keep[k] = s.stats[k];
    s.stats.swap(keep);
    s.calls.clear();
    s.failParsed = false;
}

// Replace the injected failures (FAKE_ACL_FAIL syntax; "" or NULL: none) and
// restart the call counts.
FAKE_API void fakeAclSetFail(const char* spec) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    parseFail(s, spec);
    s.calls.clear();
}

// Copies up to `cap` bytes of the tiling that the last launch of kernel `name`
// received into `buf`; returns how many bytes that tiling allocation held (0:
// never launched). Shows what the host's tiling struct looked like on arrival.
FAKE_API size_t fakeAclLastTiling(const char* name, void* buf, size_t cap) {
    State& s = st();
    std::lock_guard<std::mutex> g(s.mu);
    auto it = s.lastTiling.find(name ? name : "");
    if (it == s.lastTiling.end()) return 0;
    if (buf) std::memcpy(buf, it->second.data(), std::min(cap, it->second.size()));
    return it->second.size();
}

// Kernels in the built-in "binary" (fake_kernels.def).
FAKE_API int fakeAclKernelCount() {
    int n = 0;
    for (const Kernel& k : kKernels) n += k.entry != nullptr;
    return n;
}

FAKE_API const char* fakeAclKernelName(int i) {
    for (const Kernel& k : kKernels) {
        if (!k.entry) continue;
        if (i-- == 0) return k.name;
    }
    return nullptr;
}
