#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "testing/testing.h"

namespace fftconv::testing {
namespace {

const std::string kHeader =
    "name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,groups,dtype\n";

std::string write_temp(const std::string& text) {
  char name[] = "/tmp/fftconv_shapes_XXXXXX";
  const int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  std::FILE* f = fdopen(fd, "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return name;
}

TEST(Shapes, ShippedSuiteLoadsAndValidates) {
  const auto rows = load_shapes(std::string(FFTCONV_TEST_DATA_DIR) + "/shapes/suite.csv");
  ASSERT_GE(rows.size(), 17u);
  EXPECT_EQ(rows[0].name, "seed3_cntk_valid");
  for (const auto& r : rows) EXPECT_EQ(r.desc.validate(), Status::kSuccess) << r.name;
  bool found = false;
  for (const auto& r : rows) {
    if (r.name == "landmark_batch64") {
      found = true;
      EXPECT_EQ(r.desc.to_string(), "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32");
    }
  }
  EXPECT_TRUE(found);
}

TEST(Shapes, MalformedFilesNameTheLine) {
  const struct {
    std::string text;
    std::string expect;
  } cases[] = {
      {"", "no header"},
      {"name,n\n", "columns"},
      {kHeader + "a,1,1,8,8,1,3,3,1,1,1,1,1,1,1\n", ":2: expected 16 columns"},
      {kHeader + "a,1,1,8,x,1,3,3,1,1,1,1,1,1,1,f32\n", ":2: column 'w' is not an integer"},
      {kHeader + "a,1,1,8,8,1,3,3,1,1,1,1,1,1,1,f64\n", ":2: "},
      {"name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,groups,type\n", "header column 16"},
  };
  for (const auto& c : cases) {
    const std::string path = write_temp(c.text);
    try {
      load_shapes(path);
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
    }
    std::remove(path.c_str());
  }
  EXPECT_THROW(load_shapes("/nonexistent/suite.csv"), std::runtime_error);
}

TEST(Shapes, CommentsAndBlankLinesAreSkipped) {
  const std::string path =
      write_temp(kHeader + "# a comment\n\nrow1,1,1,8,8,1,3,3,1,1,1,1,1,1,1,f16\r\n");
  const auto rows = load_shapes(path);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].desc.dtype, DType::kF16);
  std::remove(path.c_str());
}

TEST(Shapes, StreamsReadAsFilesDo) {
  std::istringstream in(kHeader + "# c\nrow1,1,1,8,8,1,3,3,1,1,1,1,1,1,1,bf16\r\n");
  const auto rows = load_shapes(in, "inline.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "row1");
  EXPECT_EQ(rows[0].desc.to_string(), "n1c1h8w8k1r3s3p1x1u1x1d1x1g1bf16");
  std::istringstream bad(kHeader + "a,1,1,8,x,1,3,3,1,1,1,1,1,1,1,f32\n");
  try {
    load_shapes(bad, "inline.csv");
    ADD_FAILURE() << "accepted a bad row";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("inline.csv:2: column 'w'"), std::string::npos)
        << e.what();
  }
  std::istringstream empty("");
  EXPECT_THROW(load_shapes(empty, "inline.csv"), std::runtime_error);
}

// The optional border column: every row then has one; a bad name says which line.
TEST(Shapes, BorderColumn) {
  const std::string header =
      "name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,groups,dtype,border\n";
  std::istringstream in(header + "a,1,1,8,8,1,3,3,1,1,1,1,1,1,1,f32,reflect\n"
                                 "b,1,1,8,8,1,3,3,1,1,1,1,1,1,1,f16,zero\n");
  const auto rows = load_shapes(in, "b.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].desc.border, Border::kReflect);
  EXPECT_EQ(rows[0].desc.to_string(), "n1c1h8w8k1r3s3p1x1u1x1d1x1g1f32-reflect");
  EXPECT_EQ(rows[1].desc.border, Border::kZero);
  std::istringstream missing(header + "a,1,1,8,8,1,3,3,1,1,1,1,1,1,1,f32\n");
  EXPECT_THROW(load_shapes(missing, "b.csv"), std::runtime_error);
  std::istringstream bad(header + "a,1,1,8,8,1,3,3,1,1,1,1,1,1,1,f32,mirror\n");
  try {
    load_shapes(bad, "b.csv");
    ADD_FAILURE() << "accepted an unknown border";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).find("b.csv:2: "), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown border 'mirror'"), std::string::npos) << e.what();
  }
}

TEST(Shapes, WithDtypesNamesVariantsAndDropsDuplicates) {
  const std::string path = write_temp(kHeader +
                                      "a,1,1,8,8,1,3,3,1,1,1,1,1,1,1,f32\n"
                                      "a_f16,1,1,8,8,1,3,3,1,1,1,1,1,1,1,f16\n"
                                      "b_f16,2,1,8,8,1,3,3,1,1,1,1,1,1,1,f16\n");
  const auto rows = with_dtypes(load_shapes(path), parse_dtype_list("f32,f16,bf16"));
  std::remove(path.c_str());
  // a, a_f16 (also the suite's own a_f16, once), a_bf16; b_f16's variants after it.
  ASSERT_EQ(rows.size(), 6u);
  const char* names[] = {"a", "a_f16", "a_bf16", "b", "b_f16", "b_bf16"};
  const DType types[] = {DType::kF32, DType::kF16, DType::kBF16,
                         DType::kF32, DType::kF16, DType::kBF16};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(rows[i].name, names[i]);
    EXPECT_EQ(rows[i].desc.dtype, types[i]) << names[i];
  }
  EXPECT_EQ(rows[3].desc.n, 2);
  // One dtype: every row in it, its own name where it is already in that dtype.
  const auto f16 = with_dtypes(rows, {DType::kF16});
  ASSERT_EQ(f16.size(), 2u);
  EXPECT_EQ(f16[0].name, "a_f16");
  EXPECT_EQ(f16[1].name, "b_f16");
  EXPECT_THROW(parse_dtype_list("f32,f8"), std::exception);
  EXPECT_THROW(parse_dtype_list(""), std::runtime_error);
}

// --interleave's rounds: every run once per round, each run first in turn, so over any
// `count` consecutive rounds every run holds every place in the sequence once.
TEST(Timing, InterleavedRoundsRotateEveryRunThroughEveryPlace) {
  for (int count = 1; count <= 4; ++count) {
    std::vector<std::vector<int>> seen(count, std::vector<int>(count, 0));  // [run][place]
    for (int round = 7; round < 7 + count; ++round) {
      const std::vector<int> order = interleaved_order(round, count);
      ASSERT_EQ(static_cast<int>(order.size()), count);
      EXPECT_EQ(order[0], round % count);
      for (int place = 0; place < count; ++place) ++seen[order[place]][place];
    }
    for (int run = 0; run < count; ++run) {
      for (int place = 0; place < count; ++place) EXPECT_EQ(seen[run][place], 1) << count;
    }
  }
}

// Paired ratios of runs timed in turn: the median of the per-round ratios and its order-statistic
// interval, whose ranks for 100 and 20 rounds are the binomial tables' (40th and 61st; 6th and
// 15th).
TEST(Timing, PairedRatioIsTheMedianRoundRatioWithItsOrderStatisticInterval) {
  std::mt19937_64 gen(5);
  for (const int n : {100, 20}) {
    std::vector<float> base(n), other(n);
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i + 1;
    std::shuffle(order.begin(), order.end(), gen);
    for (int i = 0; i < n; ++i) {
      base[i] = 0.25f * float(1 + i % 3);  // exact in binary: the ratios are the ranks
      other[i] = base[i] * float(order[i]);
    }
    const PairedRatio p = paired_ratio(base, other);
    EXPECT_EQ(p.rounds, n);
    EXPECT_DOUBLE_EQ(p.median, 0.5 * (n / 2 + n / 2 + 1));
    EXPECT_DOUBLE_EQ(p.lo, n == 100 ? 40.0 : 6.0);
    EXPECT_DOUBLE_EQ(p.hi, n == 100 ? 61.0 : 15.0);
    // 1 - 2 P(Binomial(n, 1/2) <= 39) and <= 5.
    EXPECT_NEAR(p.coverage, n == 100 ? 0.96480 : 0.95861, 5e-5);
  }
  // A drift common to both runs cancels round by round.
  std::vector<float> base, other;
  for (int i = 0; i < 50; ++i) {
    base.push_back(0.5f + 0.25f * float(i % 4));
    other.push_back(base.back() * 1.5f);
  }
  const PairedRatio drift = paired_ratio(base, other);
  EXPECT_DOUBLE_EQ(drift.median, 1.5);
  EXPECT_DOUBLE_EQ(drift.lo, 1.5);
  EXPECT_DOUBLE_EQ(drift.hi, 1.5);
  // Five rounds are too few for a 95% interval: the whole range, with its own coverage.
  const PairedRatio few = paired_ratio({1, 1, 1, 1, 1}, {3, 1, 2, 5, 4});
  EXPECT_DOUBLE_EQ(few.median, 3.0);
  EXPECT_DOUBLE_EQ(few.lo, 1.0);
  EXPECT_DOUBLE_EQ(few.hi, 5.0);
  EXPECT_DOUBLE_EQ(few.coverage, 1.0 - 2.0 / 32.0);
  EXPECT_THROW(paired_ratio({1, 1}, {1}), std::invalid_argument);
  EXPECT_THROW(paired_ratio({}, {}), std::invalid_argument);
  EXPECT_THROW(paired_ratio({1, 0}, {1, 1}), std::invalid_argument);
  EXPECT_THROW(paired_ratio({1}, {1}, 1.0), std::invalid_argument);
}

TEST(Tensors, EncodeDecodeRoundTripsRepresentableValues) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
    const auto v = random_values(1000, 42, t);
    for (float e : v) {
      EXPECT_GE(e, -1.0f);
      EXPECT_LE(e, 1.0f);
    }
    const auto bytes = encode(v, t);
    EXPECT_EQ(bytes.size(), v.size() * dtype_size(t));
    EXPECT_EQ(decode(bytes.data(), 1000, t), v);
  }
  EXPECT_EQ(random_values(10, 1, DType::kF32), random_values(10, 1, DType::kF32));
  EXPECT_NE(random_values(10, 1, DType::kF32), random_values(10, 2, DType::kF32));
}

TEST(Compare, MetricsAndNonFinite) {
  const std::vector<double> ref = {1.0, -2.0, 2.0};
  ErrorStats e = compare({1.0f, -2.0f, 2.0f}, ref);
  EXPECT_EQ(e.rel_l2, 0.0);
  EXPECT_TRUE(e.pass(1e-5));
  e = compare({1.0f, -2.0f, 2.3f}, ref);
  EXPECT_NEAR(e.rel_l2, 0.1, 1e-6);
  EXPECT_NEAR(e.max_err, 0.15, 1e-6);
  EXPECT_FALSE(e.pass(1e-2));
  e = compare({1.0f, NAN, 2.0f}, ref);
  EXPECT_EQ(e.nonfinite, 1);
  EXPECT_FALSE(e.pass(1.0));
  e = compare({0.0f}, {0.0});
  EXPECT_TRUE(e.pass(1e-5));
  e = compare({1e-3f}, {0.0});
  EXPECT_FALSE(e.pass(1e-5));
  EXPECT_THROW(compare({1.0f}, {1.0, 2.0}), std::runtime_error);
}

}  // namespace
}  // namespace fftconv::testing
