// Status codes and the exception type of the C++ API.
#pragma once

#include <stdexcept>
#include <string>
#include "fftconv/export.h"

namespace fftconv {

/// Outcome of an operation. The C API (fftconv.h) returns these same values.
enum class Status : int {
  /// The operation succeeded.
  kSuccess = 0,
  /// A size is zero or negative, a padding is negative, or a stride/dilation is below 1.
  kBadShape = 1,
  /// The (dilated) kernel is larger than the padded input: the output would be empty.
  kKernelTooLarge = 2,
  /// groups is below 1 or does not divide both C and K.
  kBadGroups = 3,
  /// The data type is unknown, or the chosen algorithm does not support it.
  kUnsupportedDtype = 4,
  /// A required pointer is null.
  kNullPointer = 5,
  /// A pointer is not aligned as required (element size for tensors, 256 bytes for workspace).
  kMisalignedPointer = 6,
  /// The workspace passed is smaller than Plan::workspace_size().
  kWorkspaceTooSmall = 7,
  /// The requested algorithm cannot implement this descriptor (the message says why).
  kNotSupported = 8,
  /// No usable CUDA device is present.
  kNoDevice = 9,
  /// Device memory could not be allocated, or the plan would exceed the workspace limit.
  kOutOfMemory = 10,
  /// A CUDA runtime call failed.
  kCudaError = 11,
  /// A cuFFT call failed.
  kCufftError = 12,
  /// A cuDNN call failed.
  kCudnnError = 13,
  /// An argument other than the descriptor is invalid (e.g. a malformed string, a bad option).
  kInvalidArgument = 14,
  /// An internal invariant failed: a bug in fftconv.
  kInternal = 15,
};

/// Stable lower-case name of a status, e.g. "bad_shape".
FFTCONV_API const char* status_name(Status s) noexcept;

/// One-line description of a status.
FFTCONV_API const char* status_string(Status s) noexcept;

/// Exception thrown by every C++ API entry point; carries the status and a message a user can act
/// on.
class FFTCONV_API Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message);
  Status status() const noexcept { return status_; }

 private:
  Status status_;
};

}  // namespace fftconv
