#include "testing/testing.h"

#include "geometry/fft_geometry.h"
#include "reference/reference.h"

#include <stdlib.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <ostream>
#include <random>
#include <stdexcept>
#include <system_error>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/host_values.h"
#include "core/timing.h"

namespace fftconv::testing {

namespace {
float round_to(float v, DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return __half2float(__float2half_rn(v));
    case DType::kBF16:
      return __bfloat162float(__float2bfloat16_rn(v));
    case DType::kF32:
      break;
  }
  return v;
}
}  // namespace

fftconv_conv_desc_t c_desc(const ConvDesc& d) {
  fftconv_conv_desc_t cd = fftconv_conv_desc_default();
  cd.n = d.n;
  cd.c = d.c;
  cd.h = d.h;
  cd.w = d.w;
  cd.k = d.k;
  cd.r = d.r;
  cd.s = d.s;
  cd.pad_h = d.pad_h;
  cd.pad_w = d.pad_w;
  cd.stride_h = d.stride_h;
  cd.stride_w = d.stride_w;
  cd.dil_h = d.dil_h;
  cd.dil_w = d.dil_w;
  cd.groups = d.groups;
  cd.dtype = static_cast<fftconv_dtype_t>(d.dtype);
  cd.border = static_cast<fftconv_border_t>(d.border);
  return cd;
}

std::vector<float> random_values(std::int64_t count, std::uint64_t seed, DType dtype) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& e : v) e = round_to(dist(gen), dtype);
  return v;
}

std::vector<unsigned char> encode(const std::vector<float>& values, DType dtype) {
  const std::size_t esize = dtype_size(dtype);
  std::vector<unsigned char> out(values.size() * esize);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF32) {
      std::memcpy(&out[i * 4], &values[i], 4);
    } else if (dtype == DType::kF16) {
      const __half h = __float2half_rn(values[i]);
      std::memcpy(&out[i * 2], &h, 2);
    } else {
      const __nv_bfloat16 b = __float2bfloat16_rn(values[i]);
      std::memcpy(&out[i * 2], &b, 2);
    }
  }
  return out;
}

std::vector<float> decode(const void* data, std::int64_t count, DType dtype) {
  std::vector<float> out(static_cast<std::size_t>(count));
  detail::decode_to_float(data, out.size(), dtype, out.data());
  return out;
}

std::vector<float> gaussian_filter(const ConvDesc& d, double sigma) {
  auto taps = [sigma](std::int64_t n) {
    std::vector<double> g(static_cast<std::size_t>(n));
    double sum = 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double t = double(i) - double(n - 1) / 2;
      sum += g[static_cast<std::size_t>(i)] = std::exp(-t * t / (2 * sigma * sigma));
    }
    for (double& v : g) v /= sum;
    return g;
  };
  const std::vector<double> gr = taps(d.r), gs = taps(d.s);
  std::vector<float> w(static_cast<std::size_t>(d.w_elems()));
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<float>(gr[(i / d.s) % d.r] * gs[i % d.s]);
  }
  return decode(encode(w, d.dtype).data(), d.w_elems(), d.dtype);
}

std::string ErrorStats::to_string() const {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "rel_l2=%.3e max_err=%.3e nonfinite=%lld of %lld", rel_l2,
                max_err, static_cast<long long>(nonfinite), static_cast<long long>(count));
  return buf;
}

ErrorStats compare(const std::vector<float>& y, const std::vector<double>& ref) {
  if (y.size() != ref.size()) throw std::runtime_error("compare: size mismatch");
  ErrorStats e;
  e.count = static_cast<std::int64_t>(y.size());
  double diff2 = 0.0, ref2 = 0.0, max_diff = 0.0, max_ref = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      ++e.nonfinite;
      continue;
    }
    const double d = double(y[i]) - ref[i];
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
    max_diff = std::max(max_diff, std::fabs(d));
    max_ref = std::max(max_ref, std::fabs(ref[i]));
  }
  // An all-zero reference only matches an all-zero result.
  e.rel_l2 = ref2 > 0 ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? INFINITY : 0.0);
  e.max_err = max_ref > 0 ? max_diff / max_ref : (max_diff > 0 ? INFINITY : 0.0);
  return e;
}

OracleCase host_oracle_case(const ConvDesc& d, Pass pass, std::uint64_t seed) {
  if (pass == Pass::kBackwardFilter) {
    throw std::invalid_argument("host_oracle_case: forward or backward data only");
  }
  const bool fwd = pass == Pass::kForward;
  OracleCase c;
  c.src = random_values(fwd ? d.x_elems() : d.y_elems(), seed, DType::kF32);
  c.w = random_values(d.w_elems(), seed + 1, DType::kF32);
  if (fwd && seed % 2 == 0) c.bias = random_values(d.k, seed + 2, DType::kF32);
  c.ref.resize(static_cast<std::size_t>(fwd ? d.y_elems() : d.x_elems()));
  if (fwd) {
    reference::conv2d_forward_host(d, c.src.data(), c.w.data(),
                                   c.bias.empty() ? nullptr : c.bias.data(), c.ref.data());
  } else {
    reference::conv2d_backward_data_host(d, c.src.data(), c.w.data(), c.ref.data());
  }
  return c;
}

double dot(const std::vector<double>& a, const std::vector<float>& b) {
  if (b.size() < a.size()) throw std::invalid_argument("dot: the second vector is shorter");
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * double(b[i]);
  return s;
}

double tolerance(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 1e-5;
    case DType::kF16:
      return 2e-3;
    case DType::kBF16:
      return 1e-2;
  }
  return 0.0;
}

bool has_device(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = std::string("no CUDA device: ") + cudaGetErrorString(err);
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device: cudaGetDeviceCount returned 0";
    return false;
  }
  return true;
}

void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(err) + " (" +
                             cudaGetErrorString(err) + ")");
  }
}

void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  if (bytes > this->bytes()) throw std::runtime_error("DeviceBuffer::upload: too many bytes");
  if (bytes) cuda_check(cudaMemcpy(get(), host, bytes, cudaMemcpyHostToDevice), "upload");
}

void DeviceBuffer::download(void* host, std::size_t bytes) const {
  if (bytes > this->bytes()) throw std::runtime_error("DeviceBuffer::download: too many bytes");
  if (bytes) cuda_check(cudaMemcpy(host, get(), bytes, cudaMemcpyDeviceToHost), "download");
}

DeviceBuffer upload(const std::vector<float>& values, DType dtype) {
  const auto bytes = encode(values, dtype);
  DeviceBuffer b(bytes.size());
  b.upload(bytes.data(), bytes.size());
  return b;
}

std::vector<float> download(const DeviceBuffer& b, std::int64_t count, DType dtype) {
  std::vector<unsigned char> host(b.bytes());
  b.download(host.data(), host.size());
  return decode(host.data(), count, dtype);
}

std::vector<double> download_f64(const DeviceBuffer& b, std::int64_t count) {
  std::vector<double> v(static_cast<std::size_t>(count));
  b.download(v.data(), v.size() * sizeof(double));
  return v;
}

void DeviceBuffer::poison() {
  if (bytes()) cuda_check(cudaMemset(get(), 0xFF, bytes()), "poison");
}

double median_of(std::vector<float> values) {
  if (values.empty()) throw std::invalid_argument("median_of: no values");
  return detail::median(std::vector<double>(values.begin(), values.end()));
}

double median_ms(const std::function<void(int)>& run, cudaStream_t stream, int warmup, int iters) {
  if (iters < 1) throw std::runtime_error("median_ms: iters must be at least 1");
  for (int i = 0; i < warmup; ++i) run(i);
  std::vector<detail::GpuTimer> timers(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    timers[static_cast<std::size_t>(i)].start(stream);
    run(warmup + i);
    timers[static_cast<std::size_t>(i)].stop(stream);
  }
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<double> ms;
  for (detail::GpuTimer& t : timers) ms.push_back(t.elapsed_ms());
  return detail::median(std::move(ms));
}

GraphSet::GraphSet(const std::function<void(int)>& run, int copies, cudaStream_t stream) {
  if (copies < 1) throw std::runtime_error("GraphSet: copies must be at least 1");
  run(0);
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  for (int c = 0; c < copies; ++c) {
    cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
    try {
      run(c);
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(stream, &broken);
      if (broken) cudaGraphDestroy(broken);
      for (cudaGraphExec_t e : exec_) cudaGraphExecDestroy(e);
      throw;
    }
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t err = cudaStreamEndCapture(stream, &graph);
    if (err == cudaSuccess) {
      err = cudaGraphInstantiate(&exec, graph, 0);
      cudaGraphDestroy(graph);
    }
    if (err != cudaSuccess) {
      for (cudaGraphExec_t e : exec_) cudaGraphExecDestroy(e);
      cuda_check(err, "capturing a pass in a CUDA graph");
    }
    exec_.push_back(exec);
  }
}

GraphSet::~GraphSet() {
  for (cudaGraphExec_t e : exec_) cudaGraphExecDestroy(e);
}

void GraphSet::launch(int i, cudaStream_t stream) const {
  cuda_check(cudaGraphLaunch(exec_[static_cast<std::size_t>(i) % exec_.size()], stream),
             "cudaGraphLaunch");
}

double graph_median_ms(const std::function<void(int)>& run, int copies, cudaStream_t stream,
                       int warmup, int iters) {
  const GraphSet graphs(run, copies, stream);
  return median_ms([&](int i) { graphs.launch(i, stream); }, stream, warmup, iters);
}

std::vector<int> interleaved_order(int round, int count) {
  std::vector<int> order;
  for (int j = 0; j < count; ++j) order.push_back((round + j) % count);
  return order;
}

std::vector<std::vector<float>> interleaved_times_ms(
    const std::vector<std::function<void(int)>>& runs, cudaStream_t stream, int warmup, int iters) {
  if (iters < 1) throw std::runtime_error("interleaved_times_ms: iters must be at least 1");
  const int count = static_cast<int>(runs.size());
  for (int i = 0; i < warmup; ++i) {
    for (int v : interleaved_order(i, count)) runs[static_cast<std::size_t>(v)](i);
  }
  // timers[v * iters + i]: run v's iteration i.
  const std::size_t n = static_cast<std::size_t>(iters);
  std::vector<detail::GpuTimer> timers(runs.size() * n);
  for (int i = 0; i < iters; ++i) {
    for (int v : interleaved_order(i, count)) {
      detail::GpuTimer& t = timers[static_cast<std::size_t>(v) * n + static_cast<std::size_t>(i)];
      t.start(stream);
      runs[static_cast<std::size_t>(v)](warmup + i);
      t.stop(stream);
    }
  }
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<std::vector<float>> times(runs.size(), std::vector<float>(n));
  for (std::size_t v = 0; v < runs.size(); ++v) {
    for (std::size_t i = 0; i < n; ++i) times[v][i] = timers[v * n + i].elapsed_ms();
  }
  return times;
}

std::vector<double> interleaved_median_ms(const std::vector<std::function<void(int)>>& runs,
                                          cudaStream_t stream, int warmup, int iters) {
  std::vector<double> medians;
  for (const auto& ms : interleaved_times_ms(runs, stream, warmup, iters)) {
    medians.push_back(detail::median(std::vector<double>(ms.begin(), ms.end())));
  }
  return medians;
}

PairedRatio paired_ratio(const std::vector<float>& base, const std::vector<float>& other,
                         double confidence) {
  if (base.empty() || base.size() != other.size()) {
    throw std::invalid_argument("paired_ratio: needs two equally long, non-empty series");
  }
  if (!(confidence > 0.0 && confidence < 1.0)) {
    throw std::invalid_argument("paired_ratio: confidence must lie in (0, 1)");
  }
  std::vector<float> r;
  for (std::size_t i = 0; i < base.size(); ++i) {
    if (!(base[i] > 0.0f) || !(other[i] >= 0.0f)) {
      throw std::invalid_argument("paired_ratio: times must be positive");
    }
    r.push_back(other[i] / base[i]);
  }
  const int n = static_cast<int>(r.size());
  PairedRatio p;
  p.rounds = n;
  p.median = median_of(r);
  std::sort(r.begin(), r.end());
  // The median lies below the j-th smallest ratio (1-based) unless at least j ratios fall below
  // it: P = P(Binomial(n, 1/2) <= j - 1) on each side. The largest j with 2P <= 1 - confidence
  // gives the interval [r_(j), r_(n+1-j)] of coverage 1 - 2P; with too few rounds for any j,
  // the whole range (coverage 1 - 2^(1-n)).
  const double alpha = (1.0 - confidence) / 2.0;
  double tail = 0.0;  // P(B <= k)
  int j = 0;
  for (int k = 0; k < n; ++k) {
    const double log_pk =
        std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) - n * std::log(2.0);
    const double next = tail + std::exp(log_pk);
    if (next > alpha) break;
    tail = next;
    j = k + 1;
  }
  if (j == 0) {
    p.lo = r.front();
    p.hi = r.back();
    p.coverage = 1.0 - 2.0 * std::pow(0.5, n);
  } else {
    p.lo = r[static_cast<std::size_t>(j - 1)];
    p.hi = r[static_cast<std::size_t>(n - j)];
    p.coverage = 1.0 - 2.0 * tail;
  }
  return p;
}

double direct_flops(const ConvDesc& d) {
  return 2.0 * double(d.y_elems()) * double(d.c_per_group()) * double(d.r) * double(d.s);
}

double pass_bytes(const ConvDesc& d, Pass pass) {
  const double es = double(dtype_size(d.dtype));
  double elems = double(d.x_elems() + d.w_elems() + d.y_elems());
  if (pass == Pass::kForward) elems += double(d.k);  // bias
  return es * elems;
}

double floor_ms(const ConvDesc& d, Pass pass, const PlanInfo& info) {
  double flops = direct_flops(d);
  if (info.fft_h > 0) {
    // Every pass transforms the planes of all three tensors once and contracts per bin.
    const double n = double(info.fft_h) * double(info.fft_w);
    const double images = double(d.n) * double(info.tiles_h * info.tiles_w);
    const double planes = images * d.c + double(d.k) * d.c_per_group() + images * d.k;
    const double bins = double(info.fft_h) * double(info.fft_w / 2 + 1);
    flops = planes * 2.5 * n * std::log2(n) +
            8.0 * bins * images * d.k_per_group() * d.c_per_group() * d.groups;
  }
  return 1e3 * std::max(pass_bytes(d, pass) / kCopyBytesPerSec, flops / kFp32FlopsPerSec);
}

namespace {
// True when some output position along an axis reads at least one input element.
bool axis_reads_data(std::int64_t in, std::int64_t pad, std::int64_t k, std::int64_t stride,
                     std::int64_t dil, std::int64_t out) {
  for (std::int64_t p = 0; p < out; ++p)
    for (std::int64_t t = 0; t < k; ++t) {
      const std::int64_t i = p * stride + t * dil - pad;
      if (i >= 0 && i < in) return true;
    }
  return false;
}
}  // namespace

std::vector<std::int64_t> fft_sweep_sizes_along(const ConvDesc& d, bool height) {
  return detail::fft_size_candidates(height ? detail::min_fft_h(d) : detail::min_fft_w(d));
}

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + " failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool output_reads_data(const ConvDesc& d) {
  return axis_reads_data(d.h, d.pad_h, d.r, d.stride_h, d.dil_h, d.out_h()) &&
         axis_reads_data(d.w, d.pad_w, d.s, d.stride_w, d.dil_w, d.out_w());
}

RandomDescOptions RandomDescOptions::small() {
  RandomDescOptions o;
  o.max_extent = 12;
  o.max_kernel = 5;
  o.max_channels_per_group = 3;
  o.max_depthwise = 5;
  o.wide_padding = true;
  o.wide_padding_extra = 6;
  o.padding_only_outputs = true;
  return o;
}

ConvDesc random_desc(std::mt19937_64& gen, const RandomDescOptions& o) {
  if (o.max_extent < 1 || o.max_kernel < 1 || o.max_batch < 1 || o.max_channels_per_group < 1 ||
      o.max_depthwise < 1 || o.max_stride < 1 || o.max_dilation < 1 || o.wide_padding_extra < 0) {
    throw std::invalid_argument("random_desc: every bound must be at least 1");
  }
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(gen);
  };
  // Sizes that stress boundaries: primes, powers of two and their neighbours, anything small.
  static const std::int64_t kEdgeSizes[] = {1,  2,  3,  5,  7,  8,  9,  11, 13, 15, 16,  17,  23,
                                            31, 32, 33, 37, 47, 63, 64, 65, 71, 97, 127, 128, 129};
  const std::int64_t edge_count =
      std::upper_bound(std::begin(kEdgeSizes), std::end(kEdgeSizes), o.max_extent) -
      std::begin(kEdgeSizes);
  auto extent = [&]() {
    return pick(0, 2) ? kEdgeSizes[pick(0, edge_count - 1)]
                      : pick(1, std::min<std::int64_t>(80, o.max_extent));
  };
  auto kernel = [&]() { return pick(1, o.max_kernel); };
  // Most axes step by 1; the others by 2 or more (the second axis like the first, or anything).
  auto steps = [&](std::int64_t max, std::int64_t* first, std::int64_t* second) {
    *first = pick(0, 3) || max < 2 ? 1 : pick(2, max);
    *second = pick(0, 3) ? *first : pick(1, max);
  };
  for (;;) {
    ConvDesc d;
    d.dtype = o.dtype;
    if (!o.single_plane) {
      d.n = pick(1, o.max_batch);
      const int kind = static_cast<int>(pick(0, 3));
      if (kind == 3) {  // depthwise
        d.groups = pick(1, o.max_depthwise);
        d.c = d.k = d.groups;
      } else {
        d.groups = kind == 0 ? 1 : pick(2, 3);
        d.c = d.groups * pick(1, o.max_channels_per_group);
        d.k = d.groups * pick(1, o.max_channels_per_group);
      }
    }
    d.h = extent();
    d.w = extent();
    d.r = pick(1, 3) == 1 ? pick(1, std::min<std::int64_t>(3, o.max_kernel)) : kernel();
    d.s = pick(0, 2) ? d.r : kernel();  // rectangular a third of the time
    const std::int64_t slack = o.wide_padding && pick(0, 4) == 0 ? o.wide_padding_extra : 0;
    d.pad_h = pick(0, d.r + slack);
    d.pad_w = pick(0, d.s + slack);
    steps(o.max_stride, &d.stride_h, &d.stride_w);
    steps(o.max_dilation, &d.dil_h, &d.dil_w);
    if (d.validate() != Status::kSuccess) continue;
    if (!o.padding_only_outputs && !output_reads_data(d)) continue;
    const double macs = double(d.n) * double(d.k) * double(d.c_per_group()) * double(d.out_h()) *
                        double(d.out_w()) * double(d.r) * double(d.s);
    if (o.max_macs > 0.0 && macs > o.max_macs) continue;
    return d;
  }
}

ConvDesc random_desc(std::mt19937_64& gen, DType dtype) {
  RandomDescOptions o;
  o.dtype = dtype;
  return random_desc(gen, o);
}

std::vector<float> nonzero_ints(std::size_t count, std::mt19937_64& gen) {
  std::uniform_int_distribution<int> magnitude(1, 1000), sign(0, 1);
  std::vector<float> v(count);
  for (float& e : v) e = float(magnitude(gen) * (sign(gen) ? 1 : -1));
  return v;
}

}  // namespace fftconv::testing
