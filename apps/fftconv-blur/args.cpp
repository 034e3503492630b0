// fftconv-blur's command line (CLI11).
#include "args.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "blur.h"
#include "cli.h"
#include "image_io.h"

namespace blur {

int parse_int(const std::string& opt, const std::string& v, int lo, int hi) {
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < lo || n > hi) {
    throw UserError(opt + " expects an integer from " + std::to_string(lo) + " to " +
                    std::to_string(hi) + ", not '" + v + "'");
  }
  return static_cast<int>(n);
}

int parse_args(int argc, char** argv, Args& a) {
  CLI::App app(
      "Blurs images with a large kernel through an FFT convolution, on the GPU or the CPU.\n"
      "INPUT is an image file (PNG, JPEG, PGM/PPM, BMP, TGA) or a folder (its image files, not\n"
      "recursive). Each result is an 8-bit PNG named <name>_blur.png, channels blurred alike.\n"
      "The kernel is a 45x45 Gaussian, sigma (45-1)/6, unless --size, --sigma or --kernel say\n"
      "otherwise.",
      "fftconv-blur");
  fftconv_apps::configure(app);
  app.footer(
      "Exit status: 0 every result written, 1 some image failed, 2 bad arguments or nothing "
      "to do.");
  const auto integer = [&](const char* flag, int& field, int lo, int hi) {
    return [flag, &field, lo, hi](const std::string& v) { field = parse_int(flag, v, lo, hi); };
  };

  const char* const kKernel = "Kernel";
  app.add_option("--size", a.size, "Gaussian size, odd (sigma defaults to (size-1)/6)")
      ->type_name("N|HxW")
      ->group(kKernel);
  app.add_option_function<std::string>(
         "--sigma",
         [&a](const std::string& v) {
           char* end = nullptr;
           a.sigma = std::strtod(v.c_str(), &end);
           if (v.empty() || *end != '\0' || !(a.sigma > 0.0) || !std::isfinite(a.sigma)) {
             throw UserError("--sigma expects a positive number, not '" + v + "'");
           }
           a.has_sigma = true;
         },
         "Gaussian sigma (alone: size 2*ceil(3*sigma)+1)")
      ->type_name("S")
      ->group(kKernel);
  app.add_option("--kernel", a.kernel_file,
                 "kernel file: text matrix ('#' comments) or .npy (float32/float64,\n"
                 "2-D, C order); sizes must be odd, the centre element is the anchor")
      ->type_name("FILE")
      ->group(kKernel);
  app.add_flag("--normalize", a.normalize, "scale the kernel to sum to 1")->group(kKernel);

  const char* const kOutput = "Output";
  app.add_option("--out", a.out_dir, "folder for the results, created if missing (default: .)")
      ->type_name("DIR")
      ->group(kOutput);
  app.add_option("-o,--output", a.out_file, "result file (.png) for a single input")
      ->type_name("FILE")
      ->group(kOutput);
  app.add_flag("--force", a.force, "allow a result to replace an input file")->group(kOutput);

  const char* const kRun = "Run";
  app.add_option("--border", a.border,
                 "what lies beyond the edges (default reflect: the image mirrored; replicate: "
                 "the edge pixels repeated; circular: the image repeated)")
      ->type_name("zero|reflect|replicate|circular")
      ->group(kRun);
  app.add_option("--device", a.device, "where to run (default auto: the GPU when there is one)")
      ->type_name("gpu|cpu|auto")
      ->group(kRun);
  app.add_option_function<std::string>("--batch", integer("--batch", a.batch, 1, 4096),
                                       "images of one size per forward pass (default 8 on\n"
                                       "the GPU, 1 on the CPU)")
      ->type_name("N")
      ->group(kRun);
  app.add_option_function<std::string>("--threads", integer("--threads", a.threads, 1, 4096),
                                       "CPU threads (default $FFTCONV_CPU_THREADS, else all cores)")
      ->type_name("N")
      ->group(kRun);
  app.add_option_function<std::string>("--repeat", integer("--repeat", a.repeat, 1, 1000),
                                       "blur every batch N times and report the median (timing)")
      ->type_name("N")
      ->group(kRun);
  app.add_flag("-q,--quiet", a.quiet, "no line per image")->group(kRun);

  app.add_option("INPUT", a.inputs, "image files and folders")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);

  const int status = fftconv_apps::parse(app, argc, argv, "fftconv-blur: error: ");
  if (status >= 0) return status;
  if (a.inputs.empty()) throw UserError("no input images (see --help)");
  if (!a.out_file.empty() && !a.out_dir.empty()) throw UserError("give --out or -o, not both");
  if (!a.kernel_file.empty() && (a.has_sigma || !a.size.empty())) {
    throw UserError("--kernel replaces the Gaussian: drop --size and --sigma");
  }
  if (a.device != "gpu" && a.device != "cpu" && a.device != "auto") {
    throw UserError("unknown device '" + a.device + "' (expected gpu, cpu or auto)");
  }
  blur::parse_border(a.border);
  return -1;
}

}  // namespace blur
