// The slice of the ACL runtime's ABI this project relies on (acl/acl_base.h,
// acl_rt.h): handle types, return codes, memcpy kinds, malloc policy. Shared by
// AclDevice, which calls libascendcl.so, and by the fake runtime, which
// implements it, so the two cannot disagree on a number.
#ifndef ASCEND_LINALG_RUNTIME_ACL_ABI_H
#define ASCEND_LINALG_RUNTIME_ACL_ABI_H

namespace al {
namespace acl {

using Error = int;          // aclError
using Stream = void*;       // aclrtStream
using BinHandle = void*;    // aclrtBinHandle
using FuncHandle = void*;   // aclrtFuncHandle

constexpr Error kSuccess = 0;
constexpr Error kInvalidParam = 100000;
constexpr Error kUninitialize = 100001;
constexpr Error kRepeatInitialize = 100002;  // aclInit twice: counts as success
constexpr Error kInvalidDevice = 107001;
constexpr Error kMemoryAllocation = 207001;
constexpr Error kDriverInternal = 507899;

// aclrtMemcpyKind
constexpr int kMemcpyHostToHost = 0;
constexpr int kMemcpyHostToDevice = 1;
constexpr int kMemcpyDeviceToHost = 2;
constexpr int kMemcpyDeviceToDevice = 3;

constexpr int kMallocHugeFirst = 0;  // aclrtMemMallocPolicy ACL_MEM_MALLOC_HUGE_FIRST

}  // namespace acl
}  // namespace al

#endif
