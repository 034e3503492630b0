#include "blur.h"

#include <chrono>
#include <stdexcept>
#include <utility>

#include <cuda_runtime_api.h>

namespace blur {

namespace {

// Plans kept at once: a folder of mixed sizes still reuses plans per size, while memory stays
// bounded (a CPU plan for one 2048x2048 RGB image holds about 200 MiB of spectra).
constexpr std::size_t kMaxCachedPlans = 3;

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
  }
}

// Device memory released on destruction.
struct DeviceMemory {
  void* ptr = nullptr;
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes) {
    if (bytes > 0) cuda_check(cudaMalloc(&ptr, bytes), "cudaMalloc");
  }
  ~DeviceMemory() {
    if (ptr) cudaFree(ptr);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  DeviceMemory& operator=(DeviceMemory&& o) noexcept {
    std::swap(ptr, o.ptr);
    return *this;
  }
};

}  // namespace

const char* border_name(Border b) { return b == Border::kZero ? "zero" : "reflect"; }

Border parse_border(const std::string& name) {
  if (name == "zero") return Border::kZero;
  if (name == "reflect") return Border::kReflect;
  throw UserError("unknown border '" + name + "' (expected zero or reflect)");
}

std::int64_t reflect_index(std::int64_t i, std::int64_t n) {
  if (n <= 1) return 0;
  const std::int64_t period = 2 * (n - 1);
  std::int64_t m = i % period;
  if (m < 0) m += period;
  return m < n ? m : period - m;
}

struct Blurrer::Entry {
  int n, channels, height, width;
  fftconv::Plan plan;
  std::vector<float> x, y;               // host tensors (input padded for the border, output)
  DeviceMemory x_dev, y_dev, workspace;  // GPU plans only

  Entry(int n_, int c_, int h_, int w_, const fftconv::ConvDesc& d, const fftconv::Options& o)
      : n(n_), channels(c_), height(h_), width(w_), plan(d, o) {}
};

Blurrer::Blurrer(Kernel kernel, Border border, fftconv::Backend backend)
    : kernel_(std::move(kernel)), border_(border), backend_(backend) {
  check_kernel_size(kernel_);
  if (backend_ == fftconv::Backend::kAuto) {
    throw std::logic_error("Blurrer: resolve Backend::kAuto before");
  }
}

Blurrer::~Blurrer() = default;

fftconv::ConvDesc Blurrer::desc_for(int n, int channels, int height, int width) const {
  fftconv::ConvDesc d;
  d.n = n;
  d.c = d.k = d.groups = channels;
  d.r = kernel_.rows;
  d.s = kernel_.cols;
  const std::int64_t half_h = (kernel_.rows - 1) / 2, half_w = (kernel_.cols - 1) / 2;
  if (border_ == Border::kZero) {
    d.h = height;
    d.w = width;
    d.pad_h = half_h;
    d.pad_w = half_w;
  } else {
    // Reflect: the host pads the image itself and the convolution is "valid".
    d.h = height + 2 * half_h;
    d.w = width + 2 * half_w;
  }
  return d;
}

Blurrer::Entry& Blurrer::plan_for(int n, int channels, int height, int width, BatchTiming* timing) {
  for (auto it = plans_.begin(); it != plans_.end(); ++it) {
    Entry& e = **it;
    if (e.n == n && e.channels == channels && e.height == height && e.width == width) {
      plans_.splice(plans_.begin(), plans_, it);
      return *plans_.front();
    }
  }
  if (plans_.size() >= kMaxCachedPlans) plans_.pop_back();
  const Clock::time_point t0 = Clock::now();
  const fftconv::ConvDesc d = desc_for(n, channels, height, width);
  fftconv::Options o;
  o.backend = backend_;
  auto e = std::make_unique<Entry>(n, channels, height, width, d, o);
  e->x.resize(static_cast<std::size_t>(d.x_elems()));
  e->y.resize(static_cast<std::size_t>(d.y_elems()));
  // The same kernel for every channel (k x 1 x r x s), kept by the plan as its filter.
  std::vector<float> w;
  for (int c = 0; c < channels; ++c)
    w.insert(w.end(), kernel_.values.begin(), kernel_.values.end());
  if (backend_ == fftconv::Backend::kGpu) {
    e->x_dev = DeviceMemory(e->x.size() * sizeof(float));
    e->y_dev = DeviceMemory(e->y.size() * sizeof(float));
    e->workspace = DeviceMemory(e->plan.workspace_size());
    DeviceMemory w_dev(w.size() * sizeof(float));
    cuda_check(cudaMemcpy(w_dev.ptr, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice),
               "uploading the kernel");
    e->plan.set_filter(w_dev.ptr, nullptr);
    cuda_check(cudaStreamSynchronize(nullptr), "set_filter");
  } else {
    e->plan.set_filter(w.data(), nullptr);
  }
  timing->plan_ms = ms_since(t0);
  timing->new_plan = true;
  plans_.push_front(std::move(e));
  return *plans_.front();
}

BatchTiming Blurrer::blur(const std::vector<const Image*>& images, std::vector<Image>* out) {
  if (images.empty()) throw std::logic_error("Blurrer::blur: no images");
  const Image& first = *images.front();
  for (const Image* im : images) {
    if (im->width != first.width || im->height != first.height || im->channels != first.channels) {
      throw std::logic_error("Blurrer::blur: a batch needs images of one size and channel count");
    }
  }
  BatchTiming t;
  t.images = static_cast<int>(images.size());
  Entry& e = plan_for(t.images, first.channels, first.height, first.width, &t);
  const fftconv::ConvDesc& d = e.plan.desc();
  t.plan = e.plan.describe();
  t.info = e.plan.info();

  // 1. the input tensor: each channel plane as is (zero border) or mirrored out (reflect).
  Clock::time_point t0 = Clock::now();
  const std::int64_t off_h = border_ == Border::kReflect ? (kernel_.rows - 1) / 2 : 0;
  const std::int64_t off_w = border_ == Border::kReflect ? (kernel_.cols - 1) / 2 : 0;
  std::vector<std::int64_t> cols(static_cast<std::size_t>(d.w));
  for (std::int64_t q = 0; q < d.w; ++q) cols[q] = reflect_index(q - off_w, first.width);
  for (std::size_t i = 0; i < images.size(); ++i) {
    for (int c = 0; c < first.channels; ++c) {
      const float* src = images[i]->plane(c);
      float* dst = e.x.data() + (i * first.channels + c) * std::size_t(d.h * d.w);
      for (std::int64_t r = 0; r < d.h; ++r) {
        const float* row = src + reflect_index(r - off_h, first.height) * first.width;
        float* drow = dst + r * d.w;
        for (std::int64_t q = 0; q < d.w; ++q) drow[q] = row[cols[q]];
      }
    }
  }
  t.prepare_ms = ms_since(t0);

  // 2. the convolution.
  if (backend_ == fftconv::Backend::kGpu) {
    t0 = Clock::now();
    cuda_check(
        cudaMemcpy(e.x_dev.ptr, e.x.data(), e.x.size() * sizeof(float), cudaMemcpyHostToDevice),
        "uploading images");
    t.upload_ms = ms_since(t0);
    t0 = Clock::now();
    e.plan.forward(e.x_dev.ptr, nullptr, nullptr, e.y_dev.ptr, e.workspace.ptr,
                   e.plan.workspace_size(), nullptr);
    cuda_check(cudaStreamSynchronize(nullptr), "forward");
    t.forward_ms = ms_since(t0);
    t0 = Clock::now();
    cuda_check(
        cudaMemcpy(e.y.data(), e.y_dev.ptr, e.y.size() * sizeof(float), cudaMemcpyDeviceToHost),
        "downloading results");
    t.download_ms = ms_since(t0);
  } else {
    t0 = Clock::now();
    e.plan.forward(e.x.data(), nullptr, nullptr, e.y.data(), nullptr, 0, nullptr);
    t.forward_ms = ms_since(t0);
  }

  // 3. the output tensor back to images.
  t0 = Clock::now();
  out->clear();
  const std::size_t plane = first.plane_size();
  for (std::size_t i = 0; i < images.size(); ++i) {
    Image im;
    im.width = first.width;
    im.height = first.height;
    im.channels = first.channels;
    const float* src = e.y.data() + i * first.channels * plane;
    im.planes.assign(src, src + first.channels * plane);
    out->push_back(std::move(im));
  }
  t.finish_ms = ms_since(t0);
  return t;
}

}  // namespace blur
