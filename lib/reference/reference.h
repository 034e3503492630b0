// The test oracle: direct fp64 convolution, written plainly and independent of the FFT code.
// Shared by the tests, the benchmark driver and the benchmarks; the device versions are part of
// the library, whose plan-time accuracy checks (the cuDNN graph path) run them.
#pragma once

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"

namespace fftconv::reference {

/// y (n*k*out_h*out_w doubles) = conv2d(x, w) + bias per ConvDesc semantics; bias may be null.
/// Inputs are the fp32 values of the tensors (fp16/bf16 data converted exactly beforehand).
void conv2d_forward_host(const ConvDesc& d, const float* x, const float* w, const float* bias,
                         double* y);

/// Same on the device: all pointers are device pointers; enqueued on `stream`.
void conv2d_forward_device(const ConvDesc& d, const float* x, const float* w, const float* bias,
                           double* y, cudaStream_t stream);

/// dx (n*c*h*w doubles) = dL/dx given dy = dL/dy (n*k*out_h*out_w), as torch.nn.grad.conv2d_input:
///   dx[n,c,i,j] = sum over k in group(c) and (p, r), (q, s) with p*sh + r*dh - ph == i and
///   q*sw + s*dw - pw == j of dy[n,k,p,q] * w[k,c',r,s].
/// Every element is written (input positions no output reads get 0).
void conv2d_backward_data_host(const ConvDesc& d, const float* dy, const float* w, double* dx);

/// dw (k*(c/groups)*r*s doubles) = dL/dw given x and dy, as torch.nn.grad.conv2d_weight:
///   dw[k,c',r,s] = sum_{n,p,q} x[n, g*Cg + c', p*sh + r*dh - ph, q*sw + s*dw - pw] * dy[n,k,p,q].
void conv2d_backward_filter_host(const ConvDesc& d, const float* x, const float* dy, double* dw);

/// Same on the device: device pointers, enqueued on `stream`. Gather form (no atomics) with a fixed
/// fp64 summation order, so repeated runs give bit-identical results. With a border other than
/// zeros they run the bordered problem (the input continued by the border, no padding) and, for
/// dx, fold its gradient back (a gather per axis), with device memory of their own for the
/// bordered planes (waiting for `stream` before they free it).
void conv2d_backward_data_device(const ConvDesc& d, const float* dy, const float* w, double* dx,
                                 cudaStream_t stream);
void conv2d_backward_filter_device(const ConvDesc& d, const float* x, const float* dy, double* dw,
                                   cudaStream_t stream);

/// A result against its fp64 reference, as testing::compare measures it on the host.
struct DeviceErrorNorms {
  double rel_l2 = 0.0;          ///< ||y - ref|| / ||ref|| over the finite elements of y
  double max_err = 0.0;         ///< max |y - ref| / max |ref|
  std::int64_t nonfinite = 0;   ///< elements of y that are NaN or infinite
  bool pass(double tol) const { return nonfinite == 0 && rel_l2 <= tol && max_err <= tol; }
};

/// Compares `count` elements of y (device memory of `dtype`) with ref (device doubles) on the
/// device; waits for `stream`. The engine's plan-time accuracy checks use it, as do the tests.
DeviceErrorNorms compare_device(const void* y, DType dtype, const double* ref, std::int64_t count,
                                cudaStream_t stream);

}  // namespace fftconv::reference

#include <complex>

#include "gemm/cgemm.h"

namespace fftconv::reference {

/// The per-frequency complex GEMM of `p` in fp64 on the host: c gets p.c_extent() elements laid
/// out as p says (entries the problem does not write are left as they are).
void cgemm_host(const detail::CgemmProblem& p, const std::complex<float>* a,
                const std::complex<float>* b, float alpha, std::complex<double>* c);

}  // namespace fftconv::reference
