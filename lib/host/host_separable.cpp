#include "host/host_separable.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "host/host_threads.h"

namespace fftconv::detail {

namespace {

/// [lo, hi) of the q in [0, count) with 0 <= q * stride + offset < extent (stride >= 1).
struct Span {
  std::int64_t lo, hi;
};
Span span(std::int64_t offset, std::int64_t stride, std::int64_t extent, std::int64_t count) {
  // q * stride + offset >= 0  <=>  q >= ceil(-offset / stride)
  std::int64_t lo = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  // q * stride + offset <= extent - 1  <=>  q <= floor((extent - 1 - offset) / stride)
  const std::int64_t top = extent - 1 - offset;
  std::int64_t hi = top < 0 ? 0 : top / stride + 1;
  lo = std::min(lo, count);
  hi = std::clamp(hi, lo, count);
  return {lo, hi};
}

}  // namespace

HostSeparable::HostSeparable(const ConvDesc& d, LowRankFilter f, int threads)
    : d_(d), f_(std::move(f)), threads_(threads) {}

std::size_t HostSeparable::bytes() const {
  std::size_t b = 0;
  for (const LowRankPlane& p : f_.planes) b += (p.cols.size() + p.rows.size()) * sizeof(float);
  return b;
}

std::string HostSeparable::describe() const {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "separable, rank %d, factors within %.1e of the filter (relative)",
                f_.max_rank, f_.worst_rel_error);
  return buf;
}

double HostSeparable::macs(const ConvDesc& d, Pass pass, int rank) {
  const double planes = double(d.n) * double(d.k) * double(d.c_per_group()) * rank;
  const double ho = double(d.out_h()), wo = double(d.out_w());
  if (pass == Pass::kBackwardData) {
    // Columns of every output row scattered over the input width, then rows over the height.
    return planes * (ho * wo * d.s + ho * d.w * d.r);
  }
  return planes * (double(d.h) * wo * d.s + ho * wo * d.r);
}

void HostSeparable::forward(const float* x, const float* bias, float* y) const {
  const ConvDesc& d = d_;
  const std::int64_t cg = d.c_per_group(), kg = d.k_per_group();
  const std::int64_t ho = d.out_h(), wo = d.out_w(), h = d.h, w = d.w;
  const std::int64_t planes = d.n * d.k;
  parallel_for(planes, threads_, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> rowpass(static_cast<std::size_t>(h * wo));  // one input plane, output columns
    for (std::int64_t nk = begin; nk < end; ++nk) {
      const std::int64_t n = nk / d.k, k = nk % d.k, g = k / kg;
      float* out = y + nk * ho * wo;
      std::fill(out, out + ho * wo, bias ? bias[k] : 0.0f);
      for (std::int64_t ci = 0; ci < cg; ++ci) {
        const float* in = x + (n * d.c + g * cg + ci) * h * w;
        const LowRankPlane& p = f_.planes[static_cast<std::size_t>(k * cg + ci)];
        for (int t = 0; t < p.rank; ++t) {
          const float* row = p.rows.data() + t * d.s;
          const float* col = p.cols.data() + t * d.r;
          // Row pass: every input row at the output columns, a tap at a time over the columns
          // it reaches (contiguous for stride 1, so the loop vectorises).
          for (std::int64_t i = 0; i < h; ++i) {
            const float* src = in + i * w;
            float* dst = rowpass.data() + i * wo;
            std::fill(dst, dst + wo, 0.0f);
            for (std::int64_t s = 0; s < d.s; ++s) {
              const std::int64_t off = s * d.dil_w - d.pad_w;
              const Span q = span(off, d.stride_w, w, wo);
              const float tap = row[s];
              if (d.stride_w == 1) {
                for (std::int64_t o = q.lo; o < q.hi; ++o) dst[o] += tap * src[o + off];
              } else {
                for (std::int64_t o = q.lo; o < q.hi; ++o) dst[o] += tap * src[o * d.stride_w + off];
              }
            }
          }
          // Column pass into the output.
          for (std::int64_t o = 0; o < ho; ++o) {
            const std::int64_t i0 = o * d.stride_h - d.pad_h;
            float* dst = out + o * wo;
            for (std::int64_t r = 0; r < d.r; ++r) {
              const std::int64_t i = i0 + r * d.dil_h;
              if (i < 0 || i >= h) continue;
              const float c = col[r];
              const float* src = rowpass.data() + i * wo;
              for (std::int64_t q = 0; q < wo; ++q) dst[q] += c * src[q];
            }
          }
        }
      }
    }
  });
}

void HostSeparable::backward_data(const float* dy, float* dx) const {
  const ConvDesc& d = d_;
  const std::int64_t cg = d.c_per_group(), kg = d.k_per_group();
  const std::int64_t ho = d.out_h(), wo = d.out_w(), h = d.h, w = d.w;
  const std::int64_t planes = d.n * d.c;
  parallel_for(planes, threads_, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> colpass(static_cast<std::size_t>(ho * w));  // output rows, input columns
    for (std::int64_t nc = begin; nc < end; ++nc) {
      const std::int64_t n = nc / d.c, c = nc % d.c, g = c / cg, ci = c % cg;
      float* out = dx + nc * h * w;
      std::fill(out, out + h * w, 0.0f);
      for (std::int64_t kk = 0; kk < kg; ++kk) {
        const std::int64_t k = g * kg + kk;
        const float* grad = dy + (n * d.k + k) * ho * wo;
        const LowRankPlane& p = f_.planes[static_cast<std::size_t>(k * cg + ci)];
        for (int t = 0; t < p.rank; ++t) {
          const float* row = p.rows.data() + t * d.s;
          const float* col = p.cols.data() + t * d.r;
          // Adjoint of the column pass of forward()'s row pass: each output column scattered
          // over the input columns it read.
          std::fill(colpass.begin(), colpass.end(), 0.0f);
          for (std::int64_t o = 0; o < ho; ++o) {
            const float* src = grad + o * wo;
            float* dst = colpass.data() + o * w;
            for (std::int64_t s = 0; s < d.s; ++s) {
              const std::int64_t off = s * d.dil_w - d.pad_w;
              const Span q = span(off, d.stride_w, w, wo);
              const float tap = row[s];
              if (d.stride_w == 1) {
                for (std::int64_t e = q.lo; e < q.hi; ++e) dst[e + off] += tap * src[e];
              } else {
                for (std::int64_t e = q.lo; e < q.hi; ++e) dst[e * d.stride_w + off] += tap * src[e];
              }
            }
          }
          // Then each output row over the input rows it read.
          for (std::int64_t o = 0; o < ho; ++o) {
            const std::int64_t i0 = o * d.stride_h - d.pad_h;
            const float* src = colpass.data() + o * w;
            for (std::int64_t r = 0; r < d.r; ++r) {
              const std::int64_t i = i0 + r * d.dil_h;
              if (i < 0 || i >= h) continue;
              const float c = col[r];
              float* dst = out + i * w;
              for (std::int64_t j = 0; j < w; ++j) dst[j] += c * src[j];
            }
          }
        }
      }
    }
  });
}

}  // namespace fftconv::detail
