// Borders on the host (the CPU backend), and the bordered problem's descriptor.
#include <vector>

#include "geometry/index_math.h"
#include "host/host_threads.h"
#include "stages/border.h"

namespace fftconv::detail {

ConvDesc bordered_desc(const ConvDesc& d) {
  ConvDesc b = d;
  b.h = d.h + 2 * d.pad_h;
  b.w = d.w + 2 * d.pad_w;
  b.pad_h = b.pad_w = 0;
  b.border = Border::kZero;
  return b;
}

std::int64_t bordered_elems(const ConvDesc& d) {
  return d.n * d.c * (d.h + 2 * d.pad_h) * (d.w + 2 * d.pad_w);
}

namespace {
constexpr std::int64_t kMinRowsPerThread = 64;
}

void border_copy_host(const ConvDesc& d, const float* x, float* xb, int threads) {
  const std::int64_t hb = d.h + 2 * d.pad_h, wb = d.w + 2 * d.pad_w;
  std::vector<std::int64_t> cols(static_cast<std::size_t>(wb));
  for (std::int64_t j = 0; j < wb; ++j) cols[j] = border_index(j - d.pad_w, d.w, d.border);
  parallel_for(d.n * d.c * hb, threads, kMinRowsPerThread, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const std::int64_t plane = r / hb, si = border_index(r % hb - d.pad_h, d.h, d.border);
      const float* src = x + (plane * d.h + si) * d.w;
      float* dst = xb + r * wb;
      for (std::int64_t j = 0; j < wb; ++j) dst[j] = si < 0 || cols[j] < 0 ? 0.0f : src[cols[j]];
    }
  });
}

void border_fold_host(const ConvDesc& d, const float* dxb, float* dx, int threads) {
  const std::int64_t hb = d.h + 2 * d.pad_h, wb = d.w + 2 * d.pad_w;
  std::vector<BorderPreimages<>> cols(static_cast<std::size_t>(d.w));
  for (std::int64_t j = 0; j < d.w; ++j) cols[j] = border_preimages(j, d.w, d.pad_w, d.border);
  parallel_for(d.n * d.c * d.h, threads, kMinRowsPerThread, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const std::int64_t plane = r / d.h, i = r % d.h;
      const BorderPreimages<> rows = border_preimages(i, d.h, d.pad_h, d.border);
      const float* src = dxb + plane * hb * wb;
      for (std::int64_t j = 0; j < d.w; ++j) {
        const BorderPreimages<>& c = cols[j];
        float acc = 0.0f;  // the device's order: per row, its columns' two progressions
        for (int a = 0; a < 2; ++a) {
          const std::int64_t r0 = a == 0 ? rows.first : rows.first2;
          const std::int64_t rn = a == 0 ? rows.count : rows.count2;
          for (std::int64_t t = 0; t < rn; ++t) {
            const float* row = src + (r0 + t * rows.step + d.pad_h) * wb + d.pad_w;
            for (std::int64_t u = 0; u < c.count; ++u) acc += row[c.first + u * c.step];
            for (std::int64_t u = 0; u < c.count2; ++u) acc += row[c.first2 + u * c.step];
          }
        }
        dx[r * d.w + j] = acc;
      }
    }
  });
}

}  // namespace fftconv::detail
