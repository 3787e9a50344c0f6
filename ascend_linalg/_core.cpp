// ascend_linalg._core: thin binding over the host C API. Buffer views in,
// status -> exception out, the GIL released around device work. No logic beyond
// checking that every buffer covers what the host will touch.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "_core_common.h"
#include "_core_gil.h"
#include "ascend_linalg/al_blas.h"
#include "ascend_linalg/al_sparse.h"
#include "host/csymm_tiling.h"
#include "host/fingerprint.h"
#include "host/runtime/acl_device.h"
#include "host/runtime/cpu_device.h"
#include "kernels/spmv/spmv_kernel_merge.h"

namespace py = pybind11;
using alpy::HeldRefs;
using alpy::withoutGil;

void addTestHooks(py::module_& m);  // _core_hooks.cpp
void addYardsticks(py::module_& m);  // _core_yardsticks.cpp
void addSpmv(py::module_& m);  // _core_spmv.cpp
void addResults(py::module_& m);  // _core_results.cpp

// The helpers _core_spmv.cpp shares (_core_common.h).
namespace alpy {

PyObject* gHostError = nullptr;  // ascend_linalg._core.HostError (RuntimeError)

[[noreturn]] void raiseStatus(const char* fn, alStatus_t st) {
    std::string msg = std::string(fn) + ": " + alGetStatusName(st) + ": " + alGetLastErrorMessage();
    switch (st) {
        case AL_STATUS_INVALID_VALUE:
        case AL_STATUS_INVALID_ENUM:
            throw py::value_error(msg);
        case AL_STATUS_ALLOC_FAILED:
            // MemoryError, as for a host allocation, but with the device's
            // reason (the ACL call and its code) instead of an empty message.
            PyErr_SetString(PyExc_MemoryError, msg.c_str());
            throw py::error_already_set();
        default: {
            py::object err = py::reinterpret_borrow<py::object>(gHostError)(msg, static_cast<int>(st));
            PyErr_SetObject(gHostError, err.ptr());
            throw py::error_already_set();
        }
    }
}

alHandle_t handleFor(const std::string& device) {
    static std::mutex mu;
    static alHandle_t cpu = nullptr, npu = nullptr;
    std::lock_guard<std::mutex> g(mu);
    if (device == "cpu") {
        if (!cpu) {
            alStatus_t st = alCreate(&cpu, AL_DEVICE_CPU, 0);
            if (st != AL_STATUS_SUCCESS) raiseStatus("alCreate", st);
        }
        return cpu;
    }
    if (device == "npu") {
        if (!npu) {
            alStatus_t st = alCreate(&npu, AL_DEVICE_NPU, 0);
            if (st != AL_STATUS_SUCCESS) raiseStatus("alCreate", st);
        }
        return npu;
    }
    throw py::value_error("device must be 'cpu' or 'npu', got '" + device + "'");
}

PyTypeObject* gNdarray = nullptr;  // numpy.ndarray, set when the module loads
bool exactArray(py::handle h) { return Py_TYPE(h.ptr()) == gNdarray; }

py::array ndarray(py::handle h, const char* name) {
    if (!py::isinstance<py::array>(h)) throw py::type_error(std::string(name) + " must be a numpy.ndarray");
    return py::reinterpret_borrow<py::array>(h);
}

}  // namespace alpy
using alpy::exactArray;
using alpy::gHostError;
using alpy::gNdarray;
using alpy::handleFor;
using alpy::ndarray;
using alpy::raiseStatus;

namespace {

// A column-major complex64 view: element (i, j) at data + i + j*ld.
struct ColMajor {
    alComplex* data = nullptr;
    int64_t rows = 0, cols = 0, ld = 1;
};

ColMajor colMajorView(py::handle obj, const char* name, bool writable) {
    ColMajor v;
    if (obj.is_none()) return v;
    auto arr = py::reinterpret_borrow<py::array>(obj);
    if (!py::isinstance<py::array_t<std::complex<float>>>(obj) || arr.ndim() != 2)
        throw py::type_error(std::string(name) + " must be a 2-D complex64 ndarray");
    if (writable && !arr.writeable()) throw py::value_error(std::string(name) + " is read-only");
    const py::ssize_t item = 8;
    v.rows = arr.shape(0);
    v.cols = arr.shape(1);
    // A stride along an axis of length <= 1 is never used (numpy gives empty
    // and length-1 axes arbitrary strides), so only the others are checked.
    if (v.rows > 1 && v.cols > 0 && arr.strides(0) != item)
        throw py::value_error(std::string(name) + " must have unit row stride (Fortran layout)");
    if (v.cols > 1 && v.rows > 0 && (arr.strides(1) % item != 0 || arr.strides(1) < 0))
        throw py::value_error(std::string(name) + " column stride must be a non-negative multiple of 8 bytes");
    v.ld = (v.cols > 1 && v.rows > 0) ? arr.strides(1) / item : std::max<int64_t>(v.rows, 1);
    if (v.ld < v.rows) throw py::value_error(std::string(name) + " columns overlap (stride < rows)");
    v.data = static_cast<alComplex*>(writable ? arr.mutable_data() : const_cast<void*>(arr.data()));
    return v;
}

// csymm on views: C (m x n) := alpha*sym(A)*B + beta*C or alpha*B*sym(A) + beta*C.
// b_row_major: `b` is B^T (n x m, column-major), i.e. B stored row-major
// (alCsymmRowMajorB), as a C-ordered B's transpose is.
void csymm(const std::string& device, int side, int lower, std::complex<float> alpha,
           py::handle a, py::handle b, std::complex<float> beta, py::handle c, bool bRowMajor) {
    ColMajor A = colMajorView(a, "a", false), B = colMajorView(b, "b", false),
             C = colMajorView(c, "c", true);
    const int64_t m = C.rows, n = C.cols, k = side ? n : m;
    if (bRowMajor ? (B.rows != n || B.cols != m) : (B.rows != m || B.cols != n))
        throw py::value_error(bRowMajor ? "b must be n x m (B transposed) with b_row_major" : "b must be m x n like c");
    if (A.rows < k || A.cols < k) throw py::value_error("a must be at least k x k");
    alComplex al{alpha.real(), alpha.imag()}, be{beta.real(), beta.imag()};
    alHandle_t h = handleFor(device);
    alStatus_t st = AL_STATUS_INTERNAL_ERROR;
    withoutGil([&] {
        st = (bRowMajor ? alCsymmRowMajorB : alCsymm)(h, side ? AL_SIDE_RIGHT : AL_SIDE_LEFT,
                                                      lower ? AL_FILL_LOWER : AL_FILL_UPPER, m, n, &al,
                                                      A.data, A.ld, B.data, B.ld, &be, C.data, C.ld);
    });
    if (st != AL_STATUS_SUCCESS) raiseStatus("alCsymm", st);
}

// blas.csymm's common call, decided and run in one binding: complex64
// Fortran-contiguous ndarrays a and b, c None or a 2-D complex64 ndarray, plain
// int flags (side and lower 0 or 1), alpha and beta Python int/float/complex.
// Returns the result array, or None for anything else (including every
// argument error), which the caller then takes through its general path: the
// same results and errors as that path, without its Python checks, which cost
// more than a small product (ascend_linalg/linalg/_csymm.py).
bool fastScalar(py::handle h, std::complex<float>* out, bool* zero = nullptr) {
    if (!PyLong_CheckExact(h.ptr()) && !PyFloat_CheckExact(h.ptr()) && !PyComplex_CheckExact(h.ptr())) return false;
    const Py_complex v = PyComplex_AsCComplex(h.ptr());  // complex(value), as the Python path
    if (v.real == -1.0 && PyErr_Occurred()) {  // an int too large for a double: the Python path raises
        PyErr_Clear();
        return false;
    }
    *out = std::complex<float>(static_cast<float>(v.real), static_cast<float>(v.imag));
    if (zero) *zero = v.real == 0 && v.imag == 0;
    return true;
}
bool fastFlag(py::handle h, long* out) {
    if (!PyLong_CheckExact(h.ptr())) return false;
    int overflow = 0;
    *out = PyLong_AsLongAndOverflow(h.ptr(), &overflow);
    return !overflow && !(*out == -1 && PyErr_Occurred());
}
// [lowest, highest] byte an array view may touch, for the overlap test
// (np.may_share_memory's bounds test).
std::pair<uintptr_t, uintptr_t> byteBounds(const py::array& arr) {
    uintptr_t lo = reinterpret_cast<uintptr_t>(arr.data()), hi = lo;
    for (py::ssize_t d = 0; d < arr.ndim(); ++d) {
        if (arr.shape(d) == 0) return {1, 0};  // empty: touches nothing
        const py::ssize_t span = (arr.shape(d) - 1) * arr.strides(d);
        if (span < 0) lo -= static_cast<uintptr_t>(-span);
        else hi += static_cast<uintptr_t>(span);
    }
    return {lo, hi + static_cast<uintptr_t>(arr.itemsize()) - 1};
}
bool overlaps(const py::array& x, const py::array& y) {
    auto bx = byteBounds(x), by = byteBounds(y);
    return bx.first <= bx.second && by.first <= by.second && bx.first <= by.second && by.first <= bx.second;
}

py::object csymmFast(const std::string& device, py::handle alpha, py::handle a, py::handle b, py::handle beta,
                     py::handle c, py::handle side, py::handle lower, py::handle overwriteC) {
    using C64 = py::array_t<std::complex<float>>;
    long sd, lw;
    std::complex<float> al, be;
    bool betaZero = false;
    if (!exactArray(a) || !exactArray(b) || !(c.is_none() || exactArray(c)) || !fastFlag(side, &sd) ||
        !fastFlag(lower, &lw) || !PyLong_CheckExact(overwriteC.ptr()) || (sd != 0 && sd != 1) ||
        (lw != 0 && lw != 1) || !py::isinstance<C64>(a) || !py::isinstance<C64>(b) || !fastScalar(alpha, &al) ||
        !fastScalar(beta, &be, &betaZero))
        return py::none();
    // No frame may own a Python reference while the GIL is released (see
    // retakeGil): the array objects below live in this block only, and the
    // result is held as a raw reference across the launch.
    int64_t m, n;
    py::object out;
    {
        auto A = py::reinterpret_borrow<py::array>(a), B = py::reinterpret_borrow<py::array>(b);
        if (A.ndim() != 2 || B.ndim() != 2 || !(A.flags() & py::array::f_style) || !(B.flags() & py::array::f_style))
            return py::none();
        // (m, n) as scipy derives them; a mismatch or a non-square a: the general path
        m = sd ? B.shape(0) : A.shape(0);
        n = sd ? A.shape(1) : B.shape(1);
        if ((sd ? B.shape(1) : A.shape(1)) != (sd ? A.shape(0) : B.shape(0)) || A.shape(0) != A.shape(1))
            return py::none();
        if (c.is_none()) {
            out = py::array_t<std::complex<float>, py::array::f_style>({m, n});  // np.empty / np.zeros
            if (!betaZero && m * n > 0)
                std::memset(py::reinterpret_borrow<py::array>(out).mutable_data(), 0, size_t(m * n) * 8);
        } else {
            auto Cin = py::reinterpret_borrow<py::array>(c);
            if (Cin.ndim() != 2 || Cin.size() == 0 || !py::isinstance<C64>(c) || Cin.shape(0) != m ||
                Cin.shape(1) != n)
                return py::none();
            const int writeable = py::detail::npy_api::NPY_ARRAY_WRITEABLE_, aligned = 0x0100;  // NPY_ARRAY_ALIGNED
            // overwrite_c counts by its truth, as in the Python path (an exact int: no __bool__ to call)
            const int want = py::array::f_style | writeable | aligned;
            if (PyObject_IsTrue(overwriteC.ptr()) == 1 && (Cin.flags() & want) == want) {
                if (overlaps(Cin, A) || overlaps(Cin, B)) return py::none();  // operands read from copies there
                out = py::reinterpret_borrow<py::object>(c);
            } else {  // a Fortran-ordered copy, whatever c's strides
                py::array_t<std::complex<float>, py::array::f_style> copy({m, n});
                auto* dst = reinterpret_cast<char*>(copy.mutable_data());
                const auto* src = static_cast<const char*>(Cin.data());
                const py::ssize_t s0 = Cin.strides(0), s1 = Cin.strides(1);
                for (int64_t j = 0; j < n; ++j)
                    for (int64_t i = 0; i < m; ++i) std::memcpy(dst + (i + j * m) * 8, src + i * s0 + j * s1, 8);
                out = std::move(copy);
            }
        }
    }
    ColMajor Av = colMajorView(a, "a", false), Bv = colMajorView(b, "b", false),
             Cv = colMajorView(out, "c", true);
    alHandle_t h = handleFor(device);
    const alComplex alc{al.real(), al.imag()}, bec{be.real(), be.imag()};
    // Owned across the GIL release as a raw reference (see retakeGil): a
    // forced unwind leaks it, a normal return hands it back.
    PyObject* raw = out.release().ptr();
    alStatus_t st = AL_STATUS_INTERNAL_ERROR;
    withoutGil([&] {
        st = alCsymm(h, sd ? AL_SIDE_RIGHT : AL_SIDE_LEFT, lw ? AL_FILL_LOWER : AL_FILL_UPPER, m, n, &alc, Av.data,
                     Av.ld, Bv.data, Bv.ld, &bec, Cv.data, Cv.ld);
    });
    py::object result = py::reinterpret_steal<py::object>(raw);
    if (st != AL_STATUS_SUCCESS) raiseStatus("alCsymm", st);
    return result;
}

// The host C API with raw arguments, for the status-order tests. Buffers must
// cover what valid arguments would touch (checked here), None means NULL.
// Buffers are used in place, never converted: a converted copy would be freed
// on return, before the host reads it, and numpy may release the GIL while
// casting one (see retakeGil); so the arguments are borrowed handles too.
int csymmRaw(bool nullHandle, int side, int uplo, int64_t m, int64_t n, py::handle alpha, py::handle a,
             int64_t lda, py::handle b, int64_t ldb, py::handle beta, py::handle c, int64_t ldc, bool rowMajorB) {
    auto ptr = [](py::handle o, int64_t need, const char* name) -> alComplex* {
        if (o.is_none()) return nullptr;
        if (!py::array_t<std::complex<float>, py::array::c_style>::check_(o))
            throw py::type_error(std::string(name) + " must be a C-contiguous complex64 ndarray");
        auto arr = py::reinterpret_borrow<py::array>(o);
        if (need > 0 && arr.size() < need) throw py::value_error(std::string(name) + " buffer too small");
        return reinterpret_cast<alComplex*>(arr.mutable_data());
    };
    const int64_t k = side == AL_SIDE_RIGHT ? n : m;
    auto extent = [&](int64_t rows, int64_t cols, int64_t ld) -> int64_t {
        return (m > 0 && n > 0 && ld >= rows && rows > 0) ? ld * (cols - 1) + rows : 0;
    };
    alComplex* A = ptr(a, extent(k, k, lda), "a");
    alComplex* B = ptr(b, rowMajorB ? extent(n, m, ldb) : extent(m, n, ldb), "b");
    alComplex* C = ptr(c, extent(m, n, ldc), "c");
    alComplex al{}, be{};
    if (!alpha.is_none()) { auto z = alpha.cast<std::complex<float>>(); al = {z.real(), z.imag()}; }
    if (!beta.is_none()) { auto z = beta.cast<std::complex<float>>(); be = {z.real(), z.imag()}; }
    alHandle_t h = nullHandle ? nullptr : handleFor("cpu");
    return (rowMajorB ? alCsymmRowMajorB : alCsymm)(h, static_cast<alSideMode_t>(side),
                                                    static_cast<alFillMode_t>(uplo), m, n,
                                                    alpha.is_none() ? nullptr : &al, A, lda, B, ldb,
                                                    beta.is_none() ? nullptr : &be, C, ldc);
}

py::dict aclInfo() {
    const al::AclDiscovery& d = al::discoverAcl();
    py::dict out;
    out["usable"] = d.usable;
    out["library"] = d.libraryPath;
    out["searched"] = d.searched;
    out["device_count"] = d.deviceCount;
    out["soc"] = d.socName;
    out["reason"] = d.reason;
    return out;
}

py::dict tilingDict(const al::CsymmTilingData& t) {
    py::dict d;
#define F(x) d[#x] = t.x;
    F(m) F(n) F(k) F(lda) F(ldb) F(ldc) F(side) F(uplo) F(alphaBetaMode) F(blockM) F(blockN) F(blockK)
    F(tilesM) F(tilesN) F(tailM) F(tailN) F(tailK) F(usedCoreNum) F(workspaceSize)
#undef F
    return d;
}

py::dict csymmTilingPy(int side, int uplo, int64_t m, int64_t n, std::complex<float> alpha,
                       std::complex<float> beta, const std::string& platform, uint32_t threads, uint32_t cores) {
    al::CsymmPlatform p = platform == "ascend950" ? al::csymmPlatformAscend(cores) : al::csymmPlatformCpu(threads);
    auto t = al::csymmTiling(side, uplo, m, n, std::max<int64_t>(1, side == AL_SIDE_LEFT ? m : n),
                             std::max<int64_t>(1, m), std::max<int64_t>(1, m), alpha.real(), alpha.imag(),
                             beta.real(), beta.imag(), p);
    py::dict d = tilingDict(t);
    py::dict pd;
    pd["coreNum"] = p.coreNum; pd["l0aBytes"] = p.l0aBytes; pd["l0bBytes"] = p.l0bBytes;
    pd["l0cBytes"] = p.l0cBytes; pd["l1Bytes"] = p.l1Bytes; pd["ubBytes"] = p.ubBytes;
    pd["alignM"] = p.alignM; pd["alignN"] = p.alignN; pd["alignK"] = p.alignK;
    d["platform"] = pd;
    return d;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "ascend_linalg host layer binding";
    static py::exception<std::runtime_error> hostError(m, "HostError", PyExc_RuntimeError);
    gHostError = hostError.ptr();
    // a function-local static would import under its init guard: a second
    // thread holding the GIL and waiting on that guard would deadlock
    {
        py::object type = py::module_::import("numpy").attr("ndarray");
        gNdarray = reinterpret_cast<PyTypeObject*>(type.release().ptr());  // kept for the process
    }
    m.def("csymm", &csymm, py::arg("device"), py::arg("side"), py::arg("lower"), py::arg("alpha"),
          py::arg("a"), py::arg("b"), py::arg("beta"), py::arg("c"), py::arg("b_row_major") = false);
    m.def("csymm_fast", &csymmFast, py::arg("device"), py::arg("alpha"), py::arg("a"), py::arg("b"),
          py::arg("beta"), py::arg("c"), py::arg("side"), py::arg("lower"), py::arg("overwrite_c"),
          "blas.csymm's common call in one step; None where the general path must decide");
    m.def("csymm_raw", &csymmRaw, py::arg("null_handle"), py::arg("side"), py::arg("uplo"), py::arg("m"),
          py::arg("n"), py::arg("alpha"), py::arg("a"), py::arg("lda"), py::arg("b"), py::arg("ldb"),
          py::arg("beta"), py::arg("c"), py::arg("ldc"), py::arg("row_major_b") = false);
    m.def("last_error", [] { return std::string(alGetLastErrorMessage()); },
          "Why the last host call on this thread failed");
    m.def(
        "fingerprint",
        [](py::handle arrays) {
            // The arrays are owned (held) while the GIL is released: the
            // sequence could lose them meanwhile.
            HeldRefs held;
            std::vector<const void*> data;
            std::vector<size_t> bytes;
            {  // owning views only in here: gone before the GIL is released
                if (!py::isinstance<py::sequence>(arrays) || py::isinstance<py::str>(arrays) ||
                    py::isinstance<py::bytes>(arrays))
                    throw py::type_error("fingerprint: arrays must be a sequence of numpy arrays");
                auto seq = py::reinterpret_borrow<py::sequence>(arrays);
                for (size_t i = 0, n = seq.size(); i < n; ++i) {
                    py::array arr = ndarray(seq[i], "fingerprint: each array");
                    if (!(arr.flags() & py::array::c_style))
                        throw py::value_error("fingerprint: arrays must be contiguous");
                    held.hold(arr);
                    data.push_back(arr.data());
                    bytes.push_back(static_cast<size_t>(arr.nbytes()));
                }
            }
            uint64_t fp = 0;
            withoutGil([&] { fp = al::fingerprint(data.data(), bytes.data(), static_cast<int>(data.size())); },
                       &held);
            return fp;
        },
        py::arg("arrays"), "The 64-bit fingerprint residency checks (host/fingerprint.h) of contiguous arrays");
    m.def("acl_info", &aclInfo);
    m.def("csymm_tiling", &csymmTilingPy, py::arg("side"), py::arg("uplo"), py::arg("m"), py::arg("n"),
          py::arg("alpha") = std::complex<float>(1), py::arg("beta") = std::complex<float>(0),
          py::arg("platform") = "cpu", py::arg("threads") = 2, py::arg("cores") = 0);
    m.def("ascendc_kernel_computes", &al::ascendcKernelComputes, py::arg("arch"), py::arg("kernel"),
          py::arg("value_type"),
          "Whether the project's Ascend C build of `kernel` for SoC family `arch` computes alDataType_t "
          "`value_type` (asked before staging on a device running real kernel binaries)");
    m.def("cpu_num_threads", &al::cpuNumThreads);
    m.def("cpu_set_num_threads", [](uint32_t n) {
        if (n < 1) throw py::value_error("number of threads must be >= 1");
        al::cpuSetNumThreads(n);
    });
    m.def("cpu_shutdown", [] { withoutGil([] { al::cpuShutdown(); }); });
    m.def("cpu_isa", &al::cpuIsa);
    addResults(m);
    addYardsticks(m);
    addSpmv(m);
    addTestHooks(m);
    m.def(
        "npu_shutdown",
        [](double timeout) {
            al::AclShutdownReport r;
            withoutGil([&] { r = al::aclShutdown(timeout); });  // running calls may need the GIL to finish
            py::dict d;
            d["finalized"] = r.finalized;
            d["freed"] = r.freed;
            d["resets"] = r.resets;
            d["note"] = r.note;
            d["errors"] = r.errors;
            return d;
        },
        py::arg("timeout") = 5.0,
        "Release the Ascend runtime (interpreter exit): device memory, binary, stream, "
        "aclrtResetDevice per aclrtSetDevice, aclFinalize if our aclInit initialised ACL");
    m.attr("STATUS") = py::dict(py::arg("SUCCESS") = 0, py::arg("NOT_INITIALIZED") = 1,
                                py::arg("ALLOC_FAILED") = 2, py::arg("INVALID_VALUE") = 3,
                                py::arg("MAPPING_ERROR") = 4, py::arg("EXECUTION_FAILED") = 5,
                                py::arg("INTERNAL_ERROR") = 6, py::arg("NOT_SUPPORTED") = 7,
                                py::arg("ARCH_MISMATCH") = 8, py::arg("HANDLE_IS_NULLPTR") = 9,
                                py::arg("INVALID_ENUM") = 10);
#ifdef ASCEND_LINALG_VERSION
    m.attr("__version__") = ASCEND_LINALG_VERSION;
#endif
}
