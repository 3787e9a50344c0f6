// The _core module's SpMV bindings: ascend_linalg.sparse's products
// (spmv, spmv_fast), the device-resident CSR copy (CsrResidency) and the
// float16 widening. Buffer views in, status -> exception out, the GIL
// released around device work.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "_core_common.h"
#include "_core_gil.h"
#include "ascend_linalg/al_sparse.h"
#include "host/spmv_internal.h"
#include "kernels/spmv/spmv_kernel_merge.h"

namespace py = pybind11;
using alpy::exactArray;
using alpy::handleFor;
using alpy::ndarray;
using alpy::raiseStatus;
using alpy::withoutGil;

namespace {

alDataType_t dataType(const py::dtype& dt) {
    switch (dt.num()) {
        case py::detail::npy_api::NPY_FLOAT_: return AL_R_32F;
        case py::detail::npy_api::NPY_DOUBLE_: return AL_R_64F;
        case py::detail::npy_api::NPY_CFLOAT_: return AL_C_32F;
        case py::detail::npy_api::NPY_CDOUBLE_: return AL_C_64F;
        default: break;
    }
    if (dt.kind() == 'i' && dt.itemsize() == 4) return AL_R_32I;
    if (dt.kind() == 'i' && dt.itemsize() == 8) return AL_R_64I;
    // 16-bit values (float32 compute): numpy's float16, ml_dtypes' bfloat16 (by name)
    if (dt.kind() == 'f' && dt.itemsize() == 2) return AL_R_16F;
    if (dt.itemsize() == 2 && std::string(py::str(dt)) == "bfloat16") return AL_R_16BF;
    throw py::type_error("no SpMV kernel for dtype " + std::string(py::str(dt)));
}

// The type data's values are stored in: a kernel dtype, float16/bfloat16, or
// int8 or bool (widened to the compute type as read, spmvWidenedValues).
alDataType_t storedType(const py::dtype& dt) {
    if (dt.kind() == 'b' && dt.itemsize() == 1) return AL_B_8;
    if (dt.kind() == 'i' && dt.itemsize() == 1) return AL_R_8I;
    return dataType(dt);
}

// numpy's flags.aligned: the kernels read an array through typed pointers,
// which must be aligned (one made with np.frombuffer(..., offset=1) is not).
bool aligned(const py::array& arr) { return (arr.flags() & 0x0100) != 0; }  // NPY_ARRAY_ALIGNED

// A 1-D or 2-D dense operand as (len, nvec, strides in elements).
alDnMatDescr denseView(py::array arr, const char* name, bool writable) {
    if (arr.ndim() != 1 && arr.ndim() != 2) throw py::value_error(std::string(name) + " must be 1-D or 2-D");
    if (writable && !arr.writeable()) throw py::value_error(std::string(name) + " is read-only");
    if (!aligned(arr)) throw py::value_error(std::string(name) + " must be aligned");
    const py::ssize_t item = arr.itemsize();
    alDnMatDescr d{};
    d.type = dataType(arr.dtype());
    d.len = arr.shape(0);
    d.nvec = arr.ndim() == 2 ? arr.shape(1) : 1;
    py::ssize_t rs = arr.strides(0), cs = arr.ndim() == 2 ? arr.strides(1) : 0;
    if (rs < 0 || cs < 0 || rs % item || cs % item)
        throw py::value_error(std::string(name) + " strides must be non-negative multiples of the item size");
    d.rowStride = rs / item;
    d.colStride = cs / item;
    d.data = writable ? arr.mutable_data() : const_cast<void*>(arr.data());
    return d;
}

// A device-resident CSR copy (alCsrResident_t), freed with the Python object.
class CsrResidency {
public:
    CsrResidency() {
        if (alCsrResidentCreate(&r_) != AL_STATUS_SUCCESS) throw std::bad_alloc();
    }
    ~CsrResidency() { alCsrResidentDestroy(r_); }
    CsrResidency(const CsrResidency&) = delete;
    CsrResidency& operator=(const CsrResidency&) = delete;
    alCsrResident_t get() const { return r_; }
    alCsrResidentInfo info() const {
        alCsrResidentInfo i{};
        alCsrResidentGetInfo(r_, &i);
        return i;
    }

private:
    alCsrResident_t r_ = nullptr;
};

// An spmv call's arguments as the host API takes them: raw pointers into the
// caller's arrays, no Python reference.
struct SpmvArgs {
    alCsrDescr A{};
    alDnMatDescr X{}, Y{};
    const void* alpha = nullptr;
    const void* beta = nullptr;
    alDataType_t compute = AL_R_32F;  // the values' type, float32 for 16-bit values
    CsrResidency* res = nullptr;
};

SpmvArgs spmvArgs(bool trans, py::array alpha, py::array indptr, py::array indices, py::array data, int64_t rows,
                  int64_t cols, py::array x, py::array beta, py::array y, py::handle resident) {
    SpmvArgs s;
    if (!resident.is_none()) {
        if (!py::isinstance<CsrResidency>(resident)) throw py::type_error("resident must be a CsrResidency or None");
        s.res = resident.cast<CsrResidency*>();
    }
    if (indptr.ndim() != 1 || indices.ndim() != 1 || data.ndim() != 1)
        throw py::value_error("indptr, indices and data must be 1-D");
    if (!indptr.dtype().is(indices.dtype())) throw py::value_error("indptr and indices must share one dtype");
    if (!(indptr.flags() & py::array::c_style) || !(indices.flags() & py::array::c_style) ||
        !(data.flags() & py::array::c_style))
        throw py::value_error("indptr, indices and data must be contiguous");
    if (!aligned(indptr) || !aligned(indices) || !aligned(data))
        throw py::value_error("indptr, indices and data must be aligned");
    alIndexType_t it;
    if (indptr.dtype().kind() == 'i' && indptr.itemsize() == 4) it = AL_INDEX_32I;
    else if (indptr.dtype().kind() == 'i' && indptr.itemsize() == 8) it = AL_INDEX_64I;
    else throw py::value_error("index arrays must be int32 or int64");
    if (rows < 0 || cols < 0) throw py::value_error("shape must be non-negative");
    if (indptr.shape(0) != rows + 1)
        throw py::value_error("indptr has length " + std::to_string(indptr.shape(0)) + ", expected rows + 1 = " +
                              std::to_string(rows + 1));
    s.A = alCsrDescr{rows, cols, std::min<int64_t>(indices.shape(0), data.shape(0)), indptr.data(), indices.data(),
                     data.data(), it, storedType(data.dtype())};
    s.X = denseView(x, "x", false);
    // The compute type: x's where the values may be widened to it (int8 or
    // bool values under float32/float64, float32/int32/int64 under float64:
    // int32 indices only), float32 for float16/bfloat16 values, else the values'.
    if (s.A.valueType != s.X.type && al::spmvWidenedValues(s.A.valueType, s.X.type, it)) s.compute = s.X.type;
    else if (s.A.valueType == AL_R_8I || s.A.valueType == AL_B_8)
        throw py::type_error("no SpMV kernel for dtype " + std::string(py::str(data.dtype())) + " with x of dtype " +
                             std::string(py::str(x.dtype())) + " and " + (it == AL_INDEX_32I ? "int32" : "int64") +
                             " indices");
    else s.compute = s.A.valueType == AL_R_16F || s.A.valueType == AL_R_16BF ? AL_R_32F : s.A.valueType;
    s.Y = denseView(y, "y", true);
    const int64_t yLen = trans ? cols : rows, xLen = trans ? rows : cols;
    if (s.X.len != xLen || s.Y.len != yLen || s.X.nvec != s.Y.nvec) throw py::value_error("dimension mismatch");
    auto scalar = [&](py::array v, const char* name) {
        if (v.size() != 1 || !aligned(v) || dataType(v.dtype()) != s.compute)
            throw py::value_error(std::string(name) + " must be one aligned value of the compute dtype");
        return v.data();
    };
    s.alpha = scalar(alpha, "alpha");
    s.beta = scalar(beta, "beta");
    return s;
}


// The arrays are taken as handles, borrowed from the caller for the call, so
// that no frame owns a reference while the GIL is released (retakeGil); the
// owning views spmvArgs works on are gone before that.
void spmv(const std::string& device, bool trans, py::handle alpha, py::handle indptr, py::handle indices,
          py::handle data, int64_t rows, int64_t cols, py::handle x, py::handle beta, py::handle y,
          py::handle resident, bool verify) {
    SpmvArgs s = spmvArgs(trans, ndarray(alpha, "alpha"), ndarray(indptr, "indptr"), ndarray(indices, "indices"),
                          ndarray(data, "data"), rows, cols, ndarray(x, "x"), ndarray(beta, "beta"),
                          ndarray(y, "y"), resident);
    alHandle_t h = handleFor(device);
    const alOperation_t op = trans ? AL_OP_T : AL_OP_N;
    alStatus_t st = AL_STATUS_INTERNAL_ERROR;
    withoutGil([&] {
        st = s.res ? alSpmvResident(h, op, s.alpha, &s.A, s.res->get(), verify, &s.X, s.beta, &s.Y, s.compute)
                   : alSpmv(h, op, s.alpha, &s.A, &s.X, s.beta, &s.Y, s.compute);
    });
    if (st != AL_STATUS_SUCCESS) raiseStatus("alSpmv", st);
}

// A @ x's common CPU call (ascend_linalg/sparse/_matvec.py), and spmv()'s
// (ascend_linalg/sparse/_spmv.py), decided and run in one binding: exact
// ndarrays, 1-D; data and x of one kernel dtype (float32/64, complex64/128,
// int32/64), native and aligned; indices and indptr both int32 or both
// int64; all C-contiguous; indptr of rows + 1 and x of the operand's length;
// for spmv() also alpha and beta (None: 1 and 0) and y (None: a new one).
// Returns y = alpha*op(A) @ x + beta*y, or None for anything else, which the
// caller then takes through its general path (the same results and errors,
// without its Python steps: about 3 us a call for A @ x, 20 for spmv(),
// against a 62k-nonzero product's 45).
template <class T>
bool vectorOf(py::handle h) {
    return py::isinstance<py::array_t<T, py::array::c_style>>(h) && aligned(py::reinterpret_borrow<py::array>(h)) &&
           py::reinterpret_borrow<py::array>(h).ndim() == 1;
}

// Python number h (exactly a float, int or complex) as T, where spmv()'s
// dtype rule (np.result_type of T's dtype and np.min_scalar_type(h)) keeps
// T; false otherwise (the general path then decides). float32/complex64:
// numpy's min_scalar_type gives float16/float32 for a float below 3.4e38 in
// magnitude or not finite, (u)int8/16 for an int in [-32768, 65535]; this
// takes a little less (3e38). float64/complex128: any float, an int of
// int64. Python complex: complex128 only. Integer dtypes: never.
template <class T> struct ScalarRule;
template <> struct ScalarRule<double> { static constexpr bool wide = true, cplx = false; };
template <> struct ScalarRule<float> { static constexpr bool wide = false, cplx = false; };
template <> struct ScalarRule<std::complex<double>> { static constexpr bool wide = true, cplx = true; };
template <> struct ScalarRule<std::complex<float>> { static constexpr bool wide = false, cplx = true; };
template <class T>
bool scalarAs(py::handle h, T* out) {
    if constexpr (std::is_integral_v<T>) {
        return false;
    } else {
        using R = ScalarRule<T>;
        PyObject* o = h.ptr();
        double re = 0, im = 0;
        if (PyFloat_CheckExact(o)) {
            re = PyFloat_AS_DOUBLE(o);
            if (!R::wide && std::isfinite(re) && !(std::fabs(re) < 3e38)) return false;
        } else if (PyLong_CheckExact(o)) {
            int overflow = 0;
            const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return false;
            }
            if (!R::wide && (v < -32768 || v > 65535)) return false;
            re = static_cast<double>(v);
        } else if (R::cplx && R::wide && PyComplex_CheckExact(o)) {
            re = PyComplex_RealAsDouble(o);
            im = PyComplex_ImagAsDouble(o);
        } else {
            return false;
        }
        if constexpr (R::cplx) *out = T(static_cast<typename T::value_type>(re), static_cast<typename T::value_type>(im));
        else *out = static_cast<T>(re);
        return true;
    }
}

bool overlaps(const py::array& a, const py::array& b) {
    const char* a0 = static_cast<const char*>(a.data());
    const char* b0 = static_cast<const char*>(b.data());
    return a.nbytes() > 0 && b.nbytes() > 0 && a0 < b0 + b.nbytes() && b0 < a0 + a.nbytes();
}

template <class T>
py::object spmvFastAs(bool trans, py::handle data, py::handle indices, py::handle indptr, int64_t rows,
                      int64_t cols, py::handle x, alDataType_t vt, py::handle alphaH, py::handle betaH,
                      py::handle yH) {
    if (!vectorOf<T>(x)) return py::none();
    alIndexType_t it;
    if (vectorOf<int32_t>(indices) && vectorOf<int32_t>(indptr)) it = AL_INDEX_32I;
    else if (vectorOf<int64_t>(indices) && vectorOf<int64_t>(indptr)) it = AL_INDEX_64I;
    else return py::none();
    // alpha == 1 and beta == 0 as the general path passes them: exactly 1 and +0
    T alpha = T(1), beta = T(0);
    if (!alphaH.is_none() && !scalarAs(alphaH, &alpha)) return py::none();
    if (!betaH.is_none() && !scalarAs(betaH, &beta)) return py::none();
    if (alpha == T(1)) alpha = T(1);
    if (beta == T(0)) beta = T(0);
    const int64_t xLen = trans ? rows : cols, yLen = trans ? cols : rows;
    alCsrDescr A{};
    alDnMatDescr X{}, Y{};
    py::object out;
    {  // owning views in here only: gone before the GIL is released
        auto D = py::reinterpret_borrow<py::array>(data), J = py::reinterpret_borrow<py::array>(indices),
             P = py::reinterpret_borrow<py::array>(indptr), V = py::reinterpret_borrow<py::array>(x);
        if (rows < 0 || cols < 0 || P.shape(0) != rows + 1 || V.shape(0) != xLen) return py::none();
        T* yData;
        if (yH.is_none()) {
            auto y = py::reinterpret_steal<py::array_t<T>>(alpy::emptyResult(py::dtype::of<T>(), {yLen}).release());
            yData = y.mutable_data();
            if (beta != T(0)) std::fill(yData, yData + yLen, T(0));
            out = std::move(y);
        } else {
            // the caller's y, written in place: writable, and sharing no memory
            // with the inputs (the general path writes such a y through a copy)
            if (!exactArray(yH) || !vectorOf<T>(yH)) return py::none();
            auto y = py::reinterpret_borrow<py::array_t<T>>(yH);
            if (!y.writeable() || y.shape(0) != yLen || overlaps(y, D) || overlaps(y, J) || overlaps(y, P) ||
                overlaps(y, V))
                return py::none();
            yData = y.mutable_data();
            out = std::move(y);
        }
        A = alCsrDescr{rows, cols, std::min<int64_t>(J.shape(0), D.shape(0)), P.data(), J.data(), D.data(), it, vt};
        X = alDnMatDescr{xLen, 1, 1, 0, const_cast<void*>(V.data()), vt};
        Y = alDnMatDescr{yLen, 1, 1, 0, yData, vt};
    }
    alHandle_t h = handleFor("cpu");
    PyObject* raw = out.release().ptr();  // owned across the GIL release as a raw reference (see retakeGil)
    alStatus_t st = AL_STATUS_INTERNAL_ERROR;
    withoutGil([&] { st = alSpmv(h, trans ? AL_OP_T : AL_OP_N, &alpha, &A, &X, &beta, &Y, vt); });
    py::object result = py::reinterpret_steal<py::object>(raw);
    if (st != AL_STATUS_SUCCESS) raiseStatus("alSpmv", st);
    return result;
}
py::object spmvFast(bool trans, py::handle data, py::handle indices, py::handle indptr, int64_t rows,
                    int64_t cols, py::handle x, py::handle alpha, py::handle beta, py::handle y) {
    if (!exactArray(data) || !exactArray(indices) || !exactArray(indptr) || !exactArray(x)) return py::none();
#define AL_FAST(T, VT) return spmvFastAs<T>(trans, data, indices, indptr, rows, cols, x, VT, alpha, beta, y)
    if (vectorOf<double>(data)) AL_FAST(double, AL_R_64F);
    if (vectorOf<float>(data)) AL_FAST(float, AL_R_32F);
    if (vectorOf<std::complex<double>>(data)) AL_FAST(std::complex<double>, AL_C_64F);
    if (vectorOf<std::complex<float>>(data)) AL_FAST(std::complex<float>, AL_C_32F);
    const bool plain = alpha.is_none() && beta.is_none() && y.is_none();  // integer products: A @ x only
    if (plain && vectorOf<int64_t>(data)) AL_FAST(int64_t, AL_R_64I);
    if (plain && vectorOf<int32_t>(data)) AL_FAST(int32_t, AL_R_32I);
#undef AL_FAST
    return py::none();
}

}  // namespace

void addSpmv(py::module_& m) {
    m.def("spmv", &spmv, py::arg("device"), py::arg("trans"), py::arg("alpha"), py::arg("indptr"),
          py::arg("indices"), py::arg("data"), py::arg("rows"), py::arg("cols"), py::arg("x"), py::arg("beta"),
          py::arg("y"), py::arg("resident") = py::none(), py::arg("verify") = true);
    m.def(
        "spmv_reads_widened",
        [](const py::dtype& values, const py::dtype& compute, const py::dtype& index) {
            alDataType_t store, type;
            try {
                store = storedType(values);
                type = dataType(compute);
            } catch (const py::type_error&) {
                return false;  // no kernel for one of them
            }
            const int32_t it = index.itemsize() == 4 ? AL_INDEX_32I : AL_INDEX_64I;
            return store != type && al::spmvWidenedValues(store, type, it);
        },
        py::arg("values"), py::arg("compute"), py::arg("index"),
        "Whether the CPU kernels of the compute dtype read values of this dtype as they are stored, "
        "widening each as numpy's astype(compute) would (with indices of this dtype; "
        "host/spmv_internal.h, spmvWidenedValues)");
    m.def("spmv_fast", &spmvFast, py::arg("trans"), py::arg("data"), py::arg("indices"), py::arg("indptr"),
          py::arg("rows"), py::arg("cols"), py::arg("x"), py::arg("alpha") = py::none(),
          py::arg("beta") = py::none(), py::arg("y") = py::none(),
          "A @ x's (and spmv()'s) common CPU call in one step; None where the general path must decide");
    py::class_<CsrResidency>(m, "CsrResidency",
                             "A CSR matrix's arrays kept on the device between spmv calls (docs/npu.md)")
        .def(py::init<>())
        .def_property_readonly("uploads", [](const CsrResidency& r) { return r.info().uploads; },
                               "how many times the matrix was uploaded into it")
        .def_property_readonly("device_bytes", [](const CsrResidency& r) { return r.info().deviceBytes; },
                               "device memory it holds now");
    m.def(
        "widen_f16",
        [](py::array_t<uint16_t, py::array::c_style> bits) {
            if (!aligned(bits)) throw py::value_error("widen_f16: bits must be aligned");
            std::vector<py::ssize_t> shape(bits.shape(), bits.shape() + bits.ndim());
            py::array_t<float> out(shape);
            const uint16_t* src = bits.data();
            float* dst = out.mutable_data();
            const int64_t n = static_cast<int64_t>(bits.size());
            if (n >= (int64_t(1) << 16)) withoutGil([&] { al::spmvWidenF16(src, dst, n); });
            else al::spmvWidenF16(src, dst, n);
            return out;
        },
        py::arg("bits"),
        "float16 values (a C-contiguous uint16 view of their bits) as a new float32 array of the same "
        "shape, exactly (F16C where the CPU has it)");
    m.def("widen_f16_isa", [] { return std::string(al::spmvWidenF16Isa()); },
          "The build widen_f16 runs: avx2+fma (F16C) or baseline");
}
