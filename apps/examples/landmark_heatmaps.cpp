// Landmark heatmaps: 68 facial landmarks per face become 68 one-hot maps, smoothed by a 45x45
// Gaussian with fftconv (depthwise: one filter per map), as a landmark network's target or
// decoder would. Checks that every map peaks at its landmark and equals the Gaussian centred
// there, and times the smoothing.
//
//   landmark_heatmaps [--device gpu|cpu|auto] [--batch 32] [--size 96] [--sigma 7] [--iters 10]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <fftconv/fftconv.hpp>

#include "cli.h"

namespace {

constexpr int kLandmarks = 68;
constexpr int kKernel = 45;

struct Point {
  int y, x;
};

// The 68-point layout of the usual face annotation (jaw 17, brows 5+5, nose 9, eyes 6+6,
// mouth 12+8) drawn from simple curves on a unit face, then jittered per face and scaled to the
// map. Deterministic: face `f` always gets the same points.
std::vector<Point> face_landmarks(int f, int size) {
  std::vector<double> ys, xs;
  auto add = [&](double y, double x) {
    ys.push_back(y);
    xs.push_back(x);
  };
  const double pi = 3.14159265358979323846;
  for (int i = 0; i < 17; ++i) {  // jaw: lower half of an ellipse, ear to ear
    const double t = pi * i / 16.0;
    add(0.45 + 0.40 * std::sin(t), 0.5 - 0.38 * std::cos(t));
  }
  for (int side = 0; side < 2; ++side) {  // brows
    for (int i = 0; i < 5; ++i) {
      const double u = i / 4.0;
      add(0.30 - 0.05 * std::sin(pi * u), side ? 0.56 + 0.26 * u : 0.18 + 0.26 * u);
    }
  }
  for (int i = 0; i < 4; ++i) add(0.38 + 0.06 * i, 0.5);   // nose bridge
  for (int i = 0; i < 5; ++i) add(0.62, 0.42 + 0.04 * i);  // nostrils
  for (int side = 0; side < 2; ++side) {                   // eyes
    const double cx = side ? 0.66 : 0.34;
    for (int i = 0; i < 6; ++i) {
      const double t = 2 * pi * i / 6.0;
      add(0.40 + 0.03 * std::sin(t), cx - 0.08 * std::cos(t));
    }
  }
  for (int i = 0; i < 12; ++i) {  // outer lip
    const double t = 2 * pi * i / 12.0;
    add(0.76 + 0.07 * std::sin(t), 0.5 - 0.16 * std::cos(t));
  }
  for (int i = 0; i < 8; ++i) {  // inner lip
    const double t = 2 * pi * i / 8.0;
    add(0.76 + 0.03 * std::sin(t), 0.5 - 0.10 * std::cos(t));
  }
  std::vector<Point> pts;
  std::uint32_t state = 2654435761u * static_cast<std::uint32_t>(f + 1);
  auto jitter = [&]() {
    state = state * 1664525u + 1013904223u;
    return (static_cast<int>(state >> 28) - 8) / 8.0 * 0.03;  // +-3% of the face
  };
  for (std::size_t i = 0; i < ys.size(); ++i) {
    const int y = static_cast<int>(std::lround((ys[i] + jitter()) * (size - 1)));
    const int x = static_cast<int>(std::lround((xs[i] + jitter()) * (size - 1)));
    pts.push_back({std::clamp(y, 0, size - 1), std::clamp(x, 0, size - 1)});
  }
  return pts;
}

void cuda_check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    std::fprintf(stderr, "landmark_heatmaps: %s: %s\n", what, cudaGetErrorString(err));
    std::exit(1);
  }
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  fftconv::Options options;
  options.backend = fftconv::Backend::kAuto;
  int batch = 32, size = 96, iters = 10;
  double sigma = 7.0;
  CLI::App app(
      "Smooths 68 one-hot landmark maps per face with a 45x45 Gaussian through fftconv\n"
      "(depthwise), checks every map against the exact heatmap and times the smoothing.",
      "landmark_heatmaps");
  fftconv_apps::configure(app);
  app.footer("Exit status: 0 every map correct, 1 a map wrong, 2 bad arguments or no plan.");
  app.add_option_function<std::string>(
         "--device", [&](const std::string& v) { options.backend = fftconv::parse_backend(v); },
         "where to run: gpu, cpu or auto (default: the GPU when there is one)")
      ->type_name("gpu|cpu|auto")
      ->check(fftconv_apps::parsed_by([](const std::string& v) { fftconv::parse_backend(v); }));
  app.add_option("--batch", batch, "faces (default 32)")
      ->type_name("N")
      ->check(fftconv_apps::integer_in(1));
  app.add_option("--size", size, "map height and width (default 96)")
      ->type_name("S")
      ->check(fftconv_apps::integer_in(8));
  app.add_option("--sigma", sigma, "the Gaussian's sigma (default 7)")
      ->type_name("S")
      ->check(fftconv_apps::positive_number());
  app.add_option("--iters", iters, "timed runs (default 10)")
      ->type_name("N")
      ->check(fftconv_apps::integer_in(1));
  const int status = fftconv_apps::parse(app, argc, argv, "landmark_heatmaps: ");
  if (status >= 0) return status;
  if (options.backend == fftconv::Backend::kGpu && fftconv::device_count() == 0) {
    std::fprintf(stderr, "landmark_heatmaps: --device gpu: no CUDA device (use cpu or auto)\n");
    return 2;
  }

  // 32 faces x 68 maps of 96x96, one 45x45 Gaussian per map, "same" output.
  fftconv::ConvDesc d;
  d.n = batch;
  d.c = d.k = d.groups = kLandmarks;
  d.h = d.w = size;
  d.r = d.s = kKernel;
  d.pad_h = d.pad_w = kKernel / 2;

  // Heatmap targets peak at 1: the Gaussian is not normalised.
  std::vector<float> gauss(kKernel * kKernel);
  for (int i = 0; i < kKernel; ++i) {
    for (int j = 0; j < kKernel; ++j) {
      const double di = i - kKernel / 2, dj = j - kKernel / 2;
      gauss[i * kKernel + j] =
          static_cast<float>(std::exp(-(di * di + dj * dj) / (2 * sigma * sigma)));
    }
  }
  std::vector<float> w;
  for (int k = 0; k < kLandmarks; ++k) w.insert(w.end(), gauss.begin(), gauss.end());

  std::vector<std::vector<Point>> faces;
  std::vector<float> x(static_cast<std::size_t>(d.x_elems()), 0.0f);
  for (int f = 0; f < batch; ++f) {
    faces.push_back(face_landmarks(f, size));
    for (int l = 0; l < kLandmarks; ++l) {
      const Point p = faces.back()[l];
      x[((std::size_t(f) * kLandmarks + l) * size + p.y) * size + p.x] = 1.0f;
    }
  }
  std::vector<float> y(static_cast<std::size_t>(d.y_elems()), std::nanf(""));

  const auto t_plan = std::chrono::steady_clock::now();
  std::unique_ptr<fftconv::Plan> plan;
  try {
    plan = std::make_unique<fftconv::Plan>(d, options);
  } catch (const fftconv::Error& e) {
    std::fprintf(stderr, "landmark_heatmaps: %s\n", e.what());
    return 2;
  }
  const double plan_ms = ms_since(t_plan);
  const bool gpu = plan->info().backend == fftconv::Backend::kGpu;
  std::printf("plan (%.1f ms): %s\n", plan_ms, plan->describe().c_str());

  // Tensors where the plan wants them; `run` is one forward pass to completion.
  void *x_dev = nullptr, *w_dev = nullptr, *y_dev = nullptr, *ws = nullptr;
  if (gpu) {
    cuda_check(cudaMalloc(&x_dev, x.size() * 4), "cudaMalloc");
    cuda_check(cudaMalloc(&w_dev, w.size() * 4), "cudaMalloc");
    cuda_check(cudaMalloc(&y_dev, y.size() * 4), "cudaMalloc");
    if (plan->workspace_size()) cuda_check(cudaMalloc(&ws, plan->workspace_size()), "cudaMalloc");
    cuda_check(cudaMemcpy(x_dev, x.data(), x.size() * 4, cudaMemcpyHostToDevice), "upload");
    cuda_check(cudaMemcpy(w_dev, w.data(), w.size() * 4, cudaMemcpyHostToDevice), "upload");
  }
  auto run = [&]() {
    if (gpu) {
      plan->forward(x_dev, w_dev, nullptr, y_dev, ws, plan->workspace_size(), nullptr);
      cuda_check(cudaStreamSynchronize(nullptr), "forward");
    } else {
      plan->forward(x.data(), w.data(), nullptr, y.data(), nullptr, 0, nullptr);
    }
  };
  run();  // warm-up
  std::vector<double> times;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    times.push_back(ms_since(t0));
  }
  std::sort(times.begin(), times.end());
  if (gpu) {
    cuda_check(cudaMemcpy(y.data(), y_dev, y.size() * 4, cudaMemcpyDeviceToHost), "download");
    cudaFree(x_dev);
    cudaFree(w_dev);
    cudaFree(y_dev);
    cudaFree(ws);
  }

  // Every map must be the Gaussian centred on its landmark (zero outside the kernel's reach),
  // so its maximum sits exactly on the landmark.
  int recovered = 0;
  double max_err = 0.0;
  const int half = kKernel / 2;
  for (int f = 0; f < batch; ++f) {
    for (int l = 0; l < kLandmarks; ++l) {
      const float* map = y.data() + (std::size_t(f) * kLandmarks + l) * size * size;
      const Point p = faces[f][l];
      const int best = static_cast<int>(std::max_element(map, map + size * size) - map);
      if (best == p.y * size + p.x) ++recovered;
      for (int i = 0; i < size; ++i) {
        for (int j = 0; j < size; ++j) {
          const int di = i - p.y + half, dj = j - p.x + half;
          const double expect =
              di >= 0 && di < kKernel && dj >= 0 && dj < kKernel ? gauss[di * kKernel + dj] : 0.0;
          const double v = map[i * size + j];
          max_err = std::isfinite(v) ? std::max(max_err, std::abs(v - expect)) : INFINITY;
        }
      }
    }
  }
  const int maps = batch * kLandmarks;
  std::printf("%d faces x %d landmarks, %dx%d maps, %dx%d Gaussian sigma %.3g on %s\n", batch,
              kLandmarks, size, size, kKernel, kKernel, sigma,
              fftconv::backend_name(plan->info().backend));
  std::printf(
      "argmax recovers %d of %d landmarks; max |error| against the exact heatmap %.2e "
      "(peak 1)\n",
      recovered, maps, max_err);
  std::printf("forward: median %.3f ms over %d runs (min %.3f, max %.3f), %.2f us per map\n",
              times[times.size() / 2], iters, times.front(), times.back(),
              1000.0 * times[times.size() / 2] / maps);
  // fp32 through the FFT: errors of a few 1e-7 of the peak; 1e-5 is the library's fp32 bound.
  const bool ok = recovered == maps && max_err <= 1e-5;
  std::printf("%s\n", ok ? "ok" : "FAILED");
  return ok ? 0 : 1;
}
