// fftconv-make-images: the generated inputs of fftconv-blur's tests and timings.
//
//   fftconv-make-images --test-images DIR            # small synthetic images, every format
//   fftconv-make-images --upscale IN OUT.png 2048x2048  # a photo resized (bilinear)
//   fftconv-make-images --kernels DIR                # gaussian45_sigma7.{txt,npy}
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "image_io.h"
#include "kernel.h"

namespace fs = std::filesystem;

namespace {

const char* const kUsage =
    "usage: fftconv-make-images [--test-images DIR] [--upscale IN OUT.png WxH] [--kernels DIR]\n"
    "  --test-images DIR  synthetic test images: gradient_rgb_257x131.png, "
    "checker_gray_64x48.pgm,\n"
    "                     noise_rgba_33x17.png, impulse_rgb_101x101.ppm, dot_gray_1x1.png\n"
    "  --upscale IN OUT WxH  IN resized to W x H (bilinear), written as the PNG OUT\n"
    "  --kernels DIR      gaussian45_sigma7.txt and gaussian45_sigma7.npy (sum 1, float32)\n";

blur::Image blank(int w, int h, int channels) {
  blur::Image im;
  im.width = w;
  im.height = h;
  im.channels = channels;
  im.planes.assign(im.plane_size() * std::size_t(channels), 0.0f);
  return im;
}

void test_images(const fs::path& dir) {
  fs::create_directories(dir);
  {  // smooth ramps and rings, odd sizes
    blur::Image im = blank(257, 131, 3);
    for (int y = 0; y < im.height; ++y) {
      for (int x = 0; x < im.width; ++x) {
        const std::size_t i = std::size_t(y) * im.width + x;
        im.plane(0)[i] = 255.0f * x / (im.width - 1);
        im.plane(1)[i] = 255.0f * y / (im.height - 1);
        const double r = std::hypot(x - 128.0, y - 65.0);
        im.plane(2)[i] = static_cast<float>(127.5 + 127.5 * std::cos(r / 4.0));
      }
    }
    blur::write_png((dir / "gradient_rgb_257x131.png").string(), im);
  }
  {  // hard edges
    blur::Image im = blank(64, 48, 1);
    for (int y = 0; y < im.height; ++y) {
      for (int x = 0; x < im.width; ++x) {
        im.plane(0)[std::size_t(y) * im.width + x] = ((x / 8 + y / 8) % 2) ? 215.0f : 40.0f;
      }
    }
    blur::write_pnm((dir / "checker_gray_64x48.pgm").string(), im);
  }
  {  // white noise in four channels (alpha blurred like the others)
    blur::Image im = blank(33, 17, 4);
    std::uint32_t state = 12345;
    for (float& v : im.planes) {
      state = state * 1664525u + 1013904223u;
      v = static_cast<float>(state >> 24);
    }
    blur::write_png((dir / "noise_rgba_33x17.png").string(), im);
  }
  {  // one bright dot: its blur is the kernel itself
    blur::Image im = blank(101, 101, 3);
    const std::size_t centre = 50 * 101 + 50;
    im.plane(0)[centre] = 255.0f;
    im.plane(1)[centre] = 255.0f;
    im.plane(2)[centre] = 255.0f;
    blur::write_pnm((dir / "impulse_rgb_101x101.ppm").string(), im);
  }
  {  // the smallest image
    blur::Image im = blank(1, 1, 1);
    im.planes[0] = 200.0f;
    blur::write_png((dir / "dot_gray_1x1.png").string(), im);
  }
}

// Bilinear resize with pixel centres aligned (as most image libraries do).
blur::Image resize(const blur::Image& src, int w, int h) {
  blur::Image dst = blank(w, h, src.channels);
  for (int y = 0; y < h; ++y) {
    const double sy = std::clamp((y + 0.5) * src.height / h - 0.5, 0.0, src.height - 1.0);
    const int y0 = static_cast<int>(sy), y1 = std::min(y0 + 1, src.height - 1);
    const double fy = sy - y0;
    for (int x = 0; x < w; ++x) {
      const double sx = std::clamp((x + 0.5) * src.width / w - 0.5, 0.0, src.width - 1.0);
      const int x0 = static_cast<int>(sx), x1 = std::min(x0 + 1, src.width - 1);
      const double fx = sx - x0;
      for (int c = 0; c < src.channels; ++c) {
        const float* p = src.plane(c);
        const double top = p[y0 * src.width + x0] * (1 - fx) + p[y0 * src.width + x1] * fx;
        const double bottom = p[y1 * src.width + x0] * (1 - fx) + p[y1 * src.width + x1] * fx;
        dst.plane(c)[std::size_t(y) * w + x] = static_cast<float>(top * (1 - fy) + bottom * fy);
      }
    }
  }
  return dst;
}

void kernels(const fs::path& dir) {
  fs::create_directories(dir);
  const blur::Kernel k = blur::gaussian_kernel(45, 45, 7.0);
  blur::write_text_kernel((dir / "gaussian45_sigma7.txt").string(), k,
                          "45x45 Gaussian, sigma 7, normalised to sum 1 (float32 values).\n"
                          "Written by fftconv-make-images --kernels; fftconv-blur --sigma 7 "
                          "--size 45 uses the same values.");
  blur::write_npy_kernel((dir / "gaussian45_sigma7.npy").string(), k);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string opt = argv[i];
      if (opt == "--test-images" && i + 1 < argc) {
        test_images(argv[++i]);
      } else if (opt == "--kernels" && i + 1 < argc) {
        kernels(argv[++i]);
      } else if (opt == "--upscale" && i + 3 < argc) {
        const std::string in = argv[++i], out = argv[++i], size = argv[++i];
        int w = 0, h = 0;
        if (std::sscanf(size.c_str(), "%dx%d", &w, &h) != 2 || w < 1 || h < 1) {
          throw blur::UserError("--upscale: size '" + size + "' is not WxH");
        }
        if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path());
        blur::write_png(out, resize(blur::load_image(in), w, h));
      } else if (opt == "-h" || opt == "--help") {
        std::fputs(kUsage, stdout);
        return 0;
      } else {
        std::fprintf(stderr, "fftconv-make-images: bad argument '%s'\n%s", opt.c_str(), kUsage);
        return 2;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fftconv-make-images: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
