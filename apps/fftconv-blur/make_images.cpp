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
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "cli.h"
#include "image_io.h"
#include "kernel.h"

namespace fs = std::filesystem;

namespace {

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

// --upscale IN OUT WxH.
void upscale(const std::string& in, const std::string& out, const std::string& size) {
  int w = 0, h = 0;
  if (std::sscanf(size.c_str(), "%dx%d", &w, &h) != 2 || w < 1 || h < 1) {
    throw blur::UserError("--upscale: size '" + size + "' is not WxH");
  }
  if (fs::path(out).has_parent_path()) fs::create_directories(fs::path(out).parent_path());
  blur::write_png(out, resize(blur::load_image(in), w, h));
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
  // The actions run in the order given, each as often as given, after the whole command line
  // has been read.
  std::vector<std::function<void()>> actions;
  CLI::App app("Writes the generated inputs of fftconv-blur's tests and timings.",
               "fftconv-make-images");
  fftconv_apps::configure(app);
  app.footer("Exit status: 0 everything written, 1 an action failed, 2 bad arguments.");
  app.add_option_function<std::string>(
         "--test-images",
         [&](const std::string& dir) { actions.push_back([dir] { test_images(dir); }); },
         "synthetic test images: gradient_rgb_257x131.png,\n"
         "checker_gray_64x48.pgm, noise_rgba_33x17.png, impulse_rgb_101x101.ppm,\n"
         "dot_gray_1x1.png")
      ->type_name("DIR")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse();
  using Upscale = std::tuple<std::string, std::string, std::string>;  // IN, OUT, WxH
  app.add_option_function<Upscale>(
         "--upscale",
         [&](const Upscale& v) {
           actions.push_back([v] { upscale(std::get<0>(v), std::get<1>(v), std::get<2>(v)); });
         },
         "IN resized to W x H (bilinear), written as the PNG OUT")
      ->type_name("IN OUT WxH")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse();
  app.add_option_function<std::string>(
         "--kernels", [&](const std::string& dir) { actions.push_back([dir] { kernels(dir); }); },
         "gaussian45_sigma7.txt and gaussian45_sigma7.npy (sum 1, float32)")
      ->type_name("DIR")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse();
  if (argc < 2) {
    std::fputs(app.help().c_str(), stderr);
    return fftconv_apps::kExitUsage;
  }
  const int status = fftconv_apps::parse(app, argc, argv, "fftconv-make-images: ");
  if (status >= 0) return status;
  try {
    for (const auto& action : actions) action();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fftconv-make-images: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
