// The Python module fftconv._C. Importing it registers the operators (their TORCH_LIBRARY blocks
// run as the library loads); its functions control the plan cache (fftconv.backends.plan_cache).
// Plain CPython API: the module needs neither pybind11 nor libtorch_python.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <exception>

#include "plan_cache.h"

namespace {

using fftconv::torch_ext::plan_cache;

// Runs `f` and turns a C++ exception into a Python RuntimeError.
template <typename F>
PyObject* guarded(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

PyObject* cache_size(PyObject*, PyObject* args) {
  int device = 0;
  if (!PyArg_ParseTuple(args, "i", &device)) return nullptr;
  return guarded([&] { return PyLong_FromSize_t(plan_cache(device).size()); });
}

PyObject* cache_max_size(PyObject*, PyObject* args) {
  int device = 0;
  if (!PyArg_ParseTuple(args, "i", &device)) return nullptr;
  return guarded([&] { return PyLong_FromSize_t(plan_cache(device).max_size()); });
}

PyObject* cache_set_max_size(PyObject*, PyObject* args) {
  int device = 0;
  Py_ssize_t n = 0;
  if (!PyArg_ParseTuple(args, "in", &device, &n)) return nullptr;
  if (n < 0) {
    PyErr_SetString(PyExc_ValueError, "plan cache max_size must be non-negative");
    return nullptr;
  }
  return guarded([&] {
    plan_cache(device).set_max_size(static_cast<std::size_t>(n));
    Py_RETURN_NONE;
  });
}

PyObject* cache_clear(PyObject*, PyObject* args) {
  int device = 0;
  if (!PyArg_ParseTuple(args, "i", &device)) return nullptr;
  return guarded([&] {
    plan_cache(device).clear();
    Py_RETURN_NONE;
  });
}

PyObject* build_info(PyObject*, PyObject*) {
  return Py_BuildValue("{s:O,s:O,s:O}", "cuda", FFTCONV_TORCH_CUDA ? Py_True : Py_False,
                       "host_fft", FFTCONV_TORCH_HOST_FFT ? Py_True : Py_False, "cudnn",
                       FFTCONV_WITH_CUDNN ? Py_True : Py_False);
}

PyMethodDef methods[] = {
    {"_plan_cache_size", cache_size, METH_VARARGS, "Plans in the cache of a device (-1: CPU)."},
    {"_plan_cache_max_size", cache_max_size, METH_VARARGS, "Capacity of a device's cache."},
    {"_plan_cache_set_max_size", cache_set_max_size, METH_VARARGS, "Sets the capacity."},
    {"_plan_cache_clear", cache_clear, METH_VARARGS, "Drops every plan of a device's cache."},
    {"_build_info", build_info, METH_NOARGS, "What this build of the extension holds."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", "fftconv's PyTorch operators.", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) PyObject* PyInit__C() {
  return PyModule_Create(&module);
}
