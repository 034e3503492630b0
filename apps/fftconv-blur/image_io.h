// Images for fftconv-blur: read PNG, JPEG, PGM/PPM, BMP, TGA (stb); write 8-bit PNG.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace blur {

/// A problem with one file or argument, worded for the user (names the file and the cause).
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An image as planes of floats (channel-major: channels x height x width), values 0..255.
struct Image {
  int width = 0, height = 0, channels = 0;
  std::vector<float> planes;

  std::size_t plane_size() const { return std::size_t(width) * std::size_t(height); }
  float* plane(int c) { return planes.data() + std::size_t(c) * plane_size(); }
  const float* plane(int c) const { return planes.data() + std::size_t(c) * plane_size(); }
};

/// Reads an image file; 16-bit images keep their precision (scaled to 0..255). Throws UserError
/// naming the file for a missing, unreadable, empty, truncated or unknown file.
Image load_image(const std::string& path);

/// Rounds to the nearest integer and clamps to 0..255, the 8-bit value a PNG stores.
std::uint8_t to_u8(float v);

/// Writes `image` as an 8-bit PNG with its channel count (1 grey, 2 grey+alpha, 3 RGB, 4 RGBA).
/// Throws UserError naming the file when it cannot be written.
void write_png(const std::string& path, const Image& image);

/// Writes binary PGM (1 channel) or PPM (3 channels), 8 bits per sample.
void write_pnm(const std::string& path, const Image& image);

/// True for the file extensions a folder scan picks up (.png .jpg .jpeg .pgm .ppm .pnm .bmp .tga,
/// any case).
bool has_image_extension(const std::string& path);

}  // namespace blur
