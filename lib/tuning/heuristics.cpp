#include "tuning/heuristics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "fused/fused_conv.h"

namespace fftconv::detail {

namespace {

// ---- device model (H200) ----------------------------------------------------------------------
// Streaming stages reach about 70% of the 4.3 TB/s device-to-device copy rate measured on the H200.
constexpr double kStreamBytesPerUs = 3.0e6;
// A batched 2D cuFFT of small planes reads and writes its data about twice (row and column passes).
constexpr double kFftPasses = 2.0;
// Relative cost per element of a transform length, by radix and by how many radices it mixes.
// Fitted to the FFT-size sweep in data/results/h200/suite-fft-sizes.json (fftconv-bench --fft all):
// cuFFT is fastest on single-radix lengths (photo_blur_rgb_2k: 2187 = 3^7 in 0.53 ms against
// 0.75 at 2160 = 2^4*3^3*5; multichannel_r45: 81 beats 80), and factors of 7 cost most
// (replknet_dw31_56: 75 and 80 lose to 72; strided2: 147 = 3*7^2 is 1.9x slower than 144).
constexpr double kRadixCost[] = {1.0 /*2*/, 1.0 /*3*/, 1.1 /*5*/, 1.4 /*7*/};
constexpr double kMixedRadixPenalty = 0.15;  // per radix beyond the first

// Sustained rate of the register-tiled per-frequency GEMM, in FLOP per microsecond.
constexpr double kGemmFlopsPerUs = 10.0e6;
// Small problems pay about 5 us per stage on the H200 (data/results/h200/suite-fft-sizes.json:
// seed3_landmark_same runs its five stages in 34 us, the streaming terms predict 5 us of that).
constexpr double kLaunchUs = 5.0;
constexpr int kFftLaunches = 5;  // pad, r2c, gemm, c2r, clip
// cuDNN strict fp32, measured on the H200 (suite-fft-sizes.json, best of cudnnFind): thin
// convolutions (depthwise, few channels per group) run at 4.5-5.7 TFLOP/s whatever the kernel;
// dense ones at ~40 TFLOP/s with small kernels (grouped 3x3: 39.6) and ~20 with large ones
// (strided2, 31x31: 19.8).
constexpr double kDirectThinFlopsPerUs = 5.0e6;
constexpr double kDirectDenseSmallFlopsPerUs = 40.0e6;
constexpr double kDirectDenseLargeFlopsPerUs = 20.0e6;
constexpr std::int64_t kDenseChannels = 16;    // Cg and Kg at least this: dense rates apply
constexpr std::int64_t kSmallKernelArea = 25;  // up to 5x5: Winograd / implicit-GEMM territory
// Below about 1e5 outputs cuDNN cannot fill the GPU and its rate drops in proportion
// (seed3_landmark_same, 9216 outputs: 0.3 TFLOP/s; seed3_cntk_valid, 32400: 4.5).
constexpr double kDirectFullOutputs = 1.0e5;
// cuDNN's backward passes against its forward (strict fp32, best algorithm, H200,
// data/results/h200/suite-passes-partial.txt): backward data 1.0-1.9x (replknet_dw31_14 2.24
// against 1.29 ms, slak_dw51_28 12.5 against 6.9), backward filter 1.0-4.8x (replknet_dw31_14
// 5.37 ms; landmark_heatmaps_dw68 through PyTorch 51.9 against 10.9). Rows where cuDNN runs its
// FFT algorithms cost the same in every pass; these are the middle of the direct ones.
constexpr double kDirectDgradFactor = 1.5;
constexpr double kDirectWgradFactor = 2.0;
// With dense channels cuDNN's backward passes cost about its forward (F.conv2d's fp32 backward
// over forward on the small-kernel parity set, data/results/h200/2026-12-04-parity: data
// 0.27-2.3, median 0.9; filter 0.3-1.4, median 0.8): the factors above are the thin rows'.
constexpr double kDirectDenseBackwardFactor = 1.0;
// cuDNN runs fp16 and bf16 convolutions with dense channels on tensor cores, while the FFT paths
// compute in fp32 whatever the dtype: on the small-kernel parity set (3x3 to 15x15, 32 to 512
// channels, groups 1 and 4; data/results/h200/2026-12-04-parity) F.conv2d in fp16 ran 0.8-19.5x
// faster than in fp32, median 4.4 over the 60 dense case-passes, and 28 of Auto's fp16 entries
// lost to it by more than 3% (up to 26x) against 7 in fp32. Depthwise ones gain 0.9-1.6x, and
// 16 channels little: dilated2 (16 channels, 15x15 dilated by 2) 3.0x, but from an fp32 time
// 2.4x above the dense-large rate, so that the speedup applies from 32 channels per group.
constexpr double kDirectHalfDenseSpeedup = 4.0;
constexpr std::int64_t kDirectHalfDenseChannels = 32;

// ---- GEMM tiling ------------------------------------------------------------------------------
// Threads wanted in flight: 132 SMs x 2048 threads is one full wave; below that, shrink tiles.
constexpr double kMinWaves = 1.0;
constexpr int kMaxRegTile = 8;

double radix_factor(std::int64_t n) {
  // Weighted mean of the per-radix costs over the prime factors, times the mixing penalty.
  const std::int64_t primes[] = {2, 3, 5, 7};
  double sum = 0.0;
  int count = 0, distinct = 0;
  for (int i = 0; i < 4; ++i) {
    distinct += n % primes[i] == 0;
    while (n % primes[i] == 0) {
      n /= primes[i];
      sum += kRadixCost[i];
      ++count;
    }
  }
  if (!count) return 1.0;
  return (1.0 + kMixedRadixPenalty * (distinct - 1)) * sum / count;
}

int pow2_ceil(std::int64_t v) {
  int t = 1;
  while (t < v && t < kMaxRegTile) t *= 2;
  return t;
}

}  // namespace

CgemmProblem forward_gemm_problem(const ConvDesc& d, const FftGeometry& g) {
  const std::int64_t cg = d.c_per_group(), kg = d.k_per_group(), bins = g.bins;
  CgemmProblem p;
  p.m = d.n * g.tiles();
  p.n = kg;
  p.k = cg;
  p.bins = bins;
  p.groups = d.groups;
  p.a_m = d.c * bins;  // X[n*tiles][c][f]
  p.a_k = bins;
  p.a_g = cg * bins;
  p.b_n = cg * bins;  // W[k][c'][f]
  p.b_k = bins;
  p.b_g = kg * cg * bins;
  p.c_m = d.k * bins;  // Y[n*tiles][k][f]
  p.c_n = bins;
  p.c_g = kg * bins;
  p.conj_b = true;  // cross-correlation: Y = X * conj(W)
  return p;
}

SpectrumPlanes spectrum_planes(const ConvDesc& d, const FftGeometry& g, Pass pass) {
  const std::int64_t images = d.n * g.tiles(), filters = d.k * d.c_per_group();
  switch (pass) {
    case Pass::kBackwardData:
      return {d.n * d.k, filters, d.n * d.c};
    case Pass::kBackwardFilter:
      return {d.n * d.c, d.n * d.k, filters};
    case Pass::kForward:
      break;
  }
  return {images * d.c, filters, images * d.k};
}

CgemmProblem gemm_problem(const ConvDesc& d, const FftGeometry& g, Pass pass) {
  if (pass == Pass::kForward) return forward_gemm_problem(d, g);
  const std::int64_t cg = d.c_per_group(), kg = d.k_per_group(), bins = g.bins;
  CgemmProblem p;
  p.bins = bins;
  p.groups = d.groups;
  if (pass == Pass::kBackwardData) {
    p.m = d.n;
    p.n = cg;
    p.k = kg;
    p.a_m = d.k * bins;  // DY[n][k][f]
    p.a_k = bins;
    p.a_g = kg * bins;
    p.b_n = bins;  // W[k][c'][f], read as B[c'][k]
    p.b_k = cg * bins;
    p.b_g = kg * cg * bins;
    p.c_m = d.c * bins;  // DX[n][c][f]
    p.c_n = bins;
    p.c_g = cg * bins;
  } else {
    p.m = kg;
    p.n = cg;
    p.k = d.n;
    p.a_m = bins;  // DY[n][k][f], read as A[k][n]
    p.a_k = d.k * bins;
    p.a_g = kg * bins;
    p.b_n = bins;  // X[n][c][f], read as B[c][n]
    p.b_k = d.c * bins;
    p.b_g = cg * bins;
    p.c_m = cg * bins;  // DW[k][c'][f]
    p.c_n = bins;
    p.c_g = kg * cg * bins;
    p.conj_a = true;  // correlation of x with dy
  }
  return p;
}

double estimate_fft_us(const ConvDesc& d, const FftGeometry& g, Pass pass) {
  const SpectrumPlanes planes = spectrum_planes(d, g, pass);
  const double planes_in = double(planes.a + planes.b);
  const double planes_out = double(planes.out);
  const double real_plane = double(g.fft_h) * g.pitch * 4.0;
  const double spec_plane = double(g.bins) * 8.0;
  const double esize = double(dtype_size(d.dtype));
  const double radix = 0.5 * (radix_factor(g.fft_h) + radix_factor(g.fft_w));

  // Tensors read by the pad stage and written by the clip stage, per pass; the clip reads the
  // result planes with the output stride (forward) or densely (backward).
  double read_elems = double(d.x_elems() + d.w_elems()), out_elems = double(d.y_elems());
  double clip_read = 4.0 * d.stride_w;
  if (pass == Pass::kBackwardData) {
    read_elems = double(d.y_elems() + d.w_elems());
    out_elems = double(d.x_elems());
    clip_read = 4.0;
  } else if (pass == Pass::kBackwardFilter) {
    read_elems = double(d.x_elems() + d.y_elems());
    out_elems = double(d.w_elems());
    clip_read = 4.0 * d.dil_w;
  }
  const double pad_bytes = read_elems * esize + planes_in * real_plane;
  const double r2c_bytes = planes_in * (real_plane + spec_plane) * kFftPasses * radix;
  const double gemm_bytes = (planes_in + planes_out) * spec_plane;
  const double c2r_bytes = planes_out * (real_plane + spec_plane) * kFftPasses * radix;
  const double clip_bytes = out_elems * (clip_read + esize);
  const double gemm_us =
      std::max(gemm_bytes / kStreamBytesPerUs, gemm_problem(d, g, pass).flops() / kGemmFlopsPerUs);
  return (pad_bytes + r2c_bytes + c2r_bytes + clip_bytes) / kStreamBytesPerUs + gemm_us +
         kFftLaunches * kLaunchUs;
}

namespace {
// ---- fused path (lib/fused) -------------------------------------------------------------------
// F threads per plane transform whole lines of F/2 complex points in registers. Measured on the
// H200 (data/results/h200/2026-12-04-fused/RUNS.md, run 3, kept filters, back-to-back): an SM
// turns out a plane in 8.5 us at 128x128 (landmark_heatmaps_dw68: 2176 planes in 154 us),
// 1.7 us at 64x64 (slak_dw51_28: 8192 in 105 us) and 0.47 us at 32x32 (replknet_dw31_14:
// 16384 in 58 us), about 8.6e-5 us * F^2 log2(F/2); a lone block (a grid no larger than the
// SMs) takes twice its share (seed3_landmark_same: one 128x128 plane in 17 us), and the filter
// kernel's lone block two thirds of that (11 us for one 128x128 filter). The sizes between the
// powers of two (mixed radices 3, 5 and 7 in their line DFTs, more arithmetic a point than
// radix 4's) are costed 15% above that rule until measured.
constexpr int kSmCount = 132;
constexpr double kSmemPerSm = 227.0 * 1024;
constexpr double kMixedRadixFactor = 1.15;

double fused_plane_sm_us(int size) {
  const double f = double(size);
  const double radix = (size & (size - 1)) == 0 ? 1.0 : kMixedRadixFactor;
  return 8.6e-5 * radix * f * f * std::log2(f / 2.0) + 0.1;
}

// A lone block's time over its share of an SM: the convolution kernel's.
constexpr double kLoneBlockFactor = 2.0;

// A kernel over `planes` planes, each `work` times a convolution plane's work; a grid no larger
// than the SMs takes `lone` times its share.
double fused_kernel_us(double planes, int size, double work, double lone = kLoneBlockFactor) {
  const double per_plane = work * fused_plane_sm_us(size);
  const double alone = lone * per_plane * std::min(planes, double(fused_planes_per_block(size)));
  return std::max(alone, planes * per_plane / kSmCount);
}
}  // namespace

double estimate_fused_us(const ConvDesc& d, int size, Pass pass, int tiles) {
  (void)pass;  // forward and backward data run the same kernels
  const double esize = double(dtype_size(d.dtype));
  const double io = double(d.x_elems() + d.y_elems() + d.w_elems()) * esize;
  const double conv = fused_kernel_us(double(d.n * d.k) * tiles, size, 1.0);
  const double filter = fused_kernel_us(double(d.k), size, 1.0 / 3.0);
  return std::max(conv, io / kStreamBytesPerUs) + filter + 2 * kLaunchUs;
}

double estimate_fused_wgrad_us(const ConvDesc& d, int size, std::int64_t pairs, int per_chunk,
                               int chunks) {
  // An image costs a slot a convolution plane's transforms (two forward ones instead of a
  // forward and an inverse) and the round trips of its two scratch spectra through L2: 1.5 to
  // 1.75 planes as measured on the H200 (data/results/h200/2026-12-04-wgrad/RUNS.md, run 2:
  // landmark_heatmaps_dw68 0.284 ms, replknet_dw31_56 0.419, slak_dw51_28 0.179); with the
  // spectra in shared memory 1.3 at 32 (run 5: replknet_dw31_14 0.087 ms) and 1.45 at 64
  // (slak_dw51_28 10% faster than with them in L2, H100, h100/2026-12-05-wgrad run 3); with g
  // alone in shared memory (the default from 33 to 64) 1.35, slak_dw51_28 0.164 ms against 0.177
  // with both (h100/2026-12-07-verify run 1); the
  // inverse at the end half a plane. The slots' work is summed as they hold it (a channel's last
  // slice may be short). Slots too few to fill the SMs take 1.3 times their share:
  // landmark_batch64's 64 slots of one 128x128 image each took 0.031 ms on the H100
  // (h100/2026-12-07-verify run 1), where 1.7 (fitted to 0.038-0.039 before, H200 2026-12-04-wgrad
  // runs 2-5) estimated 0.041; costed as the convolution kernel's lone block (2x), their estimate
  // had exceeded the staged FFT's, which took 0.050 ms. 16-bit data: 1.3 times the fp32 kernel's
  // time, the raw loads of a batch in flight before their conversions (landmark_batch64
  // 0.0405-0.0409 ms in fp16 against 0.0310 in fp32, where the staged FFT took 0.050; H100,
  // h100/2026-12-07-verify run 1). Staged a row at a time, each load waiting for the one before, it
  // had taken 3.45 times (h100/2026-12-05-wgrad run 4).
  const double kHalfStaging = dtype_size(d.dtype) == 2 ? 1.3 : 1.0;
  const int in_smem = fused_wgrad_smem_spectra(size);
  const double kImageWork = kHalfStaging * (in_smem == 0   ? 1.6
                                            : in_smem == 1 ? 1.35
                                            : size <= 32   ? 1.3
                                                           : 1.45);
  constexpr double kInverseWork = 0.5;
  constexpr double kLoneSlotFactor = 1.3;
  const double esize = double(dtype_size(d.dtype));
  const double io = double(d.x_elems() + d.y_elems()) * esize;
  const double slots = double(d.c) * chunks;
  const double per_plane = fused_plane_sm_us(size);
  const double longest = double(per_chunk) * kImageWork + kInverseWork;
  const double alone =
      kLoneSlotFactor * longest * per_plane * std::min(slots, double(fused_planes_per_block(size)));
  const double total = double(d.c) * double(pairs) * kImageWork + slots * kInverseWork;
  const double slots_us = std::max(alone, total * per_plane / kSmCount);
  double sum_us = 0.0;
  if (chunks > 1) {
    sum_us = double(chunks + 1) * double(d.w_elems()) * 4.0 / kStreamBytesPerUs + kLaunchUs;
  }
  return std::max(slots_us, io / kStreamBytesPerUs) + sum_us + kLaunchUs;
}

namespace {
// ---- separable path (lib/separable) -----------------------------------------------------------
// Multiply-adds an SM retires per microsecond in the row and column passes, as measured on the
// H200 (data/results/h200/2026-12-03-separable/RUNS.md, run 3, forced separable, fp32): the
// estimates with 1.5e5 were 1.8-2.7x below the times of every row (landmark_batch64 19.3 us,
// landmark_dw68 326 us, the 2048x2048 RGB photo 210 us, 4000x3000 with 101x101 5.6 ms); 6.0e4
// fits them within 10%. 128 FMA lanes at 1.98 GHz are 2.5e5: the passes wait on their barriers
// and on the tile's load, and only two blocks of 256 threads fit an SM (121 registers a thread).
// A source element loaded into shared memory costs about as much as kLoadMacs multiply-adds.
constexpr double kSeparableMacsPerUsPerSm = 6.0e4;
constexpr double kSeparableLoadMacs = 4.0;
constexpr double kThreadsPerSm = 2048;

// A grid of `blocks` with up to `per_sm` resident on each of `sms` SMs: its waves, and how many
// blocks share an SM's rate within one.
struct Waves {
  double waves, sharing;
};
Waves waves_of(double blocks, double sms, double per_sm) {
  return {std::ceil(blocks / (sms * per_sm)), std::min(per_sm, std::ceil(blocks / sms))};
}

// The strip kernel (one block of kStripThreads walks down a segment): an SM retires
// kSeparableStripMacsPerUsPerSm multiply-adds a microsecond with kStripFullWarps warps resident
// or more, proportionally less with fewer. H200, forced separable, fp32
// (data/results/h200/2026-12-04-separable/RUNS.md, run 3): 82-89 thousand a microsecond and SM
// on the 2048x2048 photo (0.124 ms, 19 warps resident), landmark_dw68 (0.236 ms) and the
// 4000x3000 photo with 101x101 (0.645 ms, 12 warps: longer passes between its barriers than
// 45 taps have); 64 heatmaps 0.018 ms (a launch and three steps). ncu: 54-71% of the issue slots
// busy, about one instruction in two a multiply-add; with 11 warps resident one warp in three
// was eligible a cycle (run 2), hence the penalty below 16.
constexpr double kSeparableStripMacsPerUsPerSm = 8.5e4;
constexpr double kStripFullWarps = 16;

// Work of one block in multiply-add equivalents, and the blocks of the pass.
double separable_block_work(const SeparableGeometry& g, int sources, int rank) {
  if (g.whole) {
    const double out_rows = double(g.pass_rows() - separable::strip_taps(g.h.taps));
    const double macs = double(rank) * separable::kStripW *
                        (double(g.pass_rows()) * separable::strip_taps(g.w.taps) +
                         out_rows * separable::strip_taps(g.h.taps));
    return macs + kSeparableLoadMacs * double(g.region_rows()) * g.region_cols();
  }
  if (g.strip()) {
    const double steps = g.seg_chunks + g.ring_slots() - 1;  // row-pass steps of a segment
    const double per_step = double(separable::kChunk) * separable::kStripW;
    const double macs = double(rank) * per_step *
                        (steps * separable::strip_taps(g.w.taps) +
                         double(g.seg_chunks) * separable::strip_taps(g.h.taps));
    return macs + kSeparableLoadMacs * steps * separable::kChunk * g.region_cols();
  }
  const double rows = g.region_rows();
  const double macs = double(rank) * (rows * separable::kTileW * g.w.taps_run() +
                                      double(g.tile_h) * separable::kTileW * g.h.taps_run());
  return double(sources) * (macs + kSeparableLoadMacs * rows * g.region_cols());
}

double separable_planes(const ConvDesc& d, Pass pass) {
  return double(d.n) * double(pass == Pass::kBackwardData ? d.c : d.k);
}
}  // namespace

double estimate_separable_us(const ConvDesc& d, Pass pass, const SeparableGeometry& g, int rank) {
  const int sources =
      static_cast<int>(pass == Pass::kBackwardData ? d.k_per_group() : d.c_per_group());
  const double blocks = separable_planes(d, pass) * double(g.blocks_per_plane());
  const double smem = double(g.smem_bytes(rank)) + 1024.0;
  const int threads = g.threads();
  const double cap = g.strip() ? kThreadsPerSm / threads : 2.0;
  const double per_sm =
      std::max(1.0, std::min({std::floor(kSmemPerSm / smem), kThreadsPerSm / threads, cap}));
  const auto [waves, sharing] = waves_of(blocks, kSmCount, per_sm);
  double rate = kSeparableMacsPerUsPerSm;
  if (g.strip()) {
    rate =
        kSeparableStripMacsPerUsPerSm * std::min(1.0, sharing * threads / 32.0 / kStripFullWarps);
  }
  const double compute = waves * sharing * separable_block_work(g, sources, rank) / rate;
  const double io = double(d.x_elems() + d.y_elems()) * double(dtype_size(d.dtype));
  return std::max(compute, io / kStreamBytesPerUs) + kLaunchUs;
}

namespace {
// ---- direct path (lib/direct) -------------------------------------------------------------------
// Measured on the H200 (data/results/h200/2026-12-05-direct): within 3% of the estimate on
// seed3_cntk_valid and landmark_batch64, 16% over on odd_rect and 58% over with dilation 2. The
// rate is the separable tile kernel's (kSeparableMacsPerUsPerSm, a quarter of the H200's 2.5e5
// FMA lanes a microsecond), whose blocks also sum taps from shared memory between barriers; a
// staged source or filter element costs kDirectLoadMacs. Threads whose part has fewer filter
// rows idle (R not a multiple of split), and each source channel costs a block the latency of
// its staging from global memory and two barriers, kDirectChannelUs (about 800 cycles), which
// more resident blocks do not hide from that block.
// With fewer than kDirectFullWarps warps resident an SM's FMA pipes wait on the shared loads'
// latency, and the rate falls in proportion (as the separable strip kernel's): one 96x96 plane in
// tiles of 8x16, 72 blocks of 8 warps, one an SM, took 14 us where the full rate gave 10.4 us
// (15.3 at half the rate). Its tiles of 8x8, 144 blocks, are estimated at 10.4 us: not yet
// measured.
constexpr double kDirectMacsPerUsPerSm = kSeparableMacsPerUsPerSm;
constexpr double kDirectFullWarps = 16;
constexpr double kDirectLoadMacs = 4.0;
constexpr double kDirectChannelUs = 0.4;
}  // namespace

double estimate_direct_kernel_us(const ConvDesc& d, const DirectGeometry& g, int sm_count) {
  const double rows_per_part = std::ceil(double(g.r) / g.split);
  const double taps = double(g.r) * g.s;
  const double busy_taps = rows_per_part * g.split * g.s;  // idle parts count as working
  const double block_work =
      double(g.group_in) * (double(g.tile_h) * g.tile_w * busy_taps +
                            kDirectLoadMacs * (double(g.win_h) * g.win_w + taps));
  const double sms = double(sm_count > 0 ? sm_count : kSmCount);
  const double blocks = double(g.blocks());
  const double smem = double(g.smem_bytes()) + 1024.0;
  const double per_sm =
      std::max(1.0, std::min(std::floor(kSmemPerSm / smem), kThreadsPerSm / direct::kThreads));
  const auto [waves, sharing] = waves_of(blocks, sms, per_sm);
  const double warps = sharing * direct::kThreads / 32.0;
  const double rate = kDirectMacsPerUsPerSm * std::min(1.0, warps / kDirectFullWarps);
  const double compute = waves * (sharing * block_work / rate + g.group_in * kDirectChannelUs);
  const double io = double(d.x_elems() + d.y_elems() + d.w_elems()) * double(dtype_size(d.dtype));
  return std::max(compute, io / kStreamBytesPerUs) + kLaunchUs;
}

// The backward filter reads x and dy through L1 (a load per multiply-add, and the row's index
// math per position): a sixth of the forward kernel's rate, measured on the H200 (suite rows
// seed3_*, landmark_batch64, odd_rect, dilated2: 33 to 1764 us, 2.0 to 2.5 times the estimate
// at a third; data/results/h200/2026-12-05-direct).
constexpr double kDirectWgradMacsPerUsPerSm = kDirectMacsPerUsPerSm / 6.0;

namespace {
// The rows layout: a thread's run slides in registers, 24 shared loads a 64 multiply-adds, so
// the estimate takes the forward kernel's rate (kDirectMacsPerUsPerSm) for the threads'
// multiply-adds, whole warps and padded taps counted, kDirectLoadMacs for each staged element,
// and a step's staging latency and two barriers (kDirectChannelUs); with several parts, the
// partial sum (its reads and writes, and a launch). Measured on the H100
// (data/results/h100/2026-12-07-verify/RUNS.md, run 1): the single heatmap 14.1 us (estimated
// 17.9), odd_rect 172 us (177); the taps layout 32.6 (27.1) and 505 (502).
double estimate_direct_wgrad_rows_us(const ConvDesc& d, const DirectWgradGeometry& g, double sms) {
  const double steps = double(g.rows_per_part) * g.q_tiles;
  const double step_work = double(g.threads) * g.tile_q * direct::kWgradTaps +
                           kDirectLoadMacs * (double(g.rows_b) * g.pitch + g.tile_q);
  const double smem = 4.0 * g.smem_floats() + 1024.0;
  const double per_sm =
      std::max(1.0, std::min(std::floor(kSmemPerSm / smem), std::floor(kThreadsPerSm / g.threads)));
  const auto [waves, sharing] = waves_of(double(g.blocks()), sms, per_sm);
  const double warps = sharing * g.threads / 32.0;
  const double rate = kDirectMacsPerUsPerSm * std::min(1.0, warps / kDirectFullWarps);
  const double compute = waves * steps * (sharing * step_work / rate + kDirectChannelUs);
  const double io = double(d.x_elems() + d.y_elems() + d.w_elems()) * double(dtype_size(d.dtype));
  double sum_us = 0.0;
  if (g.parts > 1) {
    sum_us = double(g.parts + 1) * double(g.w_elems()) * 4.0 / kStreamBytesPerUs + kLaunchUs;
  }
  return std::max(compute, io / kStreamBytesPerUs) + sum_us + kLaunchUs;
}
}  // namespace

double estimate_direct_wgrad_us(const ConvDesc& d, const DirectWgradGeometry& g, int sm_count) {
  const double sms = double(sm_count > 0 ? sm_count : kSmCount);
  if (g.rows) return estimate_direct_wgrad_rows_us(d, g, sms);
  const double block_work = double(direct::kWgradTaps) * double(g.n) * g.out_h * g.out_w;
  const double blocks = double(g.blocks());
  const double per_sm = 4.0;  // 64 registers a thread (ptxas, sm_90): 4 blocks of 256 an SM
  const auto [waves, sharing] = waves_of(blocks, sms, per_sm);
  const double compute = waves * sharing * block_work / kDirectWgradMacsPerUsPerSm;
  const double io = double(d.x_elems() + d.y_elems() + d.w_elems()) * double(dtype_size(d.dtype));
  return std::max(compute, io / kStreamBytesPerUs) + kLaunchUs;
}

DirectGeometry choose_direct_geometry(const ConvDesc& d, Pass pass, int sm_count) {
  DirectGeometry best;
  double best_us = 0.0;
  for (int tile_w : direct::kTileWidths) {  // widest first: ties keep it
    const DirectGeometry g = direct_geometry(d, pass, tile_w);
    if (g.smem_bytes() > direct::kMaxSmemBytes) continue;
    const double us = estimate_direct_kernel_us(d, g, sm_count);
    if (best.tile_w == 0 || us < best_us) best = g, best_us = us;
  }
  return best;
}

int choose_separable_segment(const ConvDesc& d, Pass pass, SeparableGeometry g, int max_rank) {
  g.seg_chunks = 1;  // the strip kernel's shared memory does not depend on the segment
  if (g.smem_bytes(max_rank) > separable::kMaxStripSmemBytes) return 0;
  // Segments longer than kMaxSegmentChunks steps gain nothing measurable (their first R - 1
  // rows are below 1% of them for filters up to 300 taps) and bound the search on tall planes.
  constexpr int kMaxSegmentChunks = 1024;
  const int top =
      std::min(kMaxSegmentChunks, (g.h.out + separable::kChunk - 1) / separable::kChunk);
  int best = 0;
  double best_us = 0.0;
  for (int m = 1; m <= top; ++m) {
    g.seg_chunks = m;
    const double us = estimate_separable_us(d, pass, g, 1);
    if (best == 0 || us <= best_us) best = m, best_us = us;  // ties: the longer segment
  }
  return best;
}

bool choose_separable_whole(const ConvDesc& d, Pass pass, SeparableGeometry g, int max_rank,
                            bool forced) {
  SeparableGeometry whole = g;
  whole.whole = true;
  whole.seg_chunks = (g.h.out + separable::kChunk - 1) / separable::kChunk;
  if (whole.smem_bytes(max_rank) > separable::kMaxStripSmemBytes) return false;
  if (forced) return true;
  // What the whole form saves is the halo rows each segment stages again, and only where the SMs
  // are busy: timed against the segments (H100, data/results/h100/2026-12-07-verify/RUNS.md,
  // run 1, two turns) it took 64 heatmaps of 96x96 with 45x45 in 14.5 us against 18.1 (192
  // blocks against 576 segments of 32 rows), but one heatmap in 11.1 against 10.4 and eight in
  // 11.1 against 10.8 (3 and 24 blocks: fewer than the SMs, the segments' extra blocks run
  // beside each other on idle SMs), and landmark_dw68, whose segments span the plane already,
  // the same in fp32 (0.242 ms) and 4% slower in fp16.
  const double blocks = separable_planes(d, pass) * double(whole.blocks_per_plane());
  if (g.seg_chunks >= whole.seg_chunks || blocks < kSmCount) return false;
  return estimate_separable_us(d, pass, whole, 1) < estimate_separable_us(d, pass, g, 1);
}

int choose_separable_tile_h(const ConvDesc& d, Pass pass, SeparableGeometry g, int max_rank) {
  const int out = g.h.out;
  const int top = std::min(separable::kMaxTileH,
                           (out + separable::kRun - 1) / separable::kRun * separable::kRun);
  int best = 0;
  double best_us = 0.0;
  for (int th = separable::kRun; th <= top; th += separable::kRun) {
    g.tile_h = th;
    if (g.smem_bytes(max_rank) > separable::kMaxSmemBytes) break;  // grows with th
    const double us = estimate_separable_us(d, pass, g, 1);
    if (best == 0 || us <= best_us) best = th, best_us = us;  // ties: the taller tile
  }
  return best;
}

double estimate_direct_us(const ConvDesc& d, Pass pass) {
  const double flops = 2.0 * double(d.y_elems()) * d.c_per_group() * d.r * d.s;
  const bool dense = d.c_per_group() >= kDenseChannels && d.k_per_group() >= kDenseChannels;
  const bool tensor_cores = d.dtype != DType::kF32 && d.c_per_group() >= kDirectHalfDenseChannels &&
                            d.k_per_group() >= kDirectHalfDenseChannels;
  const double half = tensor_cores ? kDirectHalfDenseSpeedup : 1.0;
  const double rate = half * (!dense                          ? kDirectThinFlopsPerUs
                              : d.r * d.s <= kSmallKernelArea ? kDirectDenseSmallFlopsPerUs
                                                              : kDirectDenseLargeFlopsPerUs);
  const double fill = std::min(1.0, double(d.y_elems()) / kDirectFullOutputs);
  const double factor = pass == Pass::kForward        ? 1.0
                        : dense                       ? kDirectDenseBackwardFactor
                        : pass == Pass::kBackwardData ? kDirectDgradFactor
                                                      : kDirectWgradFactor;
  return factor * flops / (rate * fill) + kLaunchUs;
}

double estimate_border_us(const ConvDesc& d, Pass /*pass*/) {
  // Either way the stage reads one of x and its bordered planes and writes the other.
  const double elems =
      double(d.x_elems()) + double(d.n) * d.c * (d.h + 2 * d.pad_h) * (d.w + 2 * d.pad_w);
  return elems * double(dtype_size(d.dtype)) / kStreamBytesPerUs + kLaunchUs;
}

std::vector<FftGeometry> ranked_fft_geometries(const ConvDesc& d, std::size_t count, Pass pass) {
  std::vector<std::pair<double, FftGeometry>> scored;
  for (std::int64_t fh : fft_size_candidates(min_fft_h(d))) {
    for (std::int64_t fw : fft_size_candidates(min_fft_w(d))) {
      const FftGeometry g = make_fft_geometry(d, fh, fw);
      scored.emplace_back(estimate_fft_us(d, g, pass), g);
    }
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<FftGeometry> out;
  for (std::size_t i = 0; i < scored.size() && i < count; ++i) out.push_back(scored[i].second);
  return out;
}

FftGeometry choose_fft_geometry(const ConvDesc& d, Pass pass) {
  return ranked_fft_geometries(d, 1, pass).front();
}

bool choose_tiled_geometry(const ConvDesc& d, FftGeometry* out) {
  const auto axis = [](std::int64_t eff_k) {
    return smooth_sizes(std::max(kMinTile, eff_k), kMaxTile);
  };
  double best = std::numeric_limits<double>::infinity();
  for (std::int64_t th : axis(d.eff_r())) {
    for (std::int64_t tw : axis(d.eff_s())) {
      const FftGeometry g = make_tiled_geometry(d, th, tw);
      if (g.tiles() == 1) continue;  // one tile is the full image, planned as such
      const double us = estimate_fft_us(d, g);
      if (us < best) {
        best = us;
        *out = g;
      }
    }
  }
  return best < std::numeric_limits<double>::infinity();
}

namespace {

// ---- tensor-core tilings ----------------------------------------------------------------------
// Rates for the estimate that picks a tensor-core tiling and weighs it against the register
// tilings: DRAM at the streaming rate above; TF32 mma.sync at about 300 of the H200's 495
// TFLOP/s, of which 3xTF32 spends three MMAs per product.
constexpr double kTcFlopsPerUs = 300.0e6 / 3.0;
constexpr int kTcBinsPerBlock = 8;
// The contraction and the block must be deep and wide enough to fill MMA tiles at all.
constexpr std::int64_t kTcMinK = 8;
constexpr std::int64_t kTcMinSide = 8;

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

/// Estimated microseconds of tiling `k` on `p`: DRAM traffic (A re-read once per block column,
/// B once per block row, C written once) against padded MMA work, in whole waves of blocks.
double estimate_tc_us(const CgemmProblem& p, const CgemmKernel& k, int sm_count) {
  const std::int64_t mb = (p.m + k.block_m - 1) / k.block_m;
  const std::int64_t nb = (p.n + k.block_n - 1) / k.block_n;
  const std::int64_t bins = round_up(p.bins, kTcBinsPerBlock);
  const double bytes =
      8.0 * p.groups * p.bins * (double(p.m) * p.k * nb + double(p.n) * p.k * mb + p.m * p.n);
  const double flops = 8.0 * p.groups * bins * double(mb * k.block_m) * double(nb * k.block_n) *
                       double(round_up(p.k, 8));
  const double blocks = double(mb * nb) * double(bins / kTcBinsPerBlock) * p.groups;
  if (blocks <= 0) return std::numeric_limits<double>::infinity();
  const double per_wave = double(std::max(1, sm_count)) * std::max(1, k.blocks_per_sm);
  const double fill = std::ceil(blocks / per_wave) * per_wave / blocks;  // tail of the last wave
  return fill * std::max(bytes / kStreamBytesPerUs, flops / kTcFlopsPerUs);
}

/// The best tensor-core tiling for `p` by estimate, and its estimate; null when none applies.
/// Transposed tilings (rows along n) serve problems whose m is below an MMA's 16 rows.
const CgemmKernel* choose_tc(const CgemmProblem& p, int sm_count, std::size_t smem, double* us) {
  if (p.k < kTcMinK || std::min(p.m, p.n) < kTcMinSide) return nullptr;
  const bool transposed = p.m < 16 && p.n >= 16;
  const CgemmKernel* best = nullptr;
  for (const CgemmKernel& k : cgemm_kernels()) {
    if (k.family != CgemmFamily::kTensorCore || (k.tile_m < k.tile_n) != transposed) continue;
    if (k.smem_bytes > smem) continue;
    // no block more than the problem rounded up to whole MMA tiles
    if (k.block_m > round_up(p.m, k.tile_m) || k.block_n > round_up(p.n, k.tile_n)) continue;
    const double t = estimate_tc_us(p, k, sm_count);
    if (best == nullptr || t < *us) {
      best = &k;
      *us = t;
    }
  }
  return best;
}

}  // namespace

const CgemmKernel& choose_cgemm(const CgemmProblem& p, int sm_count, std::size_t tc_smem) {
  if (tc_smem > 0) {
    // The register tilings' estimate: their sustained rate against the operands' traffic.
    const double regtile_us =
        std::max(p.flops() / kGemmFlopsPerUs, p.min_bytes() / kStreamBytesPerUs);
    double tc_us = 0.0;
    const CgemmKernel* tc = choose_tc(p, sm_count, tc_smem, &tc_us);
    if (tc != nullptr && tc_us < regtile_us) return *tc;
  }
  const double want = kMinWaves * std::max(sm_count, 1) * 2048.0;
  // The shared-memory tilings are not chosen here: on every suite row of
  // data/results/h200/suite-fft-sizes.json the register tilings were faster (multichannel_r45:
  // best smem 1.63 ms against regtile_8x8 1.43 ms for the whole forward). Autotune still tries
  // them. Tiles stop at 8 for the same reason: regtile_16x2 took 1.71 ms there.
  int tm = pow2_ceil(p.m);
  int tn = pow2_ceil(p.n);
  auto threads = [&](int a, int b) {
    return double(p.bins) * p.groups * double((p.m + a - 1) / a) * double((p.n + b - 1) / b);
  };
  // Large tiles reuse operands best; halve the larger side while the grid would underfill the GPU.
  while (threads(tm, tn) < want && (tm > 1 || tn > 1)) {
    if (tm >= tn)
      tm /= 2;
    else
      tn /= 2;
  }
  for (const CgemmKernel& k : cgemm_kernels()) {
    if (k.family == CgemmFamily::kRegTile && k.tile_m == tm && k.tile_n == tn) return k;
  }
  return cgemm_kernels().front();
}

// The implicit-GEMM backward filter (lib/igemm): its channels-last copies of x and dy (read and
// written at the streaming rate) and of dw back, the groups' GEMMs one after the other at
// kIgemmFlopsPerUs on the padded tiles (the rate as measured, wave tails included) and its
// launches: the two copies, per group the GEMM and, with split-K slices, the semaphores' reset,
// and dw's copy back. The rate with 128 x 64 tiles (H100, data/results/h100/2026-12-07b/RUNS.md,
// run 7; fp32 products, two flops each, less the copies): small5x5_c512_56 3.23 ms (51 TFLOP/s,
// estimated 3.34), seed1_grouped3x3_f32 1.68 ms (52, estimated 1.78), small3x3_c512_56 1.43 ms
// (43, estimated 1.24); half the tensor-core tilings' rate above. Narrow tiles with many slices
// ran slower still (small3x3_c128_112_g4, 32 filters a group and 52 slices: 0.80 ms, about 23),
// which Auto does not take (algos/implicit_gemm.cpp).
constexpr double kIgemmFlopsPerUs = 50.0e6;

double estimate_igemm_wgrad_us(const IgemmWgradGeometry& g, int /*sm_count*/) {
  const double copies = 4.0 * (double(g.n) * g.groups * g.cg * g.h * g.w + double(g.x_floats()) +
                               double(g.n) * g.groups * g.kg * g.out_h * g.out_w +
                               double(g.dy_floats()) + 2.0 * double(g.dw_floats()));
  const double gemm = 2.0 * g.padded_macs() / kIgemmFlopsPerUs;
  const double launches = 3.0 + g.groups * (g.split_k > 1 ? 2.0 : 1.0);
  return copies / kStreamBytesPerUs + gemm + launches * kLaunchUs;
}

AlgoEstimate compare_fft_direct(const ConvDesc& d, const FftGeometry& g) {
  AlgoEstimate e;
  e.fft_us = estimate_fft_us(d, g);
  e.direct_us = estimate_direct_us(d);
  e.prefer_fft = e.fft_us < e.direct_us;
  char buf[160];
  std::snprintf(buf, sizeof(buf), "estimated fft %.1f us vs direct %.1f us", e.fft_us, e.direct_us);
  e.reason = buf;
  return e;
}

}  // namespace fftconv::detail
