// The implementation list, in priority order. One line per algorithm.
#include "algos/registry.h"

namespace fftconv::detail {

// Each defined in its algorithm's own file.
const AlgoFactory& fft_full_factory();   // algos/fft_entries.cpp
const AlgoFactory& fft_tiled_factory();  // algos/fft_entries.cpp
const AlgoFactory& fft_fused_factory();  // algos/fft_fused.cpp
const AlgoFactory& separable_factory();  // algos/separable.cpp
const AlgoFactory& direct_factory();     // algos/direct.cpp
const AlgoFactory& implicit_gemm_factory();  // algos/implicit_gemm.cpp
const AlgoFactory& cudnn_factory();      // algos/cudnn/cudnn_entry.cpp
const AlgoFactory& cpu_fft_factory();    // algos/cpu_fft.cpp

const std::vector<const AlgoFactory*>& algorithm_list() {
  static const std::vector<const AlgoFactory*> list = {
      &fft_full_factory(), &fft_tiled_factory(),     &fft_fused_factory(), &separable_factory(),
      &direct_factory(),   &implicit_gemm_factory(), &cudnn_factory(),     &cpu_fft_factory(),
  };
  return list;
}

}  // namespace fftconv::detail
