// What the planner asks of the current device.
#pragma once

namespace fftconv::detail {

/// Multiprocessors of the current device; 132 (the H200's) where no device answers, so that
/// plans made without one (the CPU tests') size their grids as on the machine they model.
int current_sm_count();

/// Whether the current device runs programmatic dependent launches (compute capability 9.0 and
/// up: a kernel may start while the one before it in the stream finishes); false where no
/// device answers.
bool current_device_has_pdl();

}  // namespace fftconv::detail
