#include "fftconv/status.hpp"

namespace fftconv {

namespace {
struct StatusText {
  const char* name;
  const char* text;
};

// Indexed by the enum value; kept in the enum's order.
constexpr StatusText kStatusText[] = {
    {"success", "success"},
    {"bad_shape", "a size is not positive, a padding is negative, or a stride/dilation is below 1"},
    {"kernel_too_large", "the dilated kernel is larger than the padded input"},
    {"bad_groups", "groups does not divide both C and K"},
    {"unsupported_dtype", "data type not supported"},
    {"null_pointer", "a required pointer is null"},
    {"misaligned_pointer", "a pointer is not aligned as required"},
    {"workspace_too_small", "the workspace is smaller than the plan needs"},
    {"not_supported", "the algorithm cannot implement this problem"},
    {"no_device", "no usable CUDA device"},
    {"out_of_memory", "out of device memory or over the workspace limit"},
    {"cuda_error", "a CUDA runtime call failed"},
    {"cufft_error", "a cuFFT call failed"},
    {"cudnn_error", "a cuDNN call failed"},
    {"invalid_argument", "invalid argument"},
    {"internal", "internal error (a bug in fftconv)"},
};
constexpr int kNumStatus = sizeof(kStatusText) / sizeof(kStatusText[0]);
static_assert(kNumStatus == static_cast<int>(Status::kInternal) + 1, "status table out of sync");
}  // namespace

const char* status_name(Status s) noexcept {
  const int i = static_cast<int>(s);
  return (i >= 0 && i < kNumStatus) ? kStatusText[i].name : "unknown_status";
}

const char* status_string(Status s) noexcept {
  const int i = static_cast<int>(s);
  return (i >= 0 && i < kNumStatus) ? kStatusText[i].text : "unknown status";
}

Error::Error(Status status, const std::string& message)
    : std::runtime_error(std::string(status_name(status)) + ": " + message), status_(status) {}

}  // namespace fftconv
