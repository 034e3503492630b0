#include "host/host_fft_conv.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include <filesystem>
#include <system_error>

#include <unistd.h>

#include "core/log.h"
#include "fftconv/status.hpp"
#include "geometry/index_math.h"
#include "host/host_threads.h"
#include "tuning/host_heuristics.h"

namespace fftconv::detail {

namespace {

// FFTW's planner is not thread-safe (only fftwf_execute is), and the thread count it plans for
// is global state: every planner call goes through this lock.
std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

bool init_fftw_threads() {
  static const bool ok = fftwf_init_threads() != 0;
  return ok;
}

// FFTW wisdom kept beside the tuning cache: read before measured planning (a missing file is
// nothing to read), written after through a temporary file and a rename, so a reader never sees a
// half-written file. Wisdom only adds plans, so the last writer's file holds every plan it saw.
void import_wisdom(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return;
  std::lock_guard<std::mutex> lock(planner_mutex());
  if (!fftwf_import_wisdom_from_filename(path.c_str())) {
    log_warning("FFTW wisdom " + path + " could not be read; planning without it");
  }
}

void export_wisdom(const std::string& path) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    if (!fftwf_export_wisdom_to_filename(tmp.c_str())) {
      log_warning("FFTW wisdom " + path + ": cannot write " + tmp);
      return;
    }
    std::filesystem::rename(tmp, path, ec);
  }
  if (ec) {
    log_warning("FFTW wisdom " + path + ": cannot replace it (" + ec.message() + ")");
    std::filesystem::remove(tmp, ec);
  }
}

std::string mib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f MiB", double(bytes) / (1 << 20));
  return buf;
}

// Plans one batched in-place transform over `planes` planes of g. r2c reads real rows of `pitch`
// floats and writes rows of half_w complex values; c2r the other way round.
fftwf_plan plan_many(const FftGeometry& g, std::int64_t planes, float* data, bool forward,
                     int threads, bool measure, bool unaligned) {
  int dims[2] = {static_cast<int>(g.fft_h), static_cast<int>(g.fft_w)};
  int real_embed[2] = {static_cast<int>(g.fft_h), static_cast<int>(g.pitch)};
  int complex_embed[2] = {static_cast<int>(g.fft_h), static_cast<int>(g.half_w)};
  const int real_dist = static_cast<int>(g.fft_h * g.pitch);
  const int complex_dist = static_cast<int>(g.bins);
  auto* spectrum = reinterpret_cast<fftwf_complex*>(data);
  const unsigned flags =
      (measure ? FFTW_MEASURE : FFTW_ESTIMATE) | (unaligned ? FFTW_UNALIGNED : 0u);
  std::lock_guard<std::mutex> lock(planner_mutex());
  if (init_fftw_threads()) fftwf_plan_with_nthreads(threads);
  return forward
             ? fftwf_plan_many_dft_r2c(2, dims, static_cast<int>(planes), data, real_embed, 1,
                                       real_dist, spectrum, complex_embed, 1, complex_dist, flags)
             : fftwf_plan_many_dft_c2r(2, dims, static_cast<int>(planes), spectrum, complex_embed,
                                       1, complex_dist, data, real_embed, 1, real_dist, flags);
}

void destroy(fftwf_plan& p) {
  if (!p) return;
  std::lock_guard<std::mutex> lock(planner_mutex());
  fftwf_destroy_plan(p);
  p = nullptr;
}

// Writes one row of a zero-padded FFT plane: the source row `row` (null: a row of zeros) placed
// at column offset `off` with step `step`, zeros elsewhere, the pitch tail included.
void place_row(const float* row, std::int64_t src_w, std::int64_t off, std::int64_t step,
               std::int64_t fft_w, std::int64_t pitch, float* dst) {
  if (!row) {
    std::fill(dst, dst + pitch, 0.0f);
    return;
  }
  if (step == 1 && off >= 0) {
    const std::int64_t begin = std::min(off, fft_w);
    const std::int64_t count = std::max<std::int64_t>(0, std::min(src_w, fft_w - off));
    std::fill(dst, dst + begin, 0.0f);
    std::copy(row, row + count, dst + begin);
    std::fill(dst + begin + count, dst + pitch, 0.0f);
    return;
  }
  for (std::int64_t t = 0; t < fft_w; ++t) {
    const std::int64_t s = placed_source(t, off, step, src_w);
    dst[t] = s >= 0 ? row[s] : 0.0f;
  }
  std::fill(dst + fft_w, dst + pitch, 0.0f);
}

// Pads `planes` source planes laid out as `place` says into consecutive FFT planes of g.
void pad_planes(const float* src, std::int64_t planes, const Placement& place, const FftGeometry& g,
                float* dst, int threads) {
  const std::int64_t rows = planes * g.fft_h;
  parallel_for(rows, threads, kHostMinWorkPerThread / g.pitch + 1,
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t i = begin; i < end; ++i) {
                   const std::int64_t plane = i / g.fft_h, t = i - plane * g.fft_h;
                   const std::int64_t si = placed_source(t, place.off_h, place.step_h, place.src_h);
                   const float* row =
                       si < 0 ? nullptr : src + (plane * place.src_h + si) * place.src_w;
                   place_row(row, place.src_w, place.off_w, place.step_w, g.fft_w, g.pitch,
                             dst + i * g.pitch);
                 }
               });
}

class StageClock {
 public:
  explicit StageClock(std::vector<StageTime>* out) : out_(out) {
    if (out_) out_->clear();
  }
  void mark(const char* stage) {
    if (!out_) return;
    const auto now = std::chrono::steady_clock::now();
    out_->push_back(
        StageTime{stage, std::chrono::duration<double, std::milli>(now - last_).count()});
    last_ = now;
  }

 private:
  std::vector<StageTime>* out_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// The per-frequency GEMM of any pass as gemm_problem describes it (strides in complex
// elements, bins contiguous), on blocks of bins: for each output (g, m, n) the contraction runs
// over k with the block's bins in the innermost, vectorisable loop. fp32 accumulation, as on the
// GPU.
void strided_cgemm(const CgemmProblem& p, const float* a, const float* b, float* c, int threads) {
  constexpr std::int64_t kBlock = 64;
  const float sa = p.conj_a ? -1.0f : 1.0f, sb = p.conj_b ? -1.0f : 1.0f;
  const std::int64_t macs_per_bin = p.groups * p.m * p.n * p.k;
  parallel_for(
      p.bins, threads, kHostMinWorkPerThread / macs_per_bin + 1,
      [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t b0 = begin; b0 < end; b0 += kBlock) {
          const std::int64_t len = std::min(kBlock, end - b0);
          for (std::int64_t g = 0; g < p.groups; ++g)
            for (std::int64_t m = 0; m < p.m; ++m)
              for (std::int64_t n = 0; n < p.n; ++n) {
                float* __restrict cc = c + 2 * (g * p.c_g + m * p.c_m + n * p.c_n + b0);
                for (std::int64_t k = 0; k < p.k; ++k) {
                  const float* __restrict aa = a + 2 * (g * p.a_g + m * p.a_m + k * p.a_k + b0);
                  const float* __restrict bb = b + 2 * (g * p.b_g + n * p.b_n + k * p.b_k + b0);
                  for (std::int64_t j = 0; j < len; ++j) {
                    const float ar = aa[2 * j], ai = sa * aa[2 * j + 1];
                    const float br = bb[2 * j], bi = sb * bb[2 * j + 1];
                    const float re = ar * br - ai * bi, im = ar * bi + ai * br;
                    cc[2 * j] = k == 0 ? re : cc[2 * j] + re;
                    cc[2 * j + 1] = k == 0 ? im : cc[2 * j + 1] + im;
                  }
                }
              }
        }
      });
}

}  // namespace

constexpr std::int64_t kLargePlaneFloats = std::int64_t(1) << 20;

BatchedFft::BatchedFft(const FftGeometry& g, std::int64_t planes, float* data, bool forward,
                       int threads, bool measure)
    : planes_(planes), plane_floats_(g.real_plane_floats()), forward_(forward) {
  // Small planes: whole planes per thread, however few (FFTW's threads only cost there).
  // Large planes (from 1024x1024): whole planes once there are enough to balance (at most a
  // quarter more on the busiest thread), else FFTW's threads (the 2048x2048 photo: 3 planes).
  const std::int64_t t = std::max(threads, 1);
  parts_ = plane_floats_ < kLargePlaneFloats ? std::min(t, planes) : planes >= 4 * t ? t : 1;
  parts_ = std::max<std::int64_t>(parts_, 1);
  lo_planes_ = planes / parts_;
  if (parts_ == 1) {
    lo_ = plan_many(g, planes, data, forward, threads, measure, false);
    return;
  }
  // Slices start at plane offsets: new-array execution needs them aligned as the planned start.
  const bool unaligned = (plane_floats_ * sizeof(float)) % 64 != 0;
  lo_ = plan_many(g, lo_planes_, data, forward, 1, measure, unaligned);
  if (lo_planes_ * parts_ != planes) {
    hi_ = plan_many(g, lo_planes_ + 1, data, forward, 1, measure, unaligned);
  }
}

BatchedFft::~BatchedFft() {
  destroy(lo_);
  destroy(hi_);
}

void BatchedFft::run(float* data) const {
  auto execute = [&](fftwf_plan p, float* planes) {
    auto* spectrum = reinterpret_cast<fftwf_complex*>(planes);
    if (forward_) {
      fftwf_execute_dft_r2c(p, planes, spectrum);
    } else {
      fftwf_execute_dft_c2r(p, spectrum, planes);
    }
  };
  if (parts_ == 1) {
    execute(lo_, data);
    return;
  }
  // One slice per thread, sized as the plans: slice i holds planes [planes*i/parts, ...).
  parallel_for(parts_, static_cast<int>(parts_), 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t first = planes_ * i / parts_, last = planes_ * (i + 1) / parts_;
      execute(last - first == lo_planes_ ? lo_ : hi_, data + first * plane_floats_);
    }
  });
}

// Every pass has one plane per tensor element plane: n*c + k*c/g + n*k in all.
std::size_t HostFftConv::buffer_bytes(const ConvDesc& d, const FftGeometry& g) {
  const std::int64_t planes = d.n * d.c + d.k * d.c_per_group() + d.n * d.k;
  return static_cast<std::size_t>(planes) * static_cast<std::size_t>(g.real_plane_floats()) *
         sizeof(float);
}

HostFftConv::HostFftConv(const ConvDesc& d, const FftGeometry& g, Pass pass, int threads,
                         bool measure, const std::string& wisdom)
    : d_(d),
      g_(g),
      pass_(pass),
      threads_(std::max(threads, 1)),
      measure_(measure),
      planes_(spectrum_planes(d, g, pass)),
      gemm_(gemm_problem(d, g, pass)) {
  const std::int64_t plane_floats = g.real_plane_floats();
  const std::int64_t most_planes = std::max({planes_.a, planes_.b, planes_.out});
  if (g.fft_h > INT_MAX || g.fft_w > INT_MAX || plane_floats > INT_MAX || most_planes > INT_MAX) {
    throw Error(Status::kNotSupported,
                "fft " + std::to_string(g.fft_h) + "x" + std::to_string(g.fft_w) + " over " +
                    std::to_string(most_planes) +
                    " planes exceeds FFTW's int sizes in the cpu backend [" + d.to_string() + "]");
  }
  auto alloc = [&](std::int64_t planes) {
    const std::size_t bytes =
        static_cast<std::size_t>(planes) * static_cast<std::size_t>(plane_floats) * sizeof(float);
    Buffer b(static_cast<float*>(fftwf_malloc(bytes)));
    // Touched now, so the first call does not pay for the page faults.
    if (b) std::memset(b.get(), 0, bytes);
    if (!b) {
      throw Error(Status::kOutOfMemory,
                  "the cpu backend needs " + std::to_string(buffer_bytes(d, g)) + " bytes (" +
                      mib(buffer_bytes(d, g)) + ") of host memory for its spectra; allocating " +
                      std::to_string(bytes) + " of them failed [" + d.to_string() + "]");
    }
    return b;
  };
  a_ = alloc(planes_.a);
  b_ = alloc(planes_.b);
  out_ = alloc(planes_.out);
  if (measure_) import_wisdom(wisdom);
  r2c_a_ = std::make_unique<BatchedFft>(g, planes_.a, a_.get(), true, threads_, measure_);
  r2c_b_ = std::make_unique<BatchedFft>(g, planes_.b, b_.get(), true, threads_, measure_);
  c2r_out_ = std::make_unique<BatchedFft>(g, planes_.out, out_.get(), false, threads_, measure_);
  if (!r2c_a_->ok() || !r2c_b_->ok() || !c2r_out_->ok()) {
    throw Error(Status::kInternal, "FFTW could not plan the " + std::to_string(g.fft_h) + "x" +
                                       std::to_string(g.fft_w) + " transforms of " + d.to_string());
  }
  if (measure_) export_wisdom(wisdom);
}

HostFftConv::~HostFftConv() = default;

std::size_t HostFftConv::buffer_bytes() const { return buffer_bytes(d_, g_); }

std::size_t HostFftConv::filter_bytes() const {
  return kept_ ? static_cast<std::size_t>(planes_.b * g_.real_plane_floats()) * sizeof(float) : 0;
}

void HostFftConv::pad_filter(const float* w, float* dst) const {
  pad_planes(w, planes_.b, Placement{d_.r, d_.s, 0, 0, d_.dil_h, d_.dil_w}, g_, dst, threads_);
}

// Y[n,k,f] = sum_c X[n,c,f] * conj(W[k,c,f]) per group, on blocks of bins so that a group's
// operands stay in cache while they are reused across images and filters.
void HostFftConv::multiply_forward(const float* spec_w) {
  const std::int64_t cg = d_.c_per_group(), kg = d_.k_per_group();
  const std::int64_t plane = 2 * g_.bins;  // floats of one spectrum plane
  const float* xs = a_.get();
  float* ys = out_.get();
  const std::int64_t macs_per_bin = d_.n * d_.k * cg;
  const std::int64_t block = host_bin_block(d_.n, cg);
  parallel_for(
      g_.bins, threads_, kHostMinWorkPerThread / macs_per_bin + 1,
      [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t b0 = begin; b0 < end; b0 += block) {
          const std::int64_t len = std::min(block, end - b0);
          for (std::int64_t k = 0; k < d_.k; ++k) {
            const std::int64_t group = k / kg;
            for (std::int64_t n = 0; n < d_.n; ++n) {
              float* __restrict y = ys + (n * d_.k + k) * plane + 2 * b0;
              for (std::int64_t cc = 0; cc < cg; ++cc) {
                const float* __restrict x = xs + (n * d_.c + group * cg + cc) * plane + 2 * b0;
                const float* __restrict w = spec_w + (k * cg + cc) * plane + 2 * b0;
                if (cc == 0) {
                  for (std::int64_t j = 0; j < len; ++j) {
                    const float xr = x[2 * j], xi = x[2 * j + 1], wr = w[2 * j], wi = w[2 * j + 1];
                    y[2 * j] = xr * wr + xi * wi;
                    y[2 * j + 1] = xi * wr - xr * wi;
                  }
                } else {
                  for (std::int64_t j = 0; j < len; ++j) {
                    const float xr = x[2 * j], xi = x[2 * j + 1], wr = w[2 * j], wi = w[2 * j + 1];
                    y[2 * j] += xr * wr + xi * wi;
                    y[2 * j + 1] += xi * wr - xr * wi;
                  }
                }
              }
            }
          }
        }
      });
}

void HostFftConv::transform_and_contract(const float* src_a, const float* src_b,
                                         const float* spec_b, StageClockHook clock) {
  // 1. zero-pad: input x offset by the padding, filter w at the origin (dilated), output gradient
  //    dy at the origin spread by the stride; segment a and b per spectrum_planes.
  const Placement x_place{d_.h, d_.w, d_.pad_h, d_.pad_w, 1, 1};
  const Placement w_place{d_.r, d_.s, 0, 0, d_.dil_h, d_.dil_w};
  const Placement dy_place{d_.out_h(), d_.out_w(), 0, 0, d_.stride_h, d_.stride_w};
  const bool kept = spec_b != nullptr;
  pad_planes(src_a, planes_.a, pass_ == Pass::kBackwardData ? dy_place : x_place, g_, a_.get(),
             threads_);
  if (!kept) {
    pad_planes(src_b, planes_.b, pass_ == Pass::kBackwardFilter ? dy_place : w_place, g_, b_.get(),
               threads_);
  }
  clock("pad");
  // 2. r2c in place.
  r2c_a_->run(a_.get());
  if (!kept) r2c_b_->run(b_.get());
  clock("r2c");
  // 3. per-frequency complex GEMM of the pass.
  if (!kept) spec_b = b_.get();
  if (pass_ == Pass::kForward) {
    multiply_forward(spec_b);
  } else if (pass_ == Pass::kBackwardData) {
    strided_cgemm(gemm_, a_.get(), spec_b, out_.get(), threads_);
  } else {
    strided_cgemm(gemm_, spec_b, a_.get(), out_.get(), threads_);  // A = DY, B = X
  }
  clock("gemm");
  // 4. c2r in place.
  c2r_out_->run(out_.get());
  clock("c2r");
}

void HostFftConv::clip(const Window& win, const float* bias, float scale, float beta,
                       float* out) const {
  const float* src = out_.get();
  const bool contiguous = win.stride_w == 1 && win.off_w + win.out_w <= g_.fft_w;
  parallel_for(win.planes * win.out_h, threads_, kHostMinWorkPerThread / win.out_w + 1,
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t i = begin; i < end; ++i) {
                   const std::int64_t plane = i / win.out_h, p = i - plane * win.out_h;
                   const float b = bias ? bias[plane % win.k] : 0.0f;
                   const std::int64_t r = clip_read(p, win.stride_h, win.off_h, g_.fft_h, win.wrap);
                   const float* row = r < 0 ? nullptr : src + (plane * g_.fft_h + r) * g_.pitch;
                   float* dst = out + i * win.out_w;
                   for (std::int64_t q = 0; q < win.out_w; ++q) {
                     float v = 0.0f;
                     if (row) {
                       const std::int64_t col =
                           contiguous ? win.off_w + q
                                      : clip_read(q, win.stride_w, win.off_w, g_.fft_w, win.wrap);
                       if (col >= 0) v = row[col];
                     }
                     const float value = v * scale + b;
                     dst[q] = beta != 0.0f ? value + beta * dst[q] : value;
                   }
                 }
               });
}

void HostFftConv::forward(const HostFwdArgs& a, std::vector<StageTime>* stage_times) {
  StageClock clock(stage_times);
  const float* spec_w = a.w_spectrum ? a.w_spectrum : a.w ? nullptr : kept_.get();
  if (!a.w && !spec_w) throw Error(Status::kInternal, "cpu forward without a filter and none kept");
  transform_and_contract(a.x, a.w, spec_w, [&](const char* stage) { clock.mark(stage); });
  // 5. valid window, 1/(Fh*Fw) scale, stride, bias.
  const Window win{d_.n * d_.k, d_.k, d_.out_h(), d_.out_w(), d_.stride_h, d_.stride_w};
  clip(win, a.bias, static_cast<float>(1.0 / (double(g_.fft_h) * double(g_.fft_w))), 0.0f, a.y);
  clock.mark("clip");
}

void HostFftConv::backward_data(const float* dy, const float* w, const float* w_spectrum,
                                float* dx) {
  const float* spec_w = w_spectrum ? w_spectrum : w ? nullptr : kept_.get();
  if (!w && !spec_w) throw Error(Status::kInternal, "cpu backward data without a filter");
  transform_and_contract(dy, w, spec_w, [](const char*) {});
  // The input window, offset by the padding; past the period the result is zero.
  Window win{d_.n * d_.c, d_.c, d_.h, d_.w, 1, 1, d_.pad_h, d_.pad_w};
  win.wrap = false;
  clip(win, nullptr, static_cast<float>(1.0 / (double(g_.fft_h) * double(g_.fft_w))), 0.0f, dx);
}

void HostFftConv::backward_filter(const float* x, const float* dy, float* dw, float alpha,
                                  float beta) {
  transform_and_contract(x, dy, nullptr, [](const char*) {});
  // The taps of the dilated kernel, scaled and accumulated.
  const Window win{planes_.out, d_.k, d_.r, d_.s, d_.dil_h, d_.dil_w};
  clip(win, nullptr, static_cast<float>(alpha / (double(g_.fft_h) * double(g_.fft_w))), beta, dw);
}

void HostFftConv::set_filter(const float* w) {
  if (pass_ == Pass::kBackwardFilter) {
    throw Error(Status::kInvalidArgument,
                "set_filter: a backward-filter plan has no filter input [" + d_.to_string() + "]");
  }
  if (!kept_) {
    const std::size_t bytes =
        static_cast<std::size_t>(planes_.b * g_.real_plane_floats()) * sizeof(float);
    kept_.reset(static_cast<float*>(fftwf_malloc(bytes)));
    if (!kept_) {
      throw Error(Status::kOutOfMemory, "set_filter: keeping the filter spectrum needs " +
                                            std::to_string(bytes) + " bytes (" + mib(bytes) +
                                            ") of host memory [" + d_.to_string() + "]");
    }
  }
  pad_filter(w, kept_.get());
  // The plans were made for b_; fftwf_malloc gives kept_ the same alignment, as new-array
  // execution requires.
  r2c_b_->run(kept_.get());
}

void HostFftConv::clear_filter() { kept_.reset(); }

std::size_t HostFftConv::filter_spectrum_size() const {
  if (pass_ == Pass::kBackwardFilter) return 0;
  return static_cast<std::size_t>(planes_.b * g_.real_plane_floats()) * sizeof(float);
}

std::string HostFftConv::filter_spectrum_layout() const {
  if (pass_ == Pass::kBackwardFilter) return {};
  return "cpu k" + std::to_string(d_.k) + " c" + std::to_string(d_.c_per_group()) + " r" +
         std::to_string(d_.r) + "s" + std::to_string(d_.s) + " d" + std::to_string(d_.dil_h) +
         "x" + std::to_string(d_.dil_w) + " fft " + std::to_string(g_.fft_h) + "x" +
         std::to_string(g_.fft_w);
}

void HostFftConv::filter_spectrum(const float* w, float* spectrum) const {
  pad_filter(w, spectrum);
  // 256-byte aligned (Plan checks), as FFTW's new-array execution wants: the alignment of b_.
  r2c_b_->run(spectrum);
}

void HostFftConv::fill_info(PlanInfo& info) const {
  info.backend = Backend::kCpu;
  info.algo = Algo::kFft;
  info.fft_h = g_.fft_h;
  info.fft_w = g_.fft_w;
  info.tiles_h = info.tiles_w = 1;
  info.gemm = pass_ != Pass::kForward                          ? "host_strided_cgemm"
              : d_.c_per_group() == 1 && d_.k_per_group() == 1 ? "host_pointwise"
                                                               : "host_cgemm";
  info.gemm_flops = gemm_.flops();
  info.gemm_min_bytes = gemm_.min_bytes();
  info.cudnn_algo.clear();
  info.cudnn_math.clear();
  info.workspace_bytes = 0;
}

}  // namespace fftconv::detail
