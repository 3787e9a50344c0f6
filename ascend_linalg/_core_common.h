// Helpers the _core binding's translation units share (defined in _core.cpp).
#ifndef ASCEND_LINALG_CORE_COMMON_H
#define ASCEND_LINALG_CORE_COMMON_H

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "ascend_linalg/al_types.h"

namespace alpy {
namespace py = pybind11;

extern PyObject* gHostError;     // ascend_linalg._core.HostError (RuntimeError)
extern PyTypeObject* gNdarray;   // numpy.ndarray, set when the module loads

// A failed host call's status as the exception the tests and callers expect:
// ValueError, MemoryError or HostError(message, status).
[[noreturn]] void raiseStatus(const char* fn, alStatus_t st);
// The process's handle on "cpu" or "npu", created on first use.
alHandle_t handleFor(const std::string& device);
// h is exactly a numpy.ndarray (no subclass).
bool exactArray(py::handle h);
// h as an ndarray view (borrowed), or TypeError naming it.
py::array ndarray(py::handle h, const char* name);
// np.empty(shape, dtype) for a product's result; a large one from the result
// cache (_core_results.cpp).
py::array emptyResult(const py::dtype& dtype, const std::vector<py::ssize_t>& shape);

}  // namespace alpy

#endif
