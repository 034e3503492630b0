// Blur kernels for fftconv-blur: Gaussians, text matrices and .npy files.
#pragma once

#include <string>
#include <vector>

namespace blur {

/// A 2D kernel, rows x cols, row-major. Applied as a correlation centred on its middle element
/// (rows and cols are odd).
struct Kernel {
  int rows = 0, cols = 0;
  std::vector<float> values;
  std::string source;  ///< how it was made, for reports: "gaussian 45x45 sigma 7.333", a path

  double sum() const;
};

/// exp(-(i^2 + j^2) / (2 sigma^2)) on a rows x cols grid centred at the middle, normalised to sum
/// to 1 (computed in double). Throws UserError for even or non-positive sizes or sigma <= 0.
Kernel gaussian_kernel(int rows, int cols, double sigma);

/// Reads a kernel file: .npy (float32 or float64, 2-D, little-endian, C order) or text (one row
/// per line, values separated by spaces, tabs or commas, '#' starts a comment). Throws UserError
/// naming the file (and line) for anything else: ragged rows, non-numbers, NaN/Inf, empty files,
/// other .npy dtypes, orders or ranks. Sizes are checked by check_kernel_size.
Kernel load_kernel(const std::string& path);

/// Parses .npy bytes; `name` is used in messages.
Kernel parse_npy(const std::vector<unsigned char>& bytes, const std::string& name);
/// Parses text; `name` is used in messages.
Kernel parse_text_kernel(const std::string& text, const std::string& name);

/// Throws UserError unless both sizes are odd: a kernel needs a centre element for "same"
/// output (pad an even kernel with a row or column of zeros to choose where its centre is).
void check_kernel_size(const Kernel& k);

/// Writes a kernel as text (%.9g, exact for float) or as a float32 .npy.
void write_text_kernel(const std::string& path, const Kernel& k, const std::string& comment);
void write_npy_kernel(const std::string& path, const Kernel& k);

}  // namespace blur
