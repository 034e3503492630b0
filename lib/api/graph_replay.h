// Replays a plan's staged call as one CUDA graph where the same pointers come back.
//
// A staged FFT pass enqueues five to ten kernels and cuFFT executions; from the host that costs
// 25-40 us per call, more than the device time of the small problems. A caller that runs the
// same layer again (a network's step loop, a benchmark, an image pipeline) usually passes the
// same pointers again. The second call with a pointer set captures the pass on a private stream
// (thread-local capture: nothing runs), instantiates it and launches the graph; later calls with
// those pointers launch it again, one cudaGraphLaunch instead of the whole sequence. A call with
// new pointers, or on a stream that is itself being captured, enqueues the stages as before.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "algos/algo.h"

namespace fftconv::detail {

class GraphReplay {
 public:
  /// `enabled` false: run() always declines.
  explicit GraphReplay(bool enabled) : enabled_(enabled) {}
  ~GraphReplay();
  GraphReplay(const GraphReplay&) = delete;
  GraphReplay& operator=(const GraphReplay&) = delete;

  /// Enqueues `args` on `stream` by a graph where it can (true), else leaves the call to the
  /// caller (false). The caller serialises calls and has checked the arguments; `kept`: the
  /// algorithm reads a kept filter, whose release must wait for the launch (see fence()).
  bool run(ConvAlgo& algo, const RunArgs& args, cudaStream_t stream, bool kept);

  /// Before the algorithm's kept filter changes or is freed: waits for the launches that read
  /// it and drops every graph (they may bake in what set_filter replaces).
  void reset() noexcept;

  /// Graphs instantiated so far that are still cached (tests and describe()).
  std::size_t graphs() const { return count_; }
  /// Whether replay is on and was not given up for this plan (kMaxFailures pointer sets got no
  /// graph, none did: a capture failed, or the pass is a single node, whose launch costs what a
  /// graph's does).
  bool active() const { return enabled_ && !declined_; }

 private:
  // Pointer sets with a graph, and seen once: enough for the layers of one shape in a network
  // (the plan cache of the PyTorch package shares a plan between them).
  static constexpr std::size_t kSlots = 64;
  struct Key {
    std::array<std::uintptr_t, 7> ptr{};
    std::uint32_t alpha = 0, beta = 0;
    bool operator==(const Key& o) const {
      return ptr == o.ptr && alpha == o.alpha && beta == o.beta;
    }
  };
  struct Seen {
    Key key;
    bool no_graph = false;  // its capture failed or was one node: runs the stages
  };
  struct Slot {
    Key key;
    cudaGraphExec_t exec = nullptr;
    std::uint64_t used = 0;  // LRU stamp
  };
  static Key key_of(const RunArgs& a);
  // Captures the pass into a graph on the private stream; nullptr where it cannot or should not.
  cudaGraphExec_t capture(ConvAlgo& algo, const RunArgs& args);

  bool enabled_;
  bool declined_ = false;
  cudaStream_t capture_stream_ = nullptr;
  std::array<Slot, kSlots> slots_{};
  std::size_t count_ = 0;
  std::array<Seen, kSlots> seen_{};
  std::size_t seen_count_ = 0, seen_next_ = 0;
  std::uint64_t clock_ = 0;
  static constexpr std::size_t kMaxFailures = 8;
  std::size_t failures_ = 0;  // sets without a graph since the last reset
  bool captured_ = false;     // a set got a graph since the last reset
  KeptFilterFence fence_;     // launches that read a kept filter
};

}  // namespace fftconv::detail
