// A training step's filter spectrum, handed from the forward call to the backward-data call of
// the same autograd node, so that the step transforms a trained weight once (Plan::filter_spectrum,
// forward_with_spectrum, backward_data_with_spectrum).
//
//   conv2d's autograd kernel      asks the forward kernel for one (TrainingSpectrumRequest) and
//                                 keeps what it wrote in the node (take_training_spectrum);
//   the forward kernel            writes it where asked and where its plan has one;
//   the node's backward           offers it to the input-gradient call (TrainingSpectrumOffer);
//   the input-gradient kernel     reads it where its plan shares the layout and the weight is the
//                                 tensor content the forward call saw.
//
// Both hand-offs are thread-local and last for one call: the kernels run on the thread of the
// autograd kernel or node that set them. The spectrum is freed with the node's saved variables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <c10/core/Allocator.h>
#include <cuda_runtime_api.h>

#include "plan_cache.h"

namespace fftconv::torch_ext {

/// A filter's spectrum in memory of the tensor's allocator, written by `writer`'s plan.
struct TrainingSpectrum {
  TrainingSpectrum(std::size_t bytes, bool cuda);
  ~TrainingSpectrum();
  TrainingSpectrum(const TrainingSpectrum&) = delete;
  TrainingSpectrum& operator=(const TrainingSpectrum&) = delete;

  FilterIdentity filter;              ///< the weight tensor's content it is of
  std::shared_ptr<PlanEntry> writer;  ///< the forward plan that wrote it
  c10::DataPtr memory;                ///< bytes + 256
  void* data = nullptr;               ///< the spectrum, 256-byte aligned inside `memory`
  std::size_t bytes = 0;
  cudaStream_t stream = nullptr;      ///< where it was written (a reader elsewhere skips it)
};

/// Sets, for the calls made while it lives, that the next forward kernel on this thread should
/// write the filter's spectrum (when the stash is enabled: otherwise it does nothing).
class TrainingSpectrumRequest {
 public:
  TrainingSpectrumRequest();
  ~TrainingSpectrumRequest();
  TrainingSpectrumRequest(const TrainingSpectrumRequest&) = delete;
  TrainingSpectrumRequest& operator=(const TrainingSpectrumRequest&) = delete;
};

/// Forward kernel: whether a spectrum is asked for (and no longer, once asked).
bool take_training_spectrum_request();
/// Forward kernel: what it wrote for the request.
void give_training_spectrum(std::shared_ptr<const TrainingSpectrum> s);
/// Autograd kernel: what the forward kernel wrote (null: none), taken once.
std::shared_ptr<const TrainingSpectrum> take_training_spectrum();

/// Offers `s` to the input-gradient kernel of the calls made while it lives.
class TrainingSpectrumOffer {
 public:
  explicit TrainingSpectrumOffer(std::shared_ptr<const TrainingSpectrum> s);
  ~TrainingSpectrumOffer();
  TrainingSpectrumOffer(const TrainingSpectrumOffer&) = delete;
  TrainingSpectrumOffer& operator=(const TrainingSpectrumOffer&) = delete;
};

/// Input-gradient kernel: the spectrum on offer (null: none), taken once.
std::shared_ptr<const TrainingSpectrum> take_offered_training_spectrum();

/// fftconv.backends.filter_spectra: whether forward calls of training steps write spectra, the
/// largest one they write, and what the spectra alive now hold.
bool training_spectra_enabled();
void set_training_spectra_enabled(bool on);
std::size_t training_spectrum_max_bytes();
void set_training_spectrum_max_bytes(std::size_t n);
std::size_t training_spectra_alive();
std::size_t training_spectra_alive_bytes();

}  // namespace fftconv::torch_ext
