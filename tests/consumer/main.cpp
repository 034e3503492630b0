// Plans a 45x45 landmark smoothing; runs it when a GPU is present.
#include <cstdio>

#include <cuda_runtime_api.h>

#include <fftconv/fftconv.hpp>

int main() {
  fftconv::ConvDesc d;
  d.n = 4; d.h = 96; d.w = 96; d.r = 45; d.s = 45; d.pad_h = 22; d.pad_w = 22;
  std::printf("descriptor %s\n", d.to_string().c_str());
  if (fftconv::device_count() == 0) {
    std::printf("no CUDA device: planning skipped\n");
    return 0;
  }
  try {
    fftconv::Plan plan(d);
    std::printf("%s\n", plan.describe().c_str());
    void *x, *w, *y, *ws = nullptr;
    cudaMalloc(&x, d.x_elems() * 4);
    cudaMalloc(&w, d.w_elems() * 4);
    cudaMalloc(&y, d.y_elems() * 4);
    if (plan.workspace_size()) cudaMalloc(&ws, plan.workspace_size());
    cudaMemset(x, 0, d.x_elems() * 4);
    cudaMemset(w, 0, d.w_elems() * 4);
    plan.forward(x, w, nullptr, y, ws, plan.workspace_size(), nullptr);
    const cudaError_t err = cudaDeviceSynchronize();
    cudaFree(x); cudaFree(w); cudaFree(y); cudaFree(ws);
    if (err != cudaSuccess) {
      std::printf("CUDA error %s\n", cudaGetErrorString(err));
      return 1;
    }
    std::printf("forward ran\n");
  } catch (const fftconv::Error& e) {
    std::printf("fftconv error: %s\n", e.what());
    return 1;
  }
  return 0;
}
