// The Python module fftconv._C. Importing it registers the operators (their TORCH_LIBRARY blocks
// run as the library loads); its functions control the plan cache (fftconv.backends.plan_cache)
// and give fftconv.conv2d a direct way into the dispatcher.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <array>
#include <exception>
#include <string>
#include <vector>

#include "ops.h"
#include "plan_cache.h"
#include "training_spectrum.h"

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

PyObject* cache_describe(PyObject*, PyObject* args) {
  int device = 0;
  if (!PyArg_ParseTuple(args, "i", &device)) return nullptr;
  return guarded([&]() -> PyObject* {
    const std::vector<std::string> lines = plan_cache(device).describe();
    PyObject* list = PyList_New(static_cast<Py_ssize_t>(lines.size()));
    if (list == nullptr) return nullptr;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      PyObject* s = PyUnicode_FromStringAndSize(lines[i].data(), static_cast<Py_ssize_t>(lines[i].size()));
      if (s == nullptr) {
        Py_DECREF(list);
        return nullptr;
      }
      PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), s);
    }
    return list;
  });
}

// fftconv.backends.filter_spectra: the training steps' filter spectra (training_spectrum.h).
PyObject* spectra_info(PyObject*, PyObject*) {
  return Py_BuildValue("(nnn)", static_cast<Py_ssize_t>(fftconv::torch_ext::training_spectra_alive()),
                       static_cast<Py_ssize_t>(fftconv::torch_ext::training_spectra_alive_bytes()),
                       static_cast<Py_ssize_t>(fftconv::torch_ext::training_spectrum_max_bytes()));
}

PyObject* spectra_set_max_bytes(PyObject*, PyObject* args) {
  Py_ssize_t n = 0;
  if (!PyArg_ParseTuple(args, "n", &n)) return nullptr;
  if (n < 0) {
    PyErr_SetString(PyExc_ValueError, "filter_spectra max_bytes must be non-negative");
    return nullptr;
  }
  fftconv::torch_ext::set_training_spectrum_max_bytes(static_cast<std::size_t>(n));
  Py_RETURN_NONE;
}

PyObject* spectra_enabled(PyObject*, PyObject* args) {
  int on = -1;
  if (!PyArg_ParseTuple(args, "|p", &on)) return nullptr;
  if (on >= 0) fftconv::torch_ext::set_training_spectra_enabled(on != 0);
  return PyBool_FromLong(fftconv::torch_ext::training_spectra_enabled() ? 1 : 0);
}

PyObject* strict_fp32(PyObject*, PyObject* args) {
  int on = -1;
  if (!PyArg_ParseTuple(args, "|p", &on)) return nullptr;
  if (on >= 0) fftconv::torch_ext::set_strict_fp32(on != 0);
  return PyBool_FromLong(fftconv::torch_ext::strict_fp32() ? 1 : 0);
}

PyObject* own_fft(PyObject*, PyObject* args) {
  int on = -1;
  if (!PyArg_ParseTuple(args, "|p", &on)) return nullptr;
  if (on >= 0) fftconv::torch_ext::set_own_fft(on != 0);
  return PyBool_FromLong(fftconv::torch_ext::own_fft() ? 1 : 0);
}

PyObject* cudnn_search(PyObject*, PyObject* args) {
  const char* name = nullptr;
  if (!PyArg_ParseTuple(args, "|s", &name)) return nullptr;
  if (name) {
    try {
      fftconv::torch_ext::set_cudnn_search(fftconv::parse_cudnn_search(name));
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
      return nullptr;
    }
  }
  return PyUnicode_FromString(fftconv::cudnn_search_name(fftconv::torch_ext::cudnn_search()));
}

PyObject* build_info(PyObject*, PyObject*) {
  return Py_BuildValue("{s:O,s:O,s:O}", "cuda", FFTCONV_TORCH_CUDA ? Py_True : Py_False,
                       "host_fft", FFTCONV_TORCH_HOST_FFT ? Py_True : Py_False, "cudnn",
                       FFTCONV_WITH_CUDNN ? Py_True : Py_False);
}

// ---- conv2d without torch.ops' generic argument parsing ---------------------------------------
// _conv2d(input, weight, bias, stride, padding, dilation, groups, algo, padding_mode): the same
// call of the operator fftconv::conv2d through the dispatcher (autograd, autocast and dispatch
// modes apply), for exact torch.Tensor arguments outside torch.compile; fftconv.conv2d decides
// when.

// An int, or a tuple or list of one or two ints (F.conv2d's forms).
bool parse_pair(PyObject* o, const char* name, std::array<int64_t, 2>& out) {
  if (PyLong_Check(o)) {
    out[0] = out[1] = PyLong_AsLongLong(o);
    return !PyErr_Occurred();
  }
  const Py_ssize_t n = (PyTuple_Check(o) || PyList_Check(o)) ? PySequence_Fast_GET_SIZE(o) : 0;
  bool ok = n == 1 || n == 2;
  for (Py_ssize_t i = 0; ok && i < 2; ++i) {
    PyObject* e = PySequence_Fast_GET_ITEM(o, n == 1 ? 0 : i);  // tuples and lists only
    ok = PyLong_Check(e);
    if (ok) out[i] = PyLong_AsLongLong(e);
  }
  if (ok) return !PyErr_Occurred();
  PyErr_Format(PyExc_ValueError, "fftconv.conv2d: expected %s to be an int or a pair of ints", name);
  return false;
}

PyObject* conv2d_fast(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 9) {
    PyErr_SetString(PyExc_TypeError, "_conv2d takes 9 arguments");
    return nullptr;
  }
  if (!THPVariable_Check(args[0]) || !THPVariable_Check(args[1]) ||
      (args[2] != Py_None && !THPVariable_Check(args[2]))) {
    PyErr_SetString(PyExc_TypeError, "fftconv.conv2d: input, weight and bias must be tensors");
    return nullptr;
  }
  std::array<int64_t, 2> stride{}, padding{}, dilation{};
  if (!parse_pair(args[3], "stride", stride) || !parse_pair(args[4], "padding", padding) ||
      !parse_pair(args[5], "dilation", dilation)) {
    return nullptr;
  }
  const int64_t groups = PyLong_AsLongLong(args[6]);
  if (groups == -1 && PyErr_Occurred()) return nullptr;
  Py_ssize_t algo_len = 0;
  const char* algo = PyUnicode_AsUTF8AndSize(args[7], &algo_len);
  if (algo == nullptr) return nullptr;
  Py_ssize_t mode_len = 0;
  const char* mode = PyUnicode_AsUTF8AndSize(args[8], &mode_len);
  if (mode == nullptr) return nullptr;
  const at::Tensor& x = THPVariable_Unpack(args[0]);
  const at::Tensor& w = THPVariable_Unpack(args[1]);
  std::optional<at::Tensor> b;
  if (args[2] != Py_None) b = THPVariable_Unpack(args[2]);
  at::Tensor y;
  {
    const pybind11::gil_scoped_release no_gil;
    y = fftconv::torch_ext::call_conv2d(x, w, b, stride, padding, dilation, groups,
                                        c10::string_view(algo, algo_len),
                                        c10::string_view(mode, mode_len));
  }
  return THPVariable_Wrap(std::move(y));
  END_HANDLE_TH_ERRORS
}

PyMethodDef methods[] = {
    {"_conv2d", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(conv2d_fast)),
     METH_FASTCALL, "fftconv::conv2d through the dispatcher, for fftconv.conv2d."},
    {"_plan_cache_size", cache_size, METH_VARARGS, "Plans in the cache of a device (-1: CPU)."},
    {"_plan_cache_max_size", cache_max_size, METH_VARARGS, "Capacity of a device's cache."},
    {"_plan_cache_set_max_size", cache_set_max_size, METH_VARARGS, "Sets the capacity."},
    {"_plan_cache_clear", cache_clear, METH_VARARGS, "Drops every plan of a device's cache."},
    {"_plan_cache_describe", cache_describe, METH_VARARGS,
     "One line per plan of a device's cache: the key, what runs it and how Auto chose."},
    {"_filter_spectra_info", spectra_info, METH_NOARGS,
     "(spectra alive, their bytes, max_bytes) of the training steps' filter spectra."},
    {"_filter_spectra_set_max_bytes", spectra_set_max_bytes, METH_VARARGS,
     "Sets the largest spectrum a forward call writes."},
    {"_filter_spectra_enabled", spectra_enabled, METH_VARARGS,
     "Whether training forward calls write filter spectra; with an argument, sets it."},
    {"_strict_fp32", strict_fp32, METH_VARARGS,
     "Whether Auto holds aten's fp32 results to 1e-5 under cudnn.benchmark; with an argument, sets it."},
    {"_cudnn_search", cudnn_search, METH_VARARGS,
     "How the engine's cuDNN path searches ('auto', 'find', 'heuristic', 'graph'); with an argument, sets it."},
    {"_own_fft", own_fft, METH_VARARGS,
     "Whether FFT plans use the own one-pass plane kernels; with an argument, sets it."},
    {"_build_info", build_info, METH_NOARGS, "What this build of the extension holds."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", "fftconv's PyTorch operators.", -1, methods,
                      nullptr, nullptr, nullptr, nullptr};

}  // namespace

extern "C" __attribute__((visibility("default"))) PyObject* PyInit__C() {
  return PyModule_Create(&module);
}
