// fftconv-blur end to end on the CPU: shipped and generated images blurred by the app and
// compared with an fp64 direct convolution quantised the same way; bad inputs get clear errors
// and the documented exit codes. Also the kernel readers and the border rule on their own.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "blur.h"
#include "image_io.h"
#include "kernel.h"

namespace fs = std::filesystem;

namespace {

const std::string kApp = FFTCONV_BLUR_APP;
const std::string kMakeImages = FFTCONV_MAKE_IMAGES_APP;
const std::string kData = FFTCONV_TEST_DATA_DIR;

struct RunResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

RunResult run(const std::string& args) {
  RunResult r;
  const std::string cmd = kApp + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t got;
  while ((got = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, got);
  const int raw = pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

// A fresh folder per test, removed afterwards.
class BlurApp : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("fftconv-blur-" + std::string(info->name()) + "-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

// The reference: y[c,p,q] = sum_{i,j} k[i,j] * x[c, p+i-hr, q+j-hc] in double, the border by
// mirroring (wrapping) step by step or clamping (independent of the engine's index formulas),
// rounded and clamped as a PNG stores it.
std::vector<int> oracle(const blur::Image& im, const blur::Kernel& k, blur::Border border) {
  const int hr = (k.rows - 1) / 2, hc = (k.cols - 1) / 2;
  auto source = [&](int i, int n) {  // -1: zero
    if (i >= 0 && i < n) return i;
    switch (border) {
      case blur::Border::kReflect:
        if (n == 1) return 0;
        while (i < 0 || i >= n) i = i < 0 ? -i : 2 * (n - 1) - i;
        return i;
      case blur::Border::kReplicate:
        return i < 0 ? 0 : n - 1;
      case blur::Border::kCircular:
        while (i < 0) i += n;
        while (i >= n) i -= n;
        return i;
      default:
        return -1;
    }
  };
  std::vector<int> out(im.planes.size());
  for (int c = 0; c < im.channels; ++c) {
    const float* x = im.plane(c);
    for (int p = 0; p < im.height; ++p) {
      for (int qq = 0; qq < im.width; ++qq) {
        double acc = 0.0;
        for (int i = 0; i < k.rows; ++i) {
          const int y = source(p + i - hr, im.height);
          if (y < 0) continue;
          const float* row = x + std::size_t(y) * im.width;
          const float* kr = k.values.data() + std::size_t(i) * k.cols;
          for (int j = 0; j < k.cols; ++j) {
            const int xx = source(qq + j - hc, im.width);
            if (xx < 0) continue;
            acc += double(kr[j]) * double(row[xx]);
          }
        }
        const double v = std::nearbyint(acc);
        out[(std::size_t(c) * im.height + p) * im.width + qq] = static_cast<int>(v < 0     ? 0
                                                                                 : v > 255 ? 255
                                                                                           : v);
      }
    }
  }
  return out;
}

// Compares a written PNG with the oracle: every pixel within one level, nearly all equal.
void expect_matches_oracle(const fs::path& input, const fs::path& output, const blur::Kernel& k,
                           blur::Border border) {
  const blur::Image in = blur::load_image(input.string());
  const blur::Image out = blur::load_image(output.string());
  ASSERT_EQ(out.width, in.width) << output;
  ASSERT_EQ(out.height, in.height) << output;
  ASSERT_EQ(out.channels, in.channels) << output;
  const std::vector<int> ref = oracle(in, k, border);
  std::size_t equal = 0, worst_at = 0;
  int worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const int diff = std::abs(static_cast<int>(out.planes[i]) - ref[i]);
    if (diff == 0) ++equal;
    if (diff > worst) worst = diff, worst_at = i;
  }
  EXPECT_LE(worst, 1) << output << ": pixel " << worst_at << " is " << out.planes[worst_at]
                      << ", the oracle says " << ref[worst_at];
  // fp32 FFT results differ from fp64 by ~1e-5 levels: only values next to a .5 round apart.
  EXPECT_GE(double(equal) / ref.size(), 0.99) << output << ": " << equal << " of " << ref.size();
  std::printf("[ oracle   ] %s: %zu of %zu values equal, max diff %d\n", output.filename().c_str(),
              equal, ref.size(), worst);
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ---- results against the oracle ----------------------------------------------------------------

TEST_F(BlurApp, ShippedPhotoMatchesOracle) {
  // The README's blur: a 45x45 Gaussian (sigma 44/6), mirrored borders.
  const fs::path in = fs::path(kData) / "images" / "chelsea.png";
  const RunResult r = run("--device cpu --out " + q(dir_) + " " + q(in));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "algo=fft")) << r.output;
  EXPECT_TRUE(contains(r.output, "backend=cpu")) << r.output;
  EXPECT_TRUE(contains(r.output, "chelsea_blur.png: blur ")) << r.output;
  expect_matches_oracle(in, dir_ / "chelsea_blur.png", blur::gaussian_kernel(45, 45, 44.0 / 6),
                        blur::Border::kReflect);
}

TEST_F(BlurApp, ZeroBorderWithNonSquareNpyKernel) {
  blur::Kernel k;
  k.rows = 9;
  k.cols = 15;
  for (int i = 0; i < k.rows * k.cols; ++i) k.values.push_back(0.002f * ((i * 37) % 23) + 0.001f);
  blur::write_npy_kernel((dir_ / "k.npy").string(), k);
  const fs::path in = fs::path(kData) / "images" / "camera.png";
  const RunResult r = run("--device cpu --border zero --kernel " + q(dir_ / "k.npy") + " -o " +
                          q(dir_ / "cam.png") + " " + q(in));
  ASSERT_EQ(r.status, 0) << r.output;
  expect_matches_oracle(in, dir_ / "cam.png", k, blur::Border::kZero);
}

// Replicate and circular borders, with a kernel wider than the image's short side (the plan
// reads beyond one extent: circular wraps again).
TEST_F(BlurApp, ReplicateAndCircularBorders) {
  const fs::path images = dir_ / "in";
  ASSERT_EQ(std::system((kMakeImages + " --test-images " + q(images)).c_str()), 0);
  const fs::path in = images / "noise_rgba_33x17.png";
  const blur::Kernel k = blur::gaussian_kernel(21, 41, 6.0);
  for (blur::Border b : {blur::Border::kReplicate, blur::Border::kCircular}) {
    const std::string name = std::string(blur::border_name(b)) + ".png";
    const RunResult r = run("--device cpu --size 21x41 --sigma 6 --border " +
                            std::string(blur::border_name(b)) + " -o " + q(dir_ / name) + " " +
                            q(in));
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_TRUE(contains(r.output, std::string("border ") + blur::border_name(b))) << r.output;
    expect_matches_oracle(in, dir_ / name, k, b);
  }
}

TEST_F(BlurApp, GeneratedImagesEveryFormatAndBatches) {
  const fs::path images = dir_ / "in";
  ASSERT_EQ(std::system((kMakeImages + " --test-images " + q(images)).c_str()), 0);
  // Three images of one size so that the CPU also runs a batch of three.
  fs::copy_file(images / "gradient_rgb_257x131.png", images / "gradient_copy1.png");
  fs::copy_file(images / "gradient_rgb_257x131.png", images / "gradient_copy2.png");
  write_bytes(images / "notes.txt", "not an image, skipped by the folder scan");
  const blur::Kernel k = blur::gaussian_kernel(7, 11, 2.5);
  const RunResult r = run("--device cpu --batch 3 --size 7x11 --sigma 2.5 --out " +
                          q(dir_ / "out") + " " + q(images));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "batch of 3")) << r.output;
  EXPECT_TRUE(contains(r.output, "done: 7 written, 0 failed")) << r.output;
  for (const char* name :
       {"gradient_rgb_257x131", "gradient_copy1", "gradient_copy2", "checker_gray_64x48",
        "noise_rgba_33x17", "impulse_rgb_101x101", "dot_gray_1x1"}) {
    fs::path in;
    for (const char* ext : {".png", ".pgm", ".ppm"}) {
      if (fs::exists(images / (std::string(name) + ext))) in = images / (std::string(name) + ext);
    }
    expect_matches_oracle(in, dir_ / "out" / (std::string(name) + "_blur.png"), k,
                          blur::Border::kReflect);
  }
}

TEST_F(BlurApp, ShippedKernelFilesEqualTheBuiltInGaussian) {
  const fs::path images = dir_ / "in";
  ASSERT_EQ(std::system((kMakeImages + " --test-images " + q(images)).c_str()), 0);
  const fs::path impulse = images / "impulse_rgb_101x101.ppm";
  const std::string kernels = kData + "/kernels/gaussian45_sigma7";
  ASSERT_EQ(
      run("--device cpu --size 45 --sigma 7 -o " + q(dir_ / "a.png") + " " + q(impulse)).status, 0);
  ASSERT_EQ(
      run("--device cpu --kernel '" + kernels + ".txt' -o " + q(dir_ / "b.png") + " " + q(impulse))
          .status,
      0);
  ASSERT_EQ(
      run("--device cpu --kernel '" + kernels + ".npy' -o " + q(dir_ / "c.png") + " " + q(impulse))
          .status,
      0);
  EXPECT_EQ(read_bytes(dir_ / "a.png"), read_bytes(dir_ / "b.png"));
  EXPECT_EQ(read_bytes(dir_ / "a.png"), read_bytes(dir_ / "c.png"));
  // The blur of a dot is the kernel: 255 * k at the centre.
  const blur::Kernel k = blur::load_kernel(kernels + ".txt");
  const blur::Image out = blur::load_image((dir_ / "a.png").string());
  EXPECT_EQ(out.planes[50 * 101 + 50], std::nearbyint(255.0 * k.values[22 * 45 + 22]));
  expect_matches_oracle(impulse, dir_ / "a.png", blur::gaussian_kernel(45, 45, 7.0),
                        blur::Border::kReflect);
}

// ---- bad inputs ----------------------------------------------------------------------------

TEST_F(BlurApp, UnreadableAndOddImagesFailClearly) {
  write_bytes(dir_ / "empty.png", "");
  const std::string png = read_bytes(fs::path(kData) / "images" / "chelsea.png");
  write_bytes(dir_ / "truncated.png", png.substr(0, 300));
  write_bytes(dir_ / "text.png", "hello, I am not a PNG\n");
  const struct {
    const char* file;
    const char* message;
  } cases[] = {
      {"missing.png", "No such file or directory"},
      {"empty.png", "the file is empty"},
      {"truncated.png", "damaged or truncated"},
      {"text.png", "not an image in a known format"},
  };
  for (const auto& c : cases) {
    const RunResult r = run("--device cpu --out " + q(dir_ / "out") + " " + q(dir_ / c.file));
    EXPECT_EQ(r.status, 1) << c.file << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "error: cannot read")) << r.output;
    EXPECT_TRUE(contains(r.output, c.file)) << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << r.output;
  }
  // A bad file among good ones: the good ones are still written.
  fs::copy_file(fs::path(kData) / "images" / "camera.png", dir_ / "good.png");
  const RunResult r = run("--device cpu --size 5 --out " + q(dir_ / "out") + " " +
                          q(dir_ / "good.png") + " " + q(dir_ / "empty.png"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "done: 1 written, 1 failed")) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "out" / "good_blur.png"));
}

TEST_F(BlurApp, BadKernelFilesFailClearly) {
  const fs::path in = fs::path(kData) / "images" / "camera.png";
  auto npy = [](const std::string& descr, const std::string& order, const std::string& shape,
                std::size_t data_bytes) {
    std::string header =
        "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header.push_back('\n');
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(header.size() & 0xff);
    bytes += static_cast<char>(header.size() >> 8);
    return bytes + header + std::string(data_bytes, '\0');
  };
  const struct {
    const char* file;
    std::string content;
    const char* message;
  } cases[] = {
      {"ragged.txt", "1 2 3\n4 5\n6 7 8\n", "line 2: 2 values, the rows above have 3"},
      {"word.txt", "# a comment\n1 2 3\n4 five 6\n7 8 9\n", "line 3: 'five' is not a number"},
      {"nan.txt", "1 nan 1\n1 1 1\n1 1 1\n", "not a finite float32 number"},
      {"huge.txt", "1 1e39 1\n1 1 1\n1 1 1\n", "not a finite float32 number"},
      {"even.txt", "1 1 1 1\n1 1 1 1\n1 1 1 1\n1 1 1 1\n", "both sizes must be odd"},
      {"comments.txt", "# only comments\n\n", "no values"},
      {"empty.txt", "", "the file is empty"},
      {"int.npy", npy("<i4", "False", "(3, 3)", 36), "dtype '<i4' is not supported"},
      {"big.npy", npy(">f4", "False", "(3, 3)", 36), "big-endian"},
      {"fortran.npy", npy("<f4", "True", "(3, 3)", 36), "Fortran-ordered"},
      {"cube.npy", npy("<f4", "False", "(3, 3, 3)", 108), "3-D"},
      {"short.npy", npy("<f8", "False", "(5, 5)", 100), "(truncated)"},
      {"even.npy", npy("<f4", "False", "(4, 5)", 80), "both sizes must be odd"},
      {"garbage.npy", "not numpy at all", "not a .npy file"},
  };
  for (const auto& c : cases) {
    write_bytes(dir_ / c.file, c.content);
    const RunResult r = run("--device cpu --kernel " + q(dir_ / c.file) + " --out " +
                            q(dir_ / "out") + " " + q(in));
    EXPECT_EQ(r.status, 2) << c.file << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << c.file << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.file)) << c.file << ": " << r.output;
  }
  const RunResult r = run("--device cpu --kernel " + q(dir_ / "absent.txt") + " " + q(in));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "cannot read kernel")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));  // nothing was written
}

TEST_F(BlurApp, UnwritableOutputFailsClearly) {
  const fs::path in = fs::path(kData) / "images" / "camera.png";
  write_bytes(dir_ / "a_file", "x");
  // A folder below a regular file cannot exist, whoever runs the test (root included).
  RunResult r = run("--device cpu --size 5 --out " + q(dir_ / "a_file" / "sub") + " " + q(in));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "cannot create the output folder")) << r.output;
  r = run("--device cpu --size 5 -o " + q(dir_ / "a_file" / "x.png") + " " + q(in));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "cannot create the output folder")) << r.output;
  fs::create_directories(dir_ / "folder.png");
  r = run("--device cpu --size 5 -o " + q(dir_ / "folder.png") + " " + q(in));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "is a folder")) << r.output;
  r = run("--device cpu --size 5 -o " + q(dir_ / "x.jpg") + " " + q(in));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "results are PNG files")) << r.output;
}

TEST_F(BlurApp, NeverOverwritesAnInputWithoutForce) {
  const fs::path a = dir_ / "a.png";
  fs::copy_file(fs::path(kData) / "images" / "camera.png", a);
  const std::string before = read_bytes(a);
  RunResult r = run("--device cpu --size 5 -o " + q(a) + " " + q(a));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "would replace the input")) << r.output;
  EXPECT_EQ(read_bytes(a), before);
  // Another spelling of the same path is caught too.
  r = run("--device cpu --size 5 -o " + q(dir_ / "." / "a.png") + " " + q(a));
  EXPECT_EQ(r.status, 2) << r.output;
  // A folder holding x.png and x_blur.png, blurred into itself: x_blur.png is an input.
  fs::copy_file(a, dir_ / "a_blur.png");
  r = run("--device cpu --size 5 --out " + q(dir_) + " " + q(dir_));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "would replace the input")) << r.output;
  EXPECT_EQ(read_bytes(dir_ / "a_blur.png"), before);
  // Two inputs with one result name.
  fs::create_directories(dir_ / "other");
  fs::copy_file(a, dir_ / "other" / "a.png");
  r = run("--device cpu --size 5 --out " + q(dir_ / "out") + " " + q(a) + " " +
          q(dir_ / "other" / "a.png"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "would both be written")) << r.output;
  // --force allows it.
  r = run("--device cpu --size 5 --force -o " + q(a) + " " + q(a));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(read_bytes(a), before);
}

TEST_F(BlurApp, BadOptionsFailClearly) {
  const std::string in = q(fs::path(kData) / "images" / "camera.png");
  const struct {
    std::string args;
    const char* message;
  } cases[] = {
      {"--device tpu " + in, "unknown device 'tpu'"},
      {"--border wrap " + in, "unknown border 'wrap'"},
      {"--size 44 " + in, "both sizes must be odd"},
      {"--size 0 " + in, "--size expects an integer"},
      {"--sigma -1 " + in, "--sigma expects a positive number"},
      {"--batch 0 " + in, "--batch expects an integer"},
      {"--threads x " + in, "--threads expects an integer"},
      {"--kernel k.txt --sigma 3 " + in, "--kernel replaces the Gaussian"},
      {"-o x.png " + in + " " + in + "x", "-o names one result"},
      {"--frobnicate " + in, "unknown option '--frobnicate'"},
      {"--device cpu", "no input images"},
      {"--out " + q(dir_) + " " + q(dir_), "no image files in folder"},
  };
  for (const auto& c : cases) {
    const RunResult r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << c.args << ": " << r.output;
  }
  EXPECT_EQ(run("--help").status, 0);
}

TEST_F(BlurApp, GpuRequestedWithoutGpu) {
  if (fftconv::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const RunResult r = run("--device gpu " + q(fs::path(kData) / "images" / "camera.png"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "no CUDA device")) << r.output;
  const RunResult a = run("--device auto --size 5 --out " + q(dir_) + " " +
                          q(fs::path(kData) / "images" / "camera.png"));
  EXPECT_EQ(a.status, 0) << a.output;
  EXPECT_TRUE(contains(a.output, "device cpu (auto: no CUDA device)")) << a.output;
}

// ---- pieces --------------------------------------------------------------------------------

TEST(BlurPieces, BorderNamesRoundTrip) {
  for (blur::Border b : {blur::Border::kZero, blur::Border::kReflect, blur::Border::kReplicate,
                         blur::Border::kCircular}) {
    EXPECT_EQ(blur::parse_border(blur::border_name(b)), b);
  }
  EXPECT_THROW(blur::parse_border("wrap"), blur::UserError);
}

TEST(BlurPieces, TextKernelsAllowCommentsCommasAndTabs) {
  const blur::Kernel k =
      blur::parse_text_kernel("# 3x3 box\n\n1, 2,\t3  # first row\r\n4 5 6\n  7 8 9\n", "t");
  EXPECT_EQ(k.rows, 3);
  EXPECT_EQ(k.cols, 3);
  EXPECT_EQ(k.values, (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(BlurPieces, NpyRoundTripAndFloat64) {
  const fs::path p = fs::temp_directory_path() / ("fftconv-npy-" + std::to_string(getpid()));
  blur::Kernel k = blur::gaussian_kernel(5, 3, 1.0);
  blur::write_npy_kernel(p.string(), k);
  const blur::Kernel back = blur::load_kernel(p.string());
  fs::remove(p);
  EXPECT_EQ(back.rows, 5);
  EXPECT_EQ(back.cols, 3);
  EXPECT_EQ(back.values, k.values);
  // A version-2 header with float64 data.
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 3), }";
  header.append((64 - (12 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::vector<unsigned char> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
  const std::uint32_t len = static_cast<std::uint32_t>(header.size());
  for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<unsigned char>(len >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (double v : {0.25, -1.5, 3.0}) {
    unsigned char b[8];
    std::memcpy(b, &v, 8);
    bytes.insert(bytes.end(), b, b + 8);
  }
  const blur::Kernel k2 = blur::parse_npy(bytes, "v2");
  EXPECT_EQ(k2.values, (std::vector<float>{0.25f, -1.5f, 3.0f}));
}

TEST(BlurPieces, GaussianIsNormalisedAndSymmetric) {
  const blur::Kernel k = blur::gaussian_kernel(45, 45, 7.0);
  EXPECT_NEAR(k.sum(), 1.0, 1e-6);
  for (int i = 0; i < 45; ++i) {
    for (int j = 0; j < 45; ++j) {
      EXPECT_EQ(k.values[i * 45 + j], k.values[(44 - i) * 45 + j]);
      EXPECT_EQ(k.values[i * 45 + j], k.values[j * 45 + i]);
    }
  }
  EXPECT_THROW(blur::gaussian_kernel(4, 5, 1.0), blur::UserError);
  EXPECT_THROW(blur::gaussian_kernel(5, 5, 0.0), blur::UserError);
}

}  // namespace
