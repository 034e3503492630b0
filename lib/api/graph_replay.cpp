#include "api/graph_replay.h"

#include <cstring>

#include "core/check.h"

namespace fftconv::detail {

namespace {

std::uint32_t bits(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

GraphReplay::~GraphReplay() {
  reset();
  if (capture_stream_) cudaStreamDestroy(capture_stream_);
}

GraphReplay::Key GraphReplay::key_of(const RunArgs& a) {
  Key k;
  k.ptr = {address(a.x),   address(a.w),         address(a.dy),        address(a.bias),
           address(a.out), address(a.workspace), address(a.w_spectrum)};
  k.alpha = bits(a.alpha);
  k.beta = bits(a.beta);
  return k;
}

bool GraphReplay::run(ConvAlgo& algo, const RunArgs& args, cudaStream_t stream, bool kept) {
  if (!active()) return false;
  // Inside the caller's own capture the stages are captured as they are.
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    cudaGetLastError();  // e.g. the legacy stream while another thread captures: run as before
    return false;
  }
  if (status != cudaStreamCaptureStatusNone) return false;

  const Key key = key_of(args);
  Slot* hit = nullptr;
  for (std::size_t i = 0; i < count_ && !hit; ++i) {
    if (slots_[i].key == key) hit = &slots_[i];
  }
  if (!hit) {
    // First sight of these pointers: run the stages, remember the set. Second: capture.
    Seen* seen = nullptr;
    for (std::size_t i = 0; i < seen_count_ && !seen; ++i) {
      if (seen_[i].key == key) seen = &seen_[i];
    }
    if (!seen) {
      seen_[seen_next_] = Seen{key, false};
      seen_next_ = (seen_next_ + 1) % kSlots;
      if (seen_count_ < kSlots) ++seen_count_;
      return false;
    }
    if (seen->no_graph) return false;
    // An error the caller has not read yet would surface inside the capture and be taken by
    // it: leave it to the direct call (and the caller), and capture another time.
    if (cudaPeekAtLastError() != cudaSuccess) return false;
    const cudaGraphExec_t exec = capture(algo, args);
    if (!exec) {
      // This set runs its stages from now on (e.g. a one-kernel call with the kept filter,
      // where the plan's calls with a per-call filter replay); a plan none of whose sets
      // captures gives replay up.
      seen->no_graph = true;
      if (++failures_ >= kMaxFailures && !captured_) declined_ = true;
      return false;
    }
    captured_ = true;
    if (count_ < kSlots) {
      hit = &slots_[count_++];
    } else {
      hit = &slots_[0];
      for (Slot& s : slots_) {
        if (s.used < hit->used) hit = &s;
      }
      cudaGraphExecDestroy(hit->exec);  // a launch in flight completes first
    }
    hit->key = key;
    hit->exec = exec;
  }
  hit->used = ++clock_;
  FFTCONV_CUDA_CHECK(cudaGraphLaunch(hit->exec, stream));
  if (kept) fence_.mark(stream);
  return true;
}

cudaGraphExec_t GraphReplay::capture(ConvAlgo& algo, const RunArgs& args) {
  if (!capture_stream_ &&
      cudaStreamCreateWithFlags(&capture_stream_, cudaStreamNonBlocking) != cudaSuccess) {
    capture_stream_ = nullptr;
    cudaGetLastError();
    return nullptr;
  }
  if (cudaStreamBeginCapture(capture_stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  bool ran = true;
  try {
    algo.run(args, capture_stream_, nullptr);
  } catch (...) {
    ran = false;  // the direct call that follows reports it
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(capture_stream_, &graph);
  if (!ran || ended != cudaSuccess || !graph) {
    if (ended != cudaSuccess) cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    return nullptr;
  }
  // cudaGetLastError only after a call of ours failed: an error the caller has not read yet is
  // left for the caller.
  std::size_t nodes = 0;
  cudaGraphExec_t exec = nullptr;
  if (cudaGraphGetNodes(graph, nullptr, &nodes) != cudaSuccess) {
    cudaGetLastError();
  } else if (nodes >= 2 && cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
    // (One node: launching the graph costs what launching the kernel does.)
    cudaGetLastError();
    exec = nullptr;
  }
  cudaGraphDestroy(graph);
  return exec;
}

void GraphReplay::reset() noexcept {
  fence_.wait();
  for (std::size_t i = 0; i < count_; ++i) cudaGraphExecDestroy(slots_[i].exec);
  slots_ = {};
  count_ = 0;
  seen_count_ = seen_next_ = 0;
  failures_ = 0;
  captured_ = false;
  declined_ = false;
}

}  // namespace fftconv::detail
