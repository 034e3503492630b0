#include <gtest/gtest.h>

#include "fftconv/fftconv.hpp"

namespace fftconv {
namespace {

ConvDesc landmark() {
  ConvDesc d;
  d.n = 64; d.c = 1; d.h = 96; d.w = 96; d.k = 1; d.r = 45; d.s = 45;
  d.pad_h = 22; d.pad_w = 22;
  return d;
}

TEST(ConvDesc, OutputSizeMatchesPyTorchFormula) {
  ConvDesc d = landmark();
  EXPECT_EQ(d.out_h(), 96);
  EXPECT_EQ(d.out_w(), 96);
  // valid convolution
  d.pad_h = d.pad_w = 0;
  EXPECT_EQ(d.out_h(), 52);
  // stride floors: (128 + 30 - 31) / 2 + 1 = 64
  ConvDesc s;
  s.h = 128; s.w = 127; s.r = 31; s.s = 31; s.pad_h = 15; s.pad_w = 15; s.stride_h = 2; s.stride_w = 2;
  EXPECT_EQ(s.out_h(), 64);
  EXPECT_EQ(s.out_w(), 64);  // (127 + 30 - 31) / 2 + 1 = 64
  // dilation: effective 29, (64 + 28 - 29) + 1 = 64
  ConvDesc dl;
  dl.h = 64; dl.w = 64; dl.r = 15; dl.s = 15; dl.pad_h = 14; dl.pad_w = 14; dl.dil_h = 2; dl.dil_w = 2;
  EXPECT_EQ(dl.eff_r(), 29);
  EXPECT_EQ(dl.out_h(), 64);
  // every combination against the formula written out
  for (int h = 1; h <= 12; ++h)
    for (int r = 1; r <= 5; ++r)
      for (int p = 0; p <= 3; ++p)
        for (int st = 1; st <= 3; ++st)
          for (int dil = 1; dil <= 3; ++dil) {
            ConvDesc e;
            e.h = h; e.r = r; e.pad_h = p; e.stride_h = st; e.dil_h = dil;
            const int span = h + 2 * p - dil * (r - 1) - 1;
            EXPECT_EQ(e.out_h(), span >= 0 ? span / st + 1 : 0) << e.to_string();
          }
}

TEST(ConvDesc, CanonicalString) {
  EXPECT_EQ(landmark().to_string(), "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  ConvDesc d;
  d.n = 3; d.c = 5; d.h = 97; d.w = 89; d.k = 7; d.r = 45; d.s = 13; d.pad_h = 22; d.pad_w = 6;
  d.stride_h = 2; d.stride_w = 3; d.dil_h = 1; d.dil_w = 2; d.groups = 1; d.dtype = DType::kBF16;
  EXPECT_EQ(d.to_string(), "n3c5h97w89k7r45s13p22x6u2x3d1x2g1bf16");
}

TEST(ConvDesc, ParseRoundTrip) {
  ConvDesc d = landmark();
  d.groups = 1; d.dtype = DType::kF16; d.stride_w = 3; d.dil_h = 2;
  EXPECT_EQ(ConvDesc::parse(d.to_string()), d);
  EXPECT_EQ(ConvDesc::parse("n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32"), landmark());
}

TEST(ConvDesc, ParseRejectsMalformed) {
  for (const char* bad : {"", "n64", "n64c1h96w96k1r45s45p22x22u1x1d1x1g1", "x64c1h96w96k1r45s45p22x22u1x1d1x1g1f32",
                          "n64c1h96w96k1r45s45p22u1x1d1x1g1f32", "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f64",
                          "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32junk", "nXc1h96w96k1r45s45p22x22u1x1d1x1g1f32"}) {
    try {
      ConvDesc::parse(bad);
      ADD_FAILURE() << "parsed '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::kInvalidArgument) << bad << ": " << e.what();
    }
  }
}

Status validate(const ConvDesc& d) {
  std::string why;
  const Status st = d.validate(&why);
  if (st != Status::kSuccess) {
    EXPECT_FALSE(why.empty());
    EXPECT_NE(why.find(d.to_string()), std::string::npos) << "message should name the descriptor";
  }
  return st;
}

TEST(ConvDesc, ValidDescriptorPasses) {
  EXPECT_EQ(validate(landmark()), Status::kSuccess);
  ConvDesc dw = landmark();
  dw.c = dw.k = dw.groups = 68;
  EXPECT_EQ(validate(dw), Status::kSuccess);
  EXPECT_TRUE(dw.is_depthwise());
}

TEST(ConvDesc, NonPositiveSizesAreBadShape) {
  std::int64_t ConvDesc::*fields[] = {&ConvDesc::n, &ConvDesc::c, &ConvDesc::h, &ConvDesc::w,
                                      &ConvDesc::k, &ConvDesc::r, &ConvDesc::s, &ConvDesc::stride_h,
                                      &ConvDesc::stride_w, &ConvDesc::dil_h, &ConvDesc::dil_w};
  for (auto f : fields) {
    for (std::int64_t v : {0, -1, -100}) {
      ConvDesc d = landmark();
      d.*f = v;
      EXPECT_EQ(validate(d), Status::kBadShape) << d.to_string();
    }
  }
}

TEST(ConvDesc, NegativePaddingIsBadShape) {
  ConvDesc d = landmark();
  d.pad_h = -1;
  EXPECT_EQ(validate(d), Status::kBadShape);
  d = landmark();
  d.pad_w = -3;
  EXPECT_EQ(validate(d), Status::kBadShape);
}

TEST(ConvDesc, KernelLargerThanPaddedInput) {
  ConvDesc d;
  d.h = 10; d.w = 10; d.r = 11; d.s = 3;
  EXPECT_EQ(validate(d), Status::kKernelTooLarge);
  d.pad_h = 1;  // 12 >= 11: fits
  EXPECT_EQ(validate(d), Status::kSuccess);
  d.dil_h = 2;  // effective 21 > 12
  EXPECT_EQ(validate(d), Status::kKernelTooLarge);
  ConvDesc e;
  e.h = 10; e.w = 4; e.r = 3; e.s = 5;
  EXPECT_EQ(validate(e), Status::kKernelTooLarge);
}

TEST(ConvDesc, GroupsMustDivideChannels) {
  ConvDesc d = landmark();
  d.c = 6; d.k = 4; d.groups = 4;  // 4 does not divide 6
  EXPECT_EQ(validate(d), Status::kBadGroups);
  d.c = 8; d.k = 6;  // 4 does not divide 6
  EXPECT_EQ(validate(d), Status::kBadGroups);
  d.groups = 0;
  EXPECT_EQ(validate(d), Status::kBadGroups);
  d.groups = -2;
  EXPECT_EQ(validate(d), Status::kBadGroups);
  d.c = 8; d.k = 12; d.groups = 4;
  EXPECT_EQ(validate(d), Status::kSuccess);
}

TEST(ConvDesc, UnknownDtype) {
  ConvDesc d = landmark();
  d.dtype = static_cast<DType>(7);
  EXPECT_EQ(validate(d), Status::kUnsupportedDtype);
  EXPECT_THROW(parse_dtype("f64"), Error);
  EXPECT_EQ(parse_dtype("bf16"), DType::kBF16);
  EXPECT_EQ(dtype_size(DType::kF16), 2u);
}

TEST(ConvDesc, HugeSizesAreRejectedNotOverflowed) {
  ConvDesc d = landmark();
  d.n = std::int64_t{1} << 40;
  EXPECT_EQ(validate(d), Status::kBadShape);
  d = landmark();
  d.n = 1 << 20; d.c = 1 << 20; d.h = 1 << 10; d.w = 1 << 10; d.r = 1; d.s = 1; d.pad_h = d.pad_w = 0;
  EXPECT_EQ(validate(d), Status::kBadShape);  // 2^60 elements
}

TEST(ConvDesc, CheckThrowsNamedError) {
  ConvDesc d = landmark();
  d.k = 0;
  try {
    d.check();
    FAIL() << "check() accepted k = 0";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kBadShape);
    EXPECT_NE(std::string(e.what()).find("bad_shape"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("k = 0"), std::string::npos);
  }
}

TEST(Status, EveryStatusHasNameAndText) {
  for (int i = 0; i <= static_cast<int>(Status::kInternal); ++i) {
    const auto s = static_cast<Status>(i);
    EXPECT_STRNE(status_name(s), "unknown_status") << i;
    EXPECT_STRNE(status_string(s), "unknown status") << i;
  }
  EXPECT_STREQ(status_name(static_cast<Status>(99)), "unknown_status");
}

TEST(Algo, NamesRoundTrip) {
  for (Algo a : {Algo::kAuto, Algo::kFft, Algo::kCudnn, Algo::kFftTiled, Algo::kFftFused,
                 Algo::kSeparable}) {
    EXPECT_EQ(parse_algo(algo_name(a)), a);
  }
  EXPECT_THROW(parse_algo("winograd"), Error);
  for (Pass p : {Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter}) {
    EXPECT_EQ(parse_pass(pass_name(p)), p);
  }
  for (Backend b : {Backend::kGpu, Backend::kCpu, Backend::kAuto}) {
    EXPECT_EQ(parse_backend(backend_name(b)), b);
  }
  for (Tuning t : {Tuning::kHeuristic, Tuning::kAutotune, Tuning::kExhaustive}) {
    EXPECT_EQ(parse_tuning(tuning_name(t)), t);
  }
  EXPECT_STREQ(pass_name(Pass::kBackwardData), "dgrad");
  EXPECT_STREQ(pass_name(static_cast<Pass>(7)), "unknown_pass");
  EXPECT_STREQ(algo_name(static_cast<Algo>(9)), "unknown_algo");
}

TEST(Algo, UnknownNamesListTheAcceptedOnes) {
  try {
    parse_pass("bwd");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("unknown pass 'bwd' (expected fwd, dgrad or wgrad)"),
              std::string::npos)
        << e.what();
  }
  try {
    parse_algo("winograd");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(expected auto, fft, fft_tiled, fft_fused, separable, "
                                         "direct, cudnn or implicit_gemm)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_backend("tpu"), Error);
  EXPECT_THROW(parse_tuning("fast"), Error);
}

}  // namespace
}  // namespace fftconv
