// Handles, status names and the thread-local last-error message.
#include "context.h"

#include "runtime/acl_device.h"
#include "runtime/cpu_device.h"

namespace al {
alStatus_t fail(alStatus_t status, const std::string& why) {
    setLastError(why);
    return status;
}
}  // namespace al

extern "C" {

alStatus_t alCreate(alHandle_t* handle, alDeviceKind_t kind, int32_t deviceId) {
    al::clearLastError();
    if (!handle) return al::fail(AL_STATUS_HANDLE_IS_NULLPTR, "handle is NULL");
    *handle = nullptr;
    auto ctx = std::make_unique<alContext>();
    if (kind == AL_DEVICE_CPU) {
        ctx->device = &al::cpuDevice();
    } else if (kind == AL_DEVICE_NPU) {
        std::string why;
        ctx->owned = al::openAclDevice(deviceId, &why);
        if (!ctx->owned) return al::fail(AL_STATUS_NOT_INITIALIZED, why);
        ctx->device = ctx->owned.get();
    } else {
        return al::fail(AL_STATUS_INVALID_ENUM, "device kind must be AL_DEVICE_CPU or AL_DEVICE_NPU");
    }
    *handle = ctx.release();
    return AL_STATUS_SUCCESS;
}

alStatus_t alDestroy(alHandle_t handle) {
    if (!handle) return al::fail(AL_STATUS_HANDLE_IS_NULLPTR, "handle is NULL");
    delete handle;
    return AL_STATUS_SUCCESS;
}

const char* alGetStatusName(alStatus_t s) {
    switch (s) {
        case AL_STATUS_SUCCESS: return "AL_STATUS_SUCCESS";
        case AL_STATUS_NOT_INITIALIZED: return "AL_STATUS_NOT_INITIALIZED";
        case AL_STATUS_ALLOC_FAILED: return "AL_STATUS_ALLOC_FAILED";
        case AL_STATUS_INVALID_VALUE: return "AL_STATUS_INVALID_VALUE";
        case AL_STATUS_MAPPING_ERROR: return "AL_STATUS_MAPPING_ERROR";
        case AL_STATUS_EXECUTION_FAILED: return "AL_STATUS_EXECUTION_FAILED";
        case AL_STATUS_INTERNAL_ERROR: return "AL_STATUS_INTERNAL_ERROR";
        case AL_STATUS_NOT_SUPPORTED: return "AL_STATUS_NOT_SUPPORTED";
        case AL_STATUS_ARCH_MISMATCH: return "AL_STATUS_ARCH_MISMATCH";
        case AL_STATUS_HANDLE_IS_NULLPTR: return "AL_STATUS_HANDLE_IS_NULLPTR";
        case AL_STATUS_INVALID_ENUM: return "AL_STATUS_INVALID_ENUM";
        default: return "AL_STATUS_UNKNOWN";
    }
}

const char* alGetLastErrorMessage(void) { return al::lastErrorCStr(); }

}  // extern "C"
