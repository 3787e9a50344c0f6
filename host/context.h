// What an alHandle_t points to, and the helpers every op's host file shares.
#ifndef ASCEND_LINALG_CONTEXT_H
#define ASCEND_LINALG_CONTEXT_H

#include <memory>
#include <string>

#include "ascend_linalg/al_types.h"
#include "runtime/device.h"

struct alContext {
    al::Device* device = nullptr;             // not owned for the CPU singleton
    std::unique_ptr<al::Device> owned;        // an NPU device this handle opened
};

namespace al {

// Record why a call failed (alGetLastErrorMessage) and return the status.
alStatus_t fail(alStatus_t status, const std::string& why);

// Device memory that frees itself; empty for size 0.
class DeviceBuffer {
public:
    DeviceBuffer(Device& d) : dev_(d) {}
    ~DeviceBuffer() {
        if (ptr_) dev_.free(ptr_);
    }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    alStatus_t allocate(size_t bytes) {
        if (bytes == 0) return AL_STATUS_SUCCESS;
        return dev_.malloc(&ptr_, bytes);
    }
    void* get() const { return ptr_; }

private:
    Device& dev_;
    void* ptr_ = nullptr;
};

}  // namespace al

#endif
