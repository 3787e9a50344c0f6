// ascend_linalg host C API: handle, status codes and enums shared by every op.
//
// Numbering follows CANN ops-blas / ops-sparse (cann_ops_blas.h) so that the
// vendor operator and this library report the same numbers for the same mistake.
#ifndef ASCEND_LINALG_AL_TYPES_H
#define ASCEND_LINALG_AL_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Callers in C (or through ctypes) may pass any int where an enum is expected,
// and the host must reject it with AL_STATUS_INVALID_ENUM. In C++ an enum
// without a fixed underlying type only has the values of its enumerators' bit
// range (alSideMode_t: 0..255, alIndexType_t: 0..1), so merely loading
// 1 << 30 there is undefined behaviour (UBSan: fuzz/fuzz_csymm, fuzz_spmv).
// Compiled as C++, the enums are therefore based on int: every int is a value,
// and the size and calling convention stay those of the C enum.
#ifdef __cplusplus
#define AL_ENUM_BASE : int
#else
#define AL_ENUM_BASE
#endif

typedef enum AL_ENUM_BASE {
    AL_STATUS_SUCCESS = 0,
    AL_STATUS_NOT_INITIALIZED = 1,
    AL_STATUS_ALLOC_FAILED = 2,
    AL_STATUS_INVALID_VALUE = 3,
    AL_STATUS_MAPPING_ERROR = 4,
    AL_STATUS_EXECUTION_FAILED = 5,
    AL_STATUS_INTERNAL_ERROR = 6,
    AL_STATUS_NOT_SUPPORTED = 7,
    AL_STATUS_ARCH_MISMATCH = 8,
    AL_STATUS_HANDLE_IS_NULLPTR = 9,
    AL_STATUS_INVALID_ENUM = 10,
    AL_STATUS_UNKNOWN = 11,
} alStatus_t;

typedef enum AL_ENUM_BASE { AL_OP_N = 111, AL_OP_T = 112, AL_OP_C = 113 } alOperation_t;
typedef enum AL_ENUM_BASE { AL_FILL_UPPER = 121, AL_FILL_LOWER = 122 } alFillMode_t;
typedef enum AL_ENUM_BASE { AL_SIDE_LEFT = 141, AL_SIDE_RIGHT = 142 } alSideMode_t;

// Element types of values, vectors and compute (a subset of aclDataType's roles).
typedef enum AL_ENUM_BASE {
    AL_R_32F = 0,   // float32
    AL_R_64F = 1,   // float64
    AL_C_32F = 2,   // complex64  {float re, im}
    AL_C_64F = 3,   // complex128 {double re, im}
    AL_R_32I = 4,   // int32 (wrapping arithmetic, as numpy)
    AL_R_64I = 5,   // int64 (wrapping arithmetic, as numpy)
    AL_R_16F = 6,   // IEEE float16
    AL_R_16BF = 7,  // bfloat16
    AL_R_8I = 8,    // int8 (values only: widened to the float32/float64 compute type on the CPU device)
    AL_B_8 = 9,     // bool, one byte, nonzero true (values only, as AL_R_8I)
} alDataType_t;

typedef enum AL_ENUM_BASE { AL_INDEX_32I = 0, AL_INDEX_64I = 1 } alIndexType_t;

typedef enum AL_ENUM_BASE {
    AL_DEVICE_CPU = 0,  // this process's cores, through the CPU kernels
    AL_DEVICE_NPU = 1,  // an Ascend NPU through the ACL runtime (dlopen'ed)
} alDeviceKind_t;

typedef struct { float real, imag; } alComplex;

// An opaque library context bound to one device (the aclblasHandle_t analogue).
typedef struct alContext* alHandle_t;

// Create a handle on a device kind; `deviceId` selects among NPUs (ignored for CPU).
alStatus_t alCreate(alHandle_t* handle, alDeviceKind_t kind, int32_t deviceId);
alStatus_t alDestroy(alHandle_t handle);

// Human-readable name of a status ("AL_STATUS_INVALID_VALUE").
const char* alGetStatusName(alStatus_t status);
// Why the last call on this thread failed (validation or runtime detail); "" if none.
const char* alGetLastErrorMessage(void);

#ifdef __cplusplus
}
#endif
#endif
