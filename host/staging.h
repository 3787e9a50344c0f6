// Staging: the operands of one call on a device with its own memory (the NPU).
// Inputs are uploaded before the launch; outputs are copied back by commit(),
// which the host calls only after every launch succeeded, so a failure leaves
// the caller's output untouched. Device memory is freed on every path.
#ifndef ASCEND_LINALG_STAGING_H
#define ASCEND_LINALG_STAGING_H

#include <memory>
#include <vector>

#include "context.h"

namespace al {

class Staging {
public:
    explicit Staging(Device& d) : dev_(d) {}

    // *devPtr := a device buffer of `bytes` (nullptr when 0), holding a copy of
    // host [host, host + bytes) when `upload`. With `output`, commit() copies
    // it back to `host`.
    alStatus_t stage(const void* host, size_t bytes, bool upload, bool output, void** devPtr) {
        *devPtr = nullptr;
        if (bytes == 0) return AL_STATUS_SUCCESS;
        bufs_.push_back(std::make_unique<DeviceBuffer>(dev_));
        alStatus_t st = bufs_.back()->allocate(bytes);
        if (st != AL_STATUS_SUCCESS) return st;
        void* d = bufs_.back()->get();
        if (upload && (st = dev_.copyToDevice(d, host, bytes)) != AL_STATUS_SUCCESS) return st;
        if (output) back_.push_back({const_cast<void*>(host), d, bytes});
        *devPtr = d;
        return AL_STATUS_SUCCESS;
    }

    // Copies every output back to the host.
    alStatus_t commit() {
        for (const Back& b : back_) {
            alStatus_t st = dev_.copyToHost(b.host, b.dev, b.bytes);
            if (st != AL_STATUS_SUCCESS) return st;
        }
        return AL_STATUS_SUCCESS;
    }

    // Bytes spanned by `cols` columns of `rows` elements, `ld` apart (0 if empty).
    static size_t extent(int64_t rows, int64_t cols, int64_t ld, size_t elem) {
        if (rows <= 0 || cols <= 0) return 0;
        return static_cast<size_t>((cols - 1) * ld + rows) * elem;
    }
    // Bytes spanned by a strided len x nvec block (0 if empty).
    static size_t extent2(int64_t len, int64_t nvec, int64_t rowStride, int64_t colStride, size_t elem) {
        if (len <= 0 || nvec <= 0) return 0;
        return static_cast<size_t>((len - 1) * rowStride + (nvec - 1) * colStride + 1) * elem;
    }

private:
    struct Back {
        void* host;
        const void* dev;
        size_t bytes;
    };
    Device& dev_;
    std::vector<std::unique_ptr<DeviceBuffer>> bufs_;
    std::vector<Back> back_;
};

}  // namespace al

#endif
