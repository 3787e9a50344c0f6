// Releasing the GIL around C++ work safely, shared by the _core binding's
// translation units (_core.cpp, _core_hooks.cpp). Internal linkage: each
// unit has its own copy.
#ifndef ASCEND_LINALG_CORE_GIL_H
#define ASCEND_LINALG_CORE_GIL_H

#include <pybind11/pybind11.h>

#include <exception>
#include <vector>

namespace alpy {
namespace py = pybind11;
namespace {

// Python references a binding keeps across withoutGil (the objects must stay
// alive while the GIL is released and another thread could drop theirs).
// Normally they are dropped by the destructor, the GIL held again; see
// retakeGil for the one case where they are leaked instead.
class HeldRefs {
public:
    void hold(py::handle h) { refs_.push_back(py::reinterpret_borrow<py::object>(h)); }
    void leak() noexcept {
        for (py::object& o : refs_) o.release();
    }

private:
    std::vector<py::object> refs_;
};

// Take the GIL back after PyEval_SaveThread. At interpreter exit CPython ends a
// daemon thread that does so with pthread_exit (a forced unwind) instead of
// returning: the thread never gets the GIL again, while the interpreter is
// being finalized. Every destructor the unwind passes then runs without the
// GIL, so no frame of a binding may own a Python reference at this point:
// bindings that release the GIL take their arguments as py::handle (borrowed
// from the caller, who keeps them alive) and keep what they must own in a
// HeldRefs, which is leaked here; the process is exiting.
// Nothing else can come out of the C function: catch (...) sees only that
// unwind (catching abi::__forced_unwind by reference binds a null pointer,
// which UBSan reports), and must rethrow it. Catching it right at the call
// also puts ASan's no-return handler, run before the rethrow, on stack that no
// abandoned instrumented frame left poisoned; run first in an outer frame's
// cleanup, the handler aborts in an internal CHECK (.ci/sanitize.sh).
void retakeGil(PyThreadState* ts, HeldRefs* held) {
    try {
        PyEval_RestoreThread(ts);
    } catch (...) {
        if (held) held->leak();
        throw;
    }
}

// Run f() with the GIL released; f must not touch Python objects. Not RAII on
// purpose: re-taking the GIL in a destructor (py::gil_scoped_release) would
// put that forced unwind through a noexcept frame, which terminates. An
// exception from f is rethrown once the GIL is held again.
template <class F>
void withoutGil(F&& f, HeldRefs* held = nullptr) {
    PyThreadState* ts = PyEval_SaveThread();
    std::exception_ptr error;
    try {
        f();
    } catch (...) {
        error = std::current_exception();
        if (!error) {  // not a C++ exception: a forced unwind (thread cancelled), no GIL to take back
            if (held) held->leak();
            throw;
        }
    }
    retakeGil(ts, held);
    if (error) std::rethrow_exception(error);
}

}  // namespace
}  // namespace alpy

#endif
