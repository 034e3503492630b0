#include "training_spectrum.h"

#include <atomic>
#include <utility>

namespace fftconv::torch_ext {

namespace {

constexpr std::size_t kAlign = 256;  // what Plan asks of a spectrum

std::atomic<bool> g_enabled{true};
std::atomic<std::size_t> g_max_bytes{std::size_t{1} << 30};
std::atomic<std::size_t> g_alive{0}, g_alive_bytes{0};

thread_local bool t_requested = false;
thread_local std::shared_ptr<const TrainingSpectrum> t_written;
thread_local std::shared_ptr<const TrainingSpectrum> t_offered;

}  // namespace

TrainingSpectrum::TrainingSpectrum(std::size_t n, bool cuda) : bytes(n) {
  c10::Allocator* allocator =
      c10::GetAllocator(cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU);
  memory = allocator->allocate(bytes + kAlign);
  const auto at = reinterpret_cast<std::uintptr_t>(memory.get());
  data = reinterpret_cast<void*>((at + kAlign - 1) / kAlign * kAlign);
  g_alive.fetch_add(1, std::memory_order_relaxed);
  g_alive_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

TrainingSpectrum::~TrainingSpectrum() {
  g_alive.fetch_sub(1, std::memory_order_relaxed);
  g_alive_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

TrainingSpectrumRequest::TrainingSpectrumRequest() {
  t_requested = training_spectra_enabled();
  t_written.reset();
}

TrainingSpectrumRequest::~TrainingSpectrumRequest() { t_requested = false; }

bool take_training_spectrum_request() { return std::exchange(t_requested, false); }

void give_training_spectrum(std::shared_ptr<const TrainingSpectrum> s) { t_written = std::move(s); }

std::shared_ptr<const TrainingSpectrum> take_training_spectrum() { return std::move(t_written); }

TrainingSpectrumOffer::TrainingSpectrumOffer(std::shared_ptr<const TrainingSpectrum> s) {
  t_offered = std::move(s);
}

TrainingSpectrumOffer::~TrainingSpectrumOffer() { t_offered.reset(); }

std::shared_ptr<const TrainingSpectrum> take_offered_training_spectrum() {
  return std::move(t_offered);
}

bool training_spectra_enabled() { return g_enabled.load(std::memory_order_relaxed); }
void set_training_spectra_enabled(bool on) { g_enabled.store(on, std::memory_order_relaxed); }
std::size_t training_spectrum_max_bytes() { return g_max_bytes.load(std::memory_order_relaxed); }
void set_training_spectrum_max_bytes(std::size_t n) {
  g_max_bytes.store(n, std::memory_order_relaxed);
}
std::size_t training_spectra_alive() { return g_alive.load(std::memory_order_relaxed); }
std::size_t training_spectra_alive_bytes() {
  return g_alive_bytes.load(std::memory_order_relaxed);
}

}  // namespace fftconv::torch_ext
