// What the planner asks of the current device.
#pragma once

namespace fftconv::detail {

/// Multiprocessors of the current device; 132 (the H200's) where no device answers, so that
/// plans made without one (the CPU tests') size their grids as on the machine they model.
int current_sm_count();

}  // namespace fftconv::detail
