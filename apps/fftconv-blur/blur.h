// The blur itself: images as a depthwise convolution (groups = channels, one kernel for every
// channel, "same" output size) through fftconv's public API, on the GPU or the CPU.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include <fftconv/fftconv.hpp>

#include "image_io.h"
#include "kernel.h"

namespace blur {

/// What lies beyond the image edge: the convolution's own border (fftconv::Border), which the
/// plan applies as it reads the image. kZero: zeros, edges darken; kReflect: the image mirrored
/// about its edge pixel (d c b | a b c d | c b a), repeatedly (OpenCV's BORDER_REFLECT_101);
/// kReplicate: the edge pixels repeated; kCircular: the image repeated.
using Border = fftconv::Border;

const char* border_name(Border b);
/// Parses "zero", "reflect", "replicate" or "circular"; throws UserError otherwise.
Border parse_border(const std::string& name);

/// Times of one batch, in milliseconds (host clock). Per image: divide by `images`.
struct BatchTiming {
  int images = 0;
  double plan_ms = 0.0;      ///< building a plan (0 when one was reused)
  double prepare_ms = 0.0;   ///< the images' planes into the input tensor
  double upload_ms = 0.0;    ///< host to device (GPU only)
  double forward_ms = 0.0;   ///< Plan::forward until its results are ready
  double download_ms = 0.0;  ///< device to host (GPU only)
  double finish_ms = 0.0;    ///< output tensor to images
  double blur_ms() const { return prepare_ms + upload_ms + forward_ms + download_ms + finish_ms; }
  bool new_plan = false;
  std::string plan;  ///< Plan::describe() of the plan that ran
  fftconv::PlanInfo info;
};

/// Blurs batches of images that share a size and channel count, one forward pass per batch.
/// Plans (with the kernel kept as their filter) are cached by batch shape, the most recently
/// used few only, since each holds buffers the size of its batch.
class Blurrer {
 public:
  /// `backend` must be kGpu or kCpu (resolve kAuto before).
  Blurrer(Kernel kernel, Border border, fftconv::Backend backend);
  ~Blurrer();
  Blurrer(const Blurrer&) = delete;
  Blurrer& operator=(const Blurrer&) = delete;

  /// Blurs `images` (at least one, all of the first one's size and channels) into `out`.
  BatchTiming blur(const std::vector<const Image*>& images, std::vector<Image>* out);

  fftconv::Backend backend() const { return backend_; }
  const Kernel& kernel() const { return kernel_; }

  /// The descriptor a batch of n images of w x h x c runs as.
  fftconv::ConvDesc desc_for(int n, int channels, int height, int width) const;

 private:
  struct Entry;
  Entry& plan_for(int n, int channels, int height, int width, BatchTiming* timing);

  Kernel kernel_;
  Border border_;
  fftconv::Backend backend_;
  std::list<std::unique_ptr<Entry>> plans_;  // most recently used first
};

}  // namespace blur
