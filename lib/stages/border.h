// Borders other than zeros (ConvDesc::border) for the algorithms that do not apply them as they
// load: the bordered problem (bordered_desc) is a zero-padded one on the input continued by the
// border, which these stages write (forward, backward filter) or fold back (backward data).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"

namespace fftconv::detail {

/// The problem on the bordered input: h + 2 pad_h by w + 2 pad_w planes, no padding, zero
/// border; every other field as in `d`. Its output is d's.
ConvDesc bordered_desc(const ConvDesc& d);

/// Elements of the bordered input (or of its gradient): n * c * (h + 2 pad_h) * (w + 2 pad_w).
std::int64_t bordered_elems(const ConvDesc& d);

/// xb (the bordered planes, d's dtype) = x continued by d.border: xb[i][j] =
/// x[border_index(i - pad_h, h)][border_index(j - pad_w, w)] (zeros where that is -1).
void launch_border_copy(const ConvDesc& d, const void* x, void* xb, cudaStream_t stream);

/// The adjoint of the copy: dx[i][j] = sum of dxb over the bordered positions that hold x[i][j]
/// (border_preimages), in a fixed order, in fp32, stored in d's dtype.
void launch_border_fold(const ConvDesc& d, const void* dxb, void* dx, cudaStream_t stream);

/// The same on the host, for fp32 tensors (the CPU backend), on up to `threads` threads.
void border_copy_host(const ConvDesc& d, const float* x, float* xb, int threads);
void border_fold_host(const ConvDesc& d, const float* dxb, float* dx, int threads);

}  // namespace fftconv::detail
