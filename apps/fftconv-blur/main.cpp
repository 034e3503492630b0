// fftconv-blur: blurs photos with a large kernel (a 45x45 Gaussian by default) through fftconv's
// FFT convolution, on the GPU when there is one and on the CPU otherwise.
//
//   fftconv-blur --out blurred photos/                 # every image of a folder
//   fftconv-blur --sigma 16 -o soft.png photo.jpg      # one image, a 97x97 Gaussian
//   fftconv-blur --kernel k.npy --border zero --device cpu a.png b.png
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <cuda_runtime_api.h>

#include <fftconv/fftconv.hpp>

#include "args.h"
#include "blur.h"
#include "image_io.h"
#include "kernel.h"

namespace fs = std::filesystem;
using blur::Args;
using blur::parse_args;
using blur::parse_int;
using blur::UserError;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitSomeFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kDefaultSize = 45;
constexpr int kDefaultGpuBatch = 8;

blur::Kernel make_kernel(const Args& a) {
  blur::Kernel k;
  if (!a.kernel_file.empty()) {
    k = blur::load_kernel(a.kernel_file);
    blur::check_kernel_size(k);
  } else {
    int rows = kDefaultSize, cols = kDefaultSize;
    if (!a.size.empty()) {
      const std::size_t x = a.size.find('x');
      rows = parse_int("--size", a.size.substr(0, x), 1, 8191);
      cols = x == std::string::npos ? rows : parse_int("--size", a.size.substr(x + 1), 1, 8191);
    } else if (a.has_sigma) {
      rows = cols = 2 * static_cast<int>(std::ceil(3.0 * a.sigma)) + 1;
    }
    const double sigma = a.has_sigma ? a.sigma : (std::max(rows, cols) - 1) / 6.0;
    k = blur::gaussian_kernel(rows, cols, sigma);
  }
  if (a.normalize) {
    const double s = k.sum();
    if (std::abs(s) < 1e-12) throw UserError("--normalize: the kernel sums to 0");
    for (float& v : k.values) v = static_cast<float>(v / s);
    k.source += ", normalised";
  }
  return k;
}

// Image files of the inputs: files as given, folders by extension, sorted by name.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const fs::directory_entry& e : fs::directory_iterator(in, ec)) {
        if (e.is_regular_file(ec) && blur::has_image_extension(e.path().string())) {
          found.push_back(e.path().string());
        }
      }
      if (ec) throw UserError("cannot list folder '" + in + "': " + ec.message());
      if (found.empty()) throw UserError("no image files in folder '" + in + "'");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(in);  // read errors are reported per file
    }
  }
  // The same file named twice is blurred once.
  std::vector<std::string> unique;
  std::map<std::string, bool> seen;
  for (const std::string& f : files) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(f, ec);
    if (seen.emplace(ec ? f : canonical.string(), true).second) unique.push_back(f);
  }
  return unique;
}

// Result paths, checked before any work: no two inputs may share one, none may replace an
// input without --force, and the output folder must exist or be creatable.
std::vector<std::string> output_paths(const Args& a, const std::vector<std::string>& files) {
  std::vector<std::string> outs;
  if (!a.out_file.empty()) {
    if (files.size() != 1) {
      throw UserError("-o names one result but there are " + std::to_string(files.size()) +
                      " inputs; use --out DIR");
    }
    fs::path p(a.out_file);
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (ext != ".png") throw UserError("-o '" + a.out_file + "': results are PNG files (.png)");
    std::error_code ec;
    if (fs::is_directory(p, ec)) throw UserError("-o '" + a.out_file + "' is a folder; use --out");
    outs.push_back(a.out_file);
  } else {
    const fs::path dir = a.out_dir.empty() ? fs::path(".") : fs::path(a.out_dir);
    for (const std::string& f : files) {
      outs.push_back((dir / (fs::path(f).stem().string() + "_blur.png")).string());
    }
  }
  // Paths with symbolic links resolved as far as they exist, so two spellings of a file match.
  auto key = [](const std::string& path) {
    std::error_code ec;
    fs::path p = fs::weakly_canonical(path, ec);
    return (ec ? fs::absolute(path).lexically_normal() : p).string();
  };
  std::map<std::string, std::string> input_keys;
  for (const std::string& f : files) input_keys.emplace(key(f), f);
  std::map<std::string, std::string> seen;
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const std::string k = key(outs[i]);
    auto [it, fresh] = seen.emplace(k, files[i]);
    if (!fresh) {
      throw UserError("'" + files[i] + "' and '" + it->second + "' would both be written to '" +
                      outs[i] + "'; blur them into different folders");
    }
    const auto input = input_keys.find(k);
    if (input != input_keys.end() && !a.force) {
      throw UserError("the result for '" + files[i] + "' would replace the input '" +
                      input->second + "'; choose another --out/-o, or pass --force");
    }
  }
  const fs::path dir = fs::path(outs.front()).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
      throw UserError("cannot create the output folder '" + dir.string() +
                      "': " + (ec ? ec.message() : "a file of that name exists"));
    }
    if (access(dir.c_str(), W_OK) != 0) {
      throw UserError("cannot write to the output folder '" + dir.string() +
                      "': " + std::strerror(errno));
    }
  }
  return outs;
}

// A one-line progress bar on stderr, drawn only when stderr is a terminal.
class Progress {
 public:
  Progress(int total, bool enabled) : total_(total), enabled_(enabled && isatty(2) && total > 1) {}
  void draw(int done, const std::string& label) {
    if (!enabled_) return;
    constexpr int kWidth = 30;
    const int filled = total_ > 0 ? done * kWidth / total_ : kWidth;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.append(static_cast<std::size_t>(kWidth - filled), '.');
    std::fprintf(stderr, "\r\033[K[%s] %d/%d %s", bar.c_str(), done, total_, label.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (!enabled_ || !shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  int total_;
  bool enabled_;
  bool shown_ = false;
};

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Pending {
  std::size_t index;
  blur::Image image;
  double read_ms;
};

int cpu_threads(const Args& a) {
  if (a.threads > 0) return a.threads;
  if (const char* env = std::getenv("FFTCONV_CPU_THREADS")) return std::atoi(env);
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

std::string algo_text(const fftconv::PlanInfo& i) {
  std::string s = std::string(fftconv::backend_name(i.backend)) + " " + fftconv::algo_name(i.algo);
  if (i.algo == fftconv::Algo::kFft) {
    s += " " + std::to_string(i.fft_h) + "x" + std::to_string(i.fft_w) + " " + i.gemm;
  } else if (i.algo == fftconv::Algo::kFftTiled) {
    s += " tile " + std::to_string(i.fft_h) + "x" + std::to_string(i.fft_w) + " (" +
         std::to_string(i.tiles_h) + "x" + std::to_string(i.tiles_w) + " tiles) " + i.gemm;
  } else if (i.algo == fftconv::Algo::kCudnn) {
    s += " " + i.cudnn_algo;
  }
  return s;
}

int run(const Args& a) {
  const Clock::time_point wall0 = Clock::now();
  const blur::Border border = blur::parse_border(a.border);
  blur::Kernel kernel = make_kernel(a);
  const std::vector<std::string> files = expand_inputs(a.inputs);
  const std::vector<std::string> outs = output_paths(a, files);

  if (a.threads > 0) setenv("FFTCONV_CPU_THREADS", std::to_string(a.threads).c_str(), 1);
  const int devices = fftconv::device_count();
  fftconv::Backend backend = fftconv::Backend::kCpu;
  std::string why;
  if (a.device == "gpu") {
    if (devices == 0) {
      throw UserError("--device gpu: no CUDA device found (use --device cpu or auto)");
    }
    backend = fftconv::Backend::kGpu;
  } else if (a.device == "auto") {
    backend = devices > 0 ? fftconv::Backend::kGpu : fftconv::Backend::kCpu;
    why = devices > 0 ? " (auto: CUDA device found)" : " (auto: no CUDA device)";
  }
  const int batch = a.batch > 0                         ? a.batch
                    : backend == fftconv::Backend::kGpu ? kDefaultGpuBatch
                                                        : 1;

  blur::Blurrer blurrer(kernel, border, backend);
  // A tiny plan first, so that a backend that cannot run at all (no FFTW in this build, a broken
  // driver) stops here with its reason instead of failing every image.
  try {
    fftconv::Options o;
    o.backend = backend;
    fftconv::Plan probe(blurrer.desc_for(1, 1, 1, 1), o);
  } catch (const fftconv::Error& e) {
    throw UserError(std::string("the ") + fftconv::backend_name(backend) +
                    " backend cannot run: " + e.what());
  }

  std::string device_text = fftconv::backend_name(backend) + why;
  if (backend == fftconv::Backend::kCpu) {
    device_text += ", " + std::to_string(cpu_threads(a)) + " threads";
  } else {
    cudaDeviceProp prop;
    int dev = 0;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&prop, dev) == cudaSuccess) {
      device_text += std::string(", ") + prop.name;
    }
  }
  std::printf("fftconv-blur: %zu image%s; kernel %s (%dx%d); border %s; device %s; batch %d\n",
              files.size(), files.size() == 1 ? "" : "s", kernel.source.c_str(), kernel.rows,
              kernel.cols, blur::border_name(border), device_text.c_str(), batch);
  std::fflush(stdout);

  Progress progress(static_cast<int>(files.size()), !a.quiet);
  int written = 0, failed = 0, done = 0;
  double blur_total_ms = 0.0;
  auto report_error = [&](const std::string& msg) {
    progress.clear();
    std::fprintf(stderr, "fftconv-blur: error: %s\n", msg.c_str());
    ++failed;
  };

  std::map<std::tuple<int, int, int>, std::vector<Pending>> pending;
  std::vector<std::tuple<int, int, int>> order;  // shapes in order of first appearance
  auto flush = [&](const std::tuple<int, int, int>& shape) {
    std::vector<Pending>& group = pending[shape];
    if (group.empty()) return;
    std::vector<const blur::Image*> images;
    for (const Pending& p : group) images.push_back(&p.image);
    std::vector<blur::Image> results;
    blur::BatchTiming t;
    try {
      std::vector<blur::BatchTiming> runs;
      for (int r = 0; r < a.repeat; ++r) runs.push_back(blurrer.blur(images, &results));
      t = runs.front();  // plan time and plan text
      std::sort(runs.begin(), runs.end(),
                [](const blur::BatchTiming& x, const blur::BatchTiming& y) {
                  return x.blur_ms() < y.blur_ms();
                });
      const blur::BatchTiming& median = runs[runs.size() / 2];
      t.prepare_ms = median.prepare_ms;
      t.upload_ms = median.upload_ms;
      t.forward_ms = median.forward_ms;
      t.download_ms = median.download_ms;
      t.finish_ms = median.finish_ms;
    } catch (const std::exception& e) {
      for (const Pending& p : group) {
        report_error("blurring '" + files[p.index] + "' failed: " + e.what());
        ++done;
      }
      group.clear();
      return;
    }
    if (t.new_plan && !a.quiet) {
      progress.clear();
      std::printf("plan (%.1f ms): %s\n", t.plan_ms, t.plan.c_str());
    }
    blur_total_ms += t.blur_ms();
    const double per_image = t.blur_ms() / t.images;
    const double forward_per_image = t.forward_ms / t.images;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const Pending& p = group[i];
      const Clock::time_point t0 = Clock::now();
      try {
        blur::write_png(outs[p.index], results[i]);
      } catch (const UserError& e) {
        report_error(e.what());
        ++done;
        continue;
      }
      const double write_ms = ms_since(t0);
      ++written;
      ++done;
      if (!a.quiet) {
        progress.clear();
        char batch_text[64] = "";
        std::snprintf(batch_text, sizeof(batch_text), "%s%s%s", t.images > 1 ? ", batch of " : "",
                      t.images > 1 ? std::to_string(t.images).c_str() : "",
                      a.repeat > 1 ? (", median of " + std::to_string(a.repeat)).c_str() : "");
        std::printf(
            "%s %dx%dx%d -> %s: blur %.1f ms (forward %.1f ms%s), with I/O %.1f ms "
            "(read %.1f, write %.1f); %s\n",
            files[p.index].c_str(), p.image.width, p.image.height, p.image.channels,
            outs[p.index].c_str(), per_image, forward_per_image, batch_text,
            per_image + p.read_ms + write_ms, p.read_ms, write_ms, algo_text(t.info).c_str());
        std::fflush(stdout);
      }
      progress.draw(done, fs::path(files[p.index]).filename().string());
    }
    group.clear();
  };

  for (std::size_t i = 0; i < files.size(); ++i) {
    progress.draw(done, fs::path(files[i]).filename().string());
    const Clock::time_point t0 = Clock::now();
    Pending p{i, {}, 0.0};
    try {
      p.image = blur::load_image(files[i]);
    } catch (const UserError& e) {
      report_error(e.what());
      ++done;
      continue;
    }
    p.read_ms = ms_since(t0);
    const auto shape = std::make_tuple(p.image.width, p.image.height, p.image.channels);
    if (pending.find(shape) == pending.end()) order.push_back(shape);
    std::vector<Pending>& group = pending[shape];
    group.push_back(std::move(p));
    if (static_cast<int>(group.size()) >= batch) flush(shape);
  }
  for (const auto& shape : order) flush(shape);
  progress.clear();

  std::printf("done: %d written, %d failed; blur %.1f ms per image on average (%s); wall %.2f s\n",
              written, failed, written + failed > 0 ? blur_total_ms / std::max(written, 1) : 0.0,
              fftconv::backend_name(backend), ms_since(wall0) / 1000.0);
  return failed > 0 ? kExitSomeFailed : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Args args;
    const int status = parse_args(argc, argv, args);
    if (status >= 0) return status;
    return run(args);
  } catch (const UserError& e) {
    std::fprintf(stderr, "fftconv-blur: error: %s\n", e.what());
    return kExitUsage;
  } catch (const fftconv::Error& e) {
    std::fprintf(stderr, "fftconv-blur: error: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fftconv-blur: error: %s\n", e.what());
    return kExitUsage;
  }
}
