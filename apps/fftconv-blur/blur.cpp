#include "blur.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <thread>
#include <utility>

#include <cuda_runtime_api.h>

namespace blur {

namespace {

// Rows a border-padding or copy-out thread handles at least; fewer are not worth a thread.
constexpr std::int64_t kMinRowsPerThread = 64;

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

// Host tensor; page-locked for GPU plans so that transfers run at full speed (pageable memory
// when none can be had).
class HostTensor {
 public:
  HostTensor() = default;
  HostTensor(std::size_t count, bool pinned) : count_(count) {
    if (pinned &&
        cudaMallocHost(reinterpret_cast<void**>(&data_), count * sizeof(float)) == cudaSuccess) {
      pinned_ = true;
      return;
    }
    cudaGetLastError();
    data_ = new float[count];
  }
  ~HostTensor() { release(); }
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;
  HostTensor& operator=(HostTensor&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    std::swap(pinned_, o.pinned_);
    return *this;
  }
  float* data() const { return data_; }
  std::size_t size() const { return count_; }

 private:
  void release() {
    if (!data_) return;
    if (pinned_) {
      cudaFreeHost(data_);
    } else {
      delete[] data_;
    }
    data_ = nullptr;
  }
  float* data_ = nullptr;
  std::size_t count_ = 0;
  bool pinned_ = false;
};

// Runs body(begin, end) over [0, rows) on the host's threads ($FFTCONV_CPU_THREADS, else all).
void parallel_rows(std::int64_t rows, const std::function<void(std::int64_t, std::int64_t)>& body) {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (const char* env = std::getenv("FFTCONV_CPU_THREADS")) threads = std::max(1, std::atoi(env));
  const std::int64_t parts =
      std::max<std::int64_t>(1, std::min<std::int64_t>(threads, rows / kMinRowsPerThread));
  std::vector<std::thread> workers;
  for (std::int64_t i = 1; i < parts; ++i) {
    workers.emplace_back(body, rows * i / parts, rows * (i + 1) / parts);
  }
  body(0, rows / parts);
  for (std::thread& t : workers) t.join();
}

}  // namespace

struct Blurrer::Entry {
  int n, channels, height, width;
  fftconv::Plan plan;
  HostTensor x, y;                       // host tensors (input, output)
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
  d.h = height;
  d.w = width;
  d.pad_h = (kernel_.rows - 1) / 2;
  d.pad_w = (kernel_.cols - 1) / 2;
  d.border = border_;  // the plan reads beyond the edges through it: no padded copy
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
  const bool gpu = backend_ == fftconv::Backend::kGpu;
  e->x = HostTensor(static_cast<std::size_t>(d.x_elems()), gpu);
  e->y = HostTensor(static_cast<std::size_t>(d.y_elems()), gpu);
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

  // 1. the input tensor: the images' channel planes, one after another (the plan applies the
  // border as it reads them).
  Clock::time_point t0 = Clock::now();
  const std::int64_t planes = std::int64_t(images.size()) * first.channels;
  parallel_rows(planes * d.h, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const std::int64_t plane = i / d.h, r = i - plane * d.h;
      const float* row = images[plane / first.channels]->plane(int(plane % first.channels)) +
                         r * first.width;
      std::copy(row, row + d.w, e.x.data() + i * d.w);
    }
  });
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
  out->resize(images.size());
  const std::size_t per_image = first.channels * first.plane_size();
  for (Image& im : *out) {
    im.width = first.width;
    im.height = first.height;
    im.channels = first.channels;
    im.planes.resize(per_image);
  }
  parallel_rows(planes * first.height, [&](std::int64_t begin, std::int64_t end) {
    const std::size_t row_floats = first.width;
    for (std::int64_t i = begin; i < end; ++i) {
      const std::size_t at = std::size_t(i) * row_floats;
      const float* src = e.y.data() + at;
      std::copy(src, src + row_floats, (*out)[at / per_image].planes.data() + at % per_image);
    }
  });
  t.finish_ms = ms_since(t0);
  return t;
}

}  // namespace blur
