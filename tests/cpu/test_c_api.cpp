#include <gtest/gtest.h>

#include <cstring>

#include "fftconv/fftconv.h"
#include "fftconv/fftconv.hpp"

namespace {

fftconv_conv_desc_t landmark() {
  fftconv_conv_desc_t d = fftconv_conv_desc_default();
  d.n = 64;
  d.h = 96;
  d.w = 96;
  d.r = 45;
  d.s = 45;
  d.pad_h = 22;
  d.pad_w = 22;
  return d;
}

TEST(CApi, StatusNamesMatchCpp) {
  for (int i = 0; i <= FFTCONV_STATUS_INTERNAL; ++i) {
    EXPECT_STREQ(fftconv_status_name(static_cast<fftconv_status_t>(i)),
                 fftconv::status_name(static_cast<fftconv::Status>(i)));
    EXPECT_STREQ(fftconv_status_string(static_cast<fftconv_status_t>(i)),
                 fftconv::status_string(static_cast<fftconv::Status>(i)));
  }
}

TEST(CApi, ValidateReturnsNamedStatusAndMessage) {
  fftconv_conv_desc_t d = landmark();
  EXPECT_EQ(fftconv_conv_desc_validate(&d), FFTCONV_STATUS_SUCCESS);
  EXPECT_STREQ(fftconv_last_error_message(), "");
  d.groups = 5;
  d.c = 4;
  EXPECT_EQ(fftconv_conv_desc_validate(&d), FFTCONV_STATUS_BAD_GROUPS);
  EXPECT_NE(std::strstr(fftconv_last_error_message(), "groups"), nullptr);
  d = landmark();
  d.r = 200;
  EXPECT_EQ(fftconv_conv_desc_validate(&d), FFTCONV_STATUS_KERNEL_TOO_LARGE);
  d = landmark();
  d.dtype = static_cast<fftconv_dtype_t>(9);
  EXPECT_EQ(fftconv_conv_desc_validate(&d), FFTCONV_STATUS_UNSUPPORTED_DTYPE);
  EXPECT_EQ(fftconv_conv_desc_validate(nullptr), FFTCONV_STATUS_NULL_POINTER);
}

TEST(CApi, ToStringTruncatesAndReportsLength) {
  fftconv_conv_desc_t d = landmark();
  char buf[128];
  size_t needed = 0;
  ASSERT_EQ(fftconv_conv_desc_to_string(&d, buf, sizeof(buf), &needed), FFTCONV_STATUS_SUCCESS);
  EXPECT_STREQ(buf, "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
  EXPECT_EQ(needed, std::strlen(buf) + 1);
  char small[5];
  ASSERT_EQ(fftconv_conv_desc_to_string(&d, small, sizeof(small), &needed), FFTCONV_STATUS_SUCCESS);
  EXPECT_STREQ(small, "n64c");
  EXPECT_EQ(fftconv_conv_desc_to_string(nullptr, buf, sizeof(buf), &needed),
            FFTCONV_STATUS_NULL_POINTER);
}

TEST(CApi, PlanCreateChecksArgumentsBeforeTheDevice) {
  fftconv_plan_t plan = reinterpret_cast<fftconv_plan_t>(0x1);
  fftconv_conv_desc_t d = landmark();
  EXPECT_EQ(fftconv_plan_create(nullptr, &d, nullptr), FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(fftconv_plan_create(&plan, nullptr, nullptr), FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(plan, nullptr);
  d.k = 0;
  EXPECT_EQ(fftconv_plan_create(&plan, &d, nullptr), FFTCONV_STATUS_BAD_SHAPE);
  EXPECT_EQ(plan, nullptr);
  d = landmark();
  fftconv_options_t o = fftconv_options_default();
  o.algo = static_cast<fftconv_algo_t>(42);
  EXPECT_EQ(fftconv_plan_create(&plan, &d, &o), FFTCONV_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
}

TEST(CApi, PlanCreateWithoutDeviceSaysSo) {
  if (fftconv::device_count() > 0) GTEST_SKIP() << "a CUDA device is present; covered by GPU tests";
  fftconv_plan_t plan = nullptr;
  fftconv_conv_desc_t d = landmark();
  EXPECT_EQ(fftconv_plan_create(&plan, &d, nullptr), FFTCONV_STATUS_NO_DEVICE);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(std::strstr(fftconv_last_error_message(), "no CUDA device"), nullptr);
}

TEST(CApi, NullPlanIsHandled) {
  size_t bytes = 0;
  EXPECT_EQ(fftconv_plan_workspace_size(nullptr, &bytes), FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(fftconv_forward(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, nullptr),
            FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(fftconv_backward_data(nullptr, nullptr, nullptr, nullptr, nullptr, 0, nullptr),
            FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(
      fftconv_backward_filter(nullptr, nullptr, nullptr, nullptr, nullptr, 0, nullptr, 1.0f, 0.0f),
      FFTCONV_STATUS_NULL_POINTER);
  EXPECT_EQ(fftconv_plan_destroy(nullptr), FFTCONV_STATUS_SUCCESS);
  EXPECT_STREQ(fftconv_plan_describe(nullptr), "");
}

TEST(CApi, OptionsDefaultToTheForwardPass) {
  const fftconv_options_t o = fftconv_options_default();
  EXPECT_EQ(o.pass, FFTCONV_PASS_FORWARD);
  EXPECT_EQ(o.dw_fp32, 0);
  // An invalid pass is rejected (before the device is needed).
  fftconv_options_t bad = o;
  bad.pass = static_cast<fftconv_pass_t>(5);
  const fftconv_conv_desc_t d = fftconv_conv_desc_default();
  fftconv_plan_t plan = nullptr;
  EXPECT_EQ(fftconv_plan_create(&plan, &d, &bad), FFTCONV_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(std::string(fftconv_last_error_message()).find("Options::pass"), std::string::npos);
}

TEST(CApi, OptionStringsAndEnumsAreChecked) {
  const fftconv_conv_desc_t d = fftconv_conv_desc_default();
  fftconv_options_t o = fftconv_options_default();
  EXPECT_EQ(o.tuning, FFTCONV_TUNING_HEURISTIC);
  EXPECT_EQ(o.tuning_cache, nullptr);
  EXPECT_EQ(o.gemm_kernel, nullptr);
  EXPECT_EQ(o.cudnn_algo, nullptr);
  EXPECT_EQ(o.fft_h, 0);
  EXPECT_EQ(o.fft_w, 0);
  EXPECT_EQ(o.cudnn_search, 3);
  EXPECT_EQ(o.check_pointers, 1);
  EXPECT_EQ(o.kept_separable, 1);
  EXPECT_EQ(o.graph_replay, 1);
  EXPECT_EQ(o.fft_callbacks, 0);
  EXPECT_EQ(o.own_fft, 0);
  fftconv_plan_t plan = nullptr;
  o.gemm_kernel = "regtile_99x99";  // not a tiling: rejected before any device is needed
  EXPECT_EQ(fftconv_plan_create(&plan, &d, &o), FFTCONV_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(fftconv_last_error_message()).find("regtile_99x99"), std::string::npos);
  o.gemm_kernel = nullptr;
  o.tuning = static_cast<fftconv_tuning_t>(9);
  EXPECT_EQ(fftconv_plan_create(&plan, &d, &o), FFTCONV_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  o.tuning = FFTCONV_TUNING_HEURISTIC;
  o.cudnn_search = 4;  // one past the last (3, auto)
  EXPECT_EQ(fftconv_plan_create(&plan, &d, &o), FFTCONV_STATUS_INVALID_ARGUMENT);
}

TEST(CppApi, PlanChecksDescriptorBeforeTheDevice) {
  fftconv::ConvDesc d;
  d.h = 4;
  d.w = 4;
  d.r = 9;
  d.s = 1;
  try {
    fftconv::Plan plan(d);
    FAIL();
  } catch (const fftconv::Error& e) {
    EXPECT_EQ(e.status(), fftconv::Status::kKernelTooLarge);
  }
  if (fftconv::device_count() == 0) {
    d.r = 3;
    try {
      fftconv::Plan plan(d);
      FAIL();
    } catch (const fftconv::Error& e) {
      EXPECT_EQ(e.status(), fftconv::Status::kNoDevice);
    }
  }
}

}  // namespace
