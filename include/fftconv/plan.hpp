// Plan: a descriptor bound to an algorithm, with everything prepared to run it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include "fftconv/export.h"

#include <cuda_runtime_api.h>

#include "fftconv/conv_desc.hpp"
#include "fftconv/device.hpp"
#include "fftconv/options.hpp"

namespace fftconv {

/// A convolution pass prepared for execution on the current CUDA device (or on the host, with
/// Backend::kCpu: then every tensor is host memory, workspace_size() is 0 (the plan owns its
/// buffers), the stream is ignored and calls run to completion before they return).
/// On the host, set_filter() keeps the spectrum in host memory and profile_forward() times the
/// stages with the host clock.
///
/// Building a plan may allocate (cuFFT plans, cuDNN's search buffers) and synchronise; running it
/// never does: forward() only enqueues work on the caller's stream and uses the caller's workspace,
/// so it can be captured in a CUDA graph. A plan's configuration is fixed once built; only the
/// kept filter (set_filter / clear_filter) changes. Several threads may call forward() on one plan
/// at once: host-side enqueueing is serialised inside, and each call must have its own workspace
/// while calls overlap on the device.
class FFTCONV_API Plan {
 public:
  /// Validates the descriptor and builds the plan; throws Error with the reason on failure.
  explicit Plan(const ConvDesc& desc, const Options& options = Options{});
  ~Plan();
  Plan(Plan&&) noexcept;
  Plan& operator=(Plan&&) noexcept;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  const ConvDesc& desc() const;
  const Options& options() const;
  const PlanInfo& info() const;
  /// Device bytes forward() needs as workspace (256-byte aligned); may be 0.
  std::size_t workspace_size() const;
  /// One line: descriptor, algorithm, sizes, workspace and the reason for the choice.
  std::string describe() const;

  /// y = conv(x, w) + bias. x, w (null: the filter kept by set_filter), bias (null: no bias) and
  /// y are device pointers of the
  /// descriptor's dtype; workspace is a device buffer of workspace_bytes >= workspace_size(),
  /// aligned to 256 bytes (may be null when workspace_size() is 0). Arguments are checked before
  /// anything is enqueued: on error nothing is written.
  void forward(const void* x, const void* w, const void* bias, void* y, void* workspace,
               std::size_t workspace_bytes, cudaStream_t stream) const;

  /// Backward data (plans built with Options::pass = Pass::kBackwardData): dx = dL/dx for the
  /// output gradient dy (n x k x Ho x Wo) and filter w (null: the kept filter), dx is n x c x h x
  /// w, all of the descriptor's dtype. Same rules as forward(): checked first, enqueue only.
  void backward_data(const void* dy, const void* w, void* dx, void* workspace,
                     std::size_t workspace_bytes, cudaStream_t stream) const;

  /// Backward filter (plans built with Options::pass = Pass::kBackwardFilter):
  /// dw = alpha * dL/dw + beta * dw for input x and output gradient dy. dw is k x c/groups x r x s
  /// of the descriptor's dtype, or fp32 when Options::dw_fp32 is set for fp16/bf16 data. With
  /// beta == 0, dw is not read (it may hold anything, NaN included). Same rules as forward().
  void backward_filter(const void* x, const void* dy, void* dw, void* workspace,
                       std::size_t workspace_bytes, cudaStream_t stream, float alpha = 1.0f,
                       float beta = 0.0f) const;

  /// Keeps the filter in device memory owned by the plan: for the FFT paths its spectrum at the
  /// plan's FFT size (the filter's pad and transform then leave forward()), for cuDNN a copy.
  /// Afterwards forward() (and backward_data() on a backward-data plan) accepts w == nullptr and
  /// uses the kept filter; a non-null w is still used as given, for that call only. Enqueued on
  /// `stream` (which must finish before `w` is freed or changed); allocates filter_bytes() of
  /// device memory on the first call, so it is a set-up step, not part of the hot path. Calling it
  /// again replaces the kept filter in place; forward() calls on other streams must be ordered
  /// after it by the caller. The memory is released by clear_filter() or when the plan is
  /// destroyed.
  void set_filter(const void* w, cudaStream_t stream);
  /// Releases the kept filter; waits for the device first.
  void clear_filter();
  bool has_filter() const;
  /// Device bytes the kept filter holds (0 when none).
  std::size_t filter_bytes() const;
  /// A per-call filter's spectrum, shared by the plans of one layer: in a training step the
  /// forward pass computes it once and backward data reads it again while the weights are
  /// unchanged, so neither pays the filter's pad and transform a second time. The spectrum lives
  /// in caller memory (device memory for GPU plans, host memory on Backend::kCpu) of
  /// filter_spectrum_size() bytes, 256-byte aligned, which the caller owns and may free once the
  /// calls that read it have finished:
  ///
  ///   fwd.filter_spectrum(w, spec, ws, ws_bytes, stream);
  ///   fwd.forward_with_spectrum(x, spec, bias, y, ws, ws_bytes, stream);
  ///   ...
  ///   dgrad.backward_data_with_spectrum(dy, spec, dx, ws2, ws2_bytes, stream);  // if shares
  ///
  /// The spectrum is of the filter's values when filter_spectrum() ran: after the weights
  /// change, compute it again.
  ///
  /// Bytes of the spectrum: non-zero for forward and backward-data plans of the FFT path (full
  /// image, tiled, and the CPU backend); 0 where the plan's algorithm has none (cuDNN, the fused
  /// and separable paths, backward filter), whose *_spectrum calls throw kNotSupported.
  std::size_t filter_spectrum_size() const;
  /// True when `other` reads the spectra this plan writes and the reverse: both have one, of the
  /// same backend, dtype, filter shape, dilation and FFT size. Forward and backward-data plans of
  /// one layer share it when they run at the same FFT size (Options::fft_h and fft_w can force
  /// the backward-data plan to the forward plan's info().fft_h x fft_w).
  bool shares_filter_spectrum(const Plan& other) const;
  /// Writes the spectrum of filter w (the descriptor's k x c/groups x r x s, of its dtype) to
  /// `spectrum`. Uses the workspace (workspace_size() bytes) for scratch; enqueue only.
  void filter_spectrum(const void* w, void* spectrum, void* workspace, std::size_t workspace_bytes,
                       cudaStream_t stream) const;
  /// forward() with the filter given as its spectrum, written by filter_spectrum() of this plan
  /// or of one that shares_filter_spectrum(); the filter's pad and transform are skipped.
  void forward_with_spectrum(const void* x, const void* spectrum, const void* bias, void* y,
                             void* workspace, std::size_t workspace_bytes,
                             cudaStream_t stream) const;
  /// backward_data() with the filter given as its spectrum (as forward_with_spectrum).
  void backward_data_with_spectrum(const void* dy, const void* spectrum, void* dx,
                                   void* workspace, std::size_t workspace_bytes,
                                   cudaStream_t stream) const;

  /// CUDA graphs the plan holds for pointer sets it has seen twice (Options::graph_replay; at
  /// most 64, the least recently used dropped first). set_filter() and clear_filter() drop them,
  /// after waiting for the launches that read the kept filter.
  std::size_t replay_graphs() const;

  /// Runs forward() `iters` times after one warm-up, timing every stage with CUDA events, and
  /// returns the median per stage. Synchronises the stream: for diagnosis and benchmarks, not the
  /// hot path.
  std::vector<StageTime> profile_forward(const void* x, const void* w, const void* bias, void* y,
                                         void* workspace, std::size_t workspace_bytes,
                                         cudaStream_t stream, int iters = 10) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fftconv
