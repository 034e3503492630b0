#include "image_io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <stb_image.h>
#include <stb_image_write.h>

namespace blur {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::vector<unsigned char> read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw UserError("cannot read '" + path + "': " + errno_text());
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> guard(f, &std::fclose);
  std::vector<unsigned char> bytes;
  unsigned char chunk[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(chunk, 1, sizeof(chunk), f);
    bytes.insert(bytes.end(), chunk, chunk + got);
    if (got < sizeof(chunk)) break;
  }
  if (std::ferror(f)) throw UserError("cannot read '" + path + "': " + errno_text());
  return bytes;
}

void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw UserError("cannot write '" + path + "': " + errno_text());
  const std::size_t put = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const int flush_error = std::fflush(f);
  const std::string why = errno_text();
  const int close_error = std::fclose(f);
  if (put != bytes.size() || flush_error != 0 || close_error != 0) {
    std::remove(path.c_str());  // leave no truncated image behind
    throw UserError("cannot write '" + path + "': " + why);
  }
}

std::vector<std::uint8_t> interleave(const Image& image) {
  const std::size_t plane = image.plane_size();
  std::vector<std::uint8_t> px(plane * std::size_t(image.channels));
  for (int c = 0; c < image.channels; ++c) {
    const float* src = image.plane(c);
    for (std::size_t i = 0; i < plane; ++i) px[i * std::size_t(image.channels) + c] = to_u8(src[i]);
  }
  return px;
}

void append(void* context, void* data, int size) {
  auto* out = static_cast<std::vector<unsigned char>*>(context);
  const auto* bytes = static_cast<const unsigned char*>(data);
  out->insert(out->end(), bytes, bytes + size);
}

}  // namespace

Image load_image(const std::string& path) {
  const std::vector<unsigned char> bytes = read_file(path);
  if (bytes.empty()) throw UserError("cannot read '" + path + "': the file is empty");
  if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
    throw UserError("cannot read '" + path + "': files over 2 GiB are not supported");
  }
  const int len = static_cast<int>(bytes.size());
  int w = 0, h = 0, channels = 0;
  if (!stbi_info_from_memory(bytes.data(), len, &w, &h, &channels)) {
    throw UserError("cannot read '" + path + "': not an image in a known format (PNG, JPEG, " +
                    "PGM/PPM, BMP, TGA): " + stbi_failure_reason());
  }
  Image image;
  const bool sixteen = stbi_is_16_bit_from_memory(bytes.data(), len) != 0;
  void* data =
      sixteen
          ? static_cast<void*>(stbi_load_16_from_memory(bytes.data(), len, &w, &h, &channels, 0))
          : static_cast<void*>(stbi_load_from_memory(bytes.data(), len, &w, &h, &channels, 0));
  if (!data) {
    throw UserError("cannot read '" + path + "': " + stbi_failure_reason() +
                    " (damaged or truncated file?)");
  }
  std::unique_ptr<void, void (*)(void*)> guard(data, &stbi_image_free);
  if (w < 1 || h < 1 || channels < 1 || channels > 4) {
    throw UserError("cannot read '" + path + "': unexpected image layout " + std::to_string(w) +
                    "x" + std::to_string(h) + " with " + std::to_string(channels) + " channels");
  }
  image.width = w;
  image.height = h;
  image.channels = channels;
  image.planes.resize(image.plane_size() * std::size_t(channels));
  const std::size_t plane = image.plane_size();
  for (int c = 0; c < channels; ++c) {
    float* dst = image.plane(c);
    if (sixteen) {
      const auto* src = static_cast<const std::uint16_t*>(data);
      for (std::size_t i = 0; i < plane; ++i) dst[i] = src[i * channels + c] * (255.0f / 65535.0f);
    } else {
      const auto* src = static_cast<const std::uint8_t*>(data);
      for (std::size_t i = 0; i < plane; ++i) dst[i] = src[i * channels + c];
    }
  }
  return image;
}

std::uint8_t to_u8(float v) {
  if (!(v > 0.0f)) return 0;  // NaN too
  if (v >= 255.0f) return 255;
  return static_cast<std::uint8_t>(std::lround(v));
}

void write_png(const std::string& path, const Image& image) {
  const std::vector<std::uint8_t> px = interleave(image);
  std::vector<unsigned char> png;
  if (!stbi_write_png_to_func(&append, &png, image.width, image.height, image.channels, px.data(),
                              image.width * image.channels)) {
    throw UserError("cannot write '" + path + "': PNG encoding failed");
  }
  write_file(path, png);
}

void write_pnm(const std::string& path, const Image& image) {
  if (image.channels != 1 && image.channels != 3) {
    throw UserError("cannot write '" + path + "': PGM/PPM hold 1 or 3 channels, not " +
                    std::to_string(image.channels));
  }
  const std::string header = std::string(image.channels == 1 ? "P5" : "P6") + "\n" +
                             std::to_string(image.width) + " " + std::to_string(image.height) +
                             "\n255\n";
  std::vector<unsigned char> bytes(header.begin(), header.end());
  const std::vector<std::uint8_t> px = interleave(image);
  bytes.insert(bytes.end(), px.begin(), px.end());
  write_file(path, bytes);
}

bool has_image_extension(const std::string& path) {
  const std::size_t dot = path.find_last_of('.');
  const std::size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return false;
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  for (const char* known : {"png", "jpg", "jpeg", "pgm", "ppm", "pnm", "bmp", "tga"}) {
    if (ext == known) return true;
  }
  return false;
}

}  // namespace blur
