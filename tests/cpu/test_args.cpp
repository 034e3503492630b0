// The passes' argument checks run before anything is enqueued; they need no device.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "api/args_check.h"

namespace fftconv::detail {
namespace {

struct Args {
  ConvDesc d;
  // Fake, well-separated device addresses: the checks never dereference them.
  const void* x = reinterpret_cast<const void*>(std::uintptr_t{0x10000000});
  const void* w = reinterpret_cast<const void*>(std::uintptr_t{0x20000000});
  const void* bias = reinterpret_cast<const void*>(std::uintptr_t{0x30000000});
  void* y = reinterpret_cast<void*>(std::uintptr_t{0x40000000});
  void* ws = reinterpret_cast<void*>(std::uintptr_t{0x50000000});
  std::size_t ws_bytes = 4096, ws_needed = 4096;
  std::string msg;

  Args() {
    d.n = 2; d.c = 3; d.h = 16; d.w = 16; d.k = 4; d.r = 5; d.s = 5; d.pad_h = d.pad_w = 2;
  }
  bool kept = false;
  Status check() { return check_forward_args(d, x, w, bias, y, ws, ws_bytes, ws_needed, kept, &msg); }
};

TEST(ForwardArgs, ValidArgumentsPass) {
  Args a;
  EXPECT_EQ(a.check(), Status::kSuccess) << a.msg;
  a.bias = nullptr;  // bias is optional
  EXPECT_EQ(a.check(), Status::kSuccess) << a.msg;
  a.ws = nullptr;  // no workspace needed, none given
  a.ws_bytes = a.ws_needed = 0;
  EXPECT_EQ(a.check(), Status::kSuccess) << a.msg;
}

TEST(ForwardArgs, NullTensors) {
  for (int which = 0; which < 3; ++which) {
    Args a;
    const char* name = nullptr;
    if (which == 0) { a.x = nullptr; name = "x"; }
    if (which == 1) { a.w = nullptr; name = "w"; }
    if (which == 2) { a.y = nullptr; name = "y"; }
    EXPECT_EQ(a.check(), Status::kNullPointer);
    EXPECT_EQ(a.msg.rfind(std::string(name) + " is null", 0), 0u) << a.msg;
  }
}

TEST(ForwardArgs, NullFilterNeedsAKeptOne) {
  Args a;
  a.w = nullptr;
  EXPECT_EQ(a.check(), Status::kNullPointer);
  EXPECT_NE(a.msg.find("set_filter"), std::string::npos) << a.msg;
  a.kept = true;
  EXPECT_EQ(a.check(), Status::kSuccess) << a.msg;
}

TEST(ForwardArgs, NullWorkspaceWhenOneIsNeeded) {
  Args a;
  a.ws = nullptr;
  EXPECT_EQ(a.check(), Status::kNullPointer);
  EXPECT_NE(a.msg.find("workspace"), std::string::npos);
}

TEST(ForwardArgs, WorkspaceTooSmallNamesBothSizes) {
  Args a;
  a.ws_bytes = 4095;
  EXPECT_EQ(a.check(), Status::kWorkspaceTooSmall);
  EXPECT_NE(a.msg.find("4095"), std::string::npos);
  EXPECT_NE(a.msg.find("4096"), std::string::npos);
}

TEST(ForwardArgs, MisalignedTensors) {
  for (int which = 0; which < 4; ++which) {
    Args a;
    const std::uintptr_t off = 2;  // not a multiple of 4 bytes
    if (which == 0) a.x = static_cast<const char*>(a.x) + off;
    if (which == 1) a.w = static_cast<const char*>(a.w) + off;
    if (which == 2) a.bias = static_cast<const char*>(a.bias) + off;
    if (which == 3) a.y = static_cast<char*>(a.y) + off;
    EXPECT_EQ(a.check(), Status::kMisalignedPointer) << which;
  }
  Args h;  // 2-byte offsets are fine for fp16
  h.d.dtype = DType::kF16;
  h.x = static_cast<const char*>(h.x) + 2;
  EXPECT_EQ(h.check(), Status::kSuccess) << h.msg;
  h.x = static_cast<const char*>(h.x) + 1;
  EXPECT_EQ(h.check(), Status::kMisalignedPointer);
}

TEST(ForwardArgs, MisalignedWorkspace) {
  Args a;
  a.ws = static_cast<char*>(a.ws) + 128;
  EXPECT_EQ(a.check(), Status::kMisalignedPointer);
  EXPECT_NE(a.msg.find("256"), std::string::npos);
}

TEST(ForwardArgs, OverlappingOutputIsRejected) {
  Args a;
  a.y = const_cast<void*>(a.x);
  EXPECT_EQ(a.check(), Status::kInvalidArgument);
  EXPECT_NE(a.msg.find("x overlaps y"), std::string::npos);
  Args b;  // y starting inside w
  b.y = const_cast<char*>(static_cast<const char*>(b.w)) + 16;
  EXPECT_EQ(b.check(), Status::kInvalidArgument);
  Args c;  // workspace overlapping y
  c.ws = static_cast<char*>(c.y);
  EXPECT_EQ(c.check(), Status::kInvalidArgument);
  EXPECT_NE(c.msg.find("workspace"), std::string::npos);
  Args e;  // adjacent, not overlapping: y right after x
  e.y = const_cast<char*>(static_cast<const char*>(e.x)) + e.d.x_elems() * 4;
  EXPECT_EQ(e.check(), Status::kSuccess) << e.msg;
}

// backward_data(dy, w, dx) and backward_filter(x, dy, dw): the same checks with the pass's
// tensors, names and sizes.
struct BwdArgs {
  ConvDesc d;
  const void* x = reinterpret_cast<const void*>(std::uintptr_t{0x10000000});
  const void* w = reinterpret_cast<const void*>(std::uintptr_t{0x20000000});
  const void* dy = reinterpret_cast<const void*>(std::uintptr_t{0x30000000});
  void* out = reinterpret_cast<void*>(std::uintptr_t{0x40000000});
  void* ws = reinterpret_cast<void*>(std::uintptr_t{0x50000000});
  std::size_t ws_bytes = 4096, ws_needed = 4096;
  DType dw_dtype = DType::kF32;
  float alpha = 1.0f, beta = 0.0f;
  bool kept = false;
  std::string msg;

  BwdArgs() {
    d.n = 2; d.c = 3; d.h = 16; d.w = 16; d.k = 4; d.r = 5; d.s = 5; d.pad_h = d.pad_w = 2;
  }
  Status dgrad() {
    return check_backward_data_args(d, dy, w, out, ws, ws_bytes, ws_needed, kept, &msg);
  }
  Status wgrad() {
    return check_backward_filter_args(d, x, dy, out, dw_dtype, alpha, beta, ws, ws_bytes,
                                      ws_needed, &msg);
  }
};

TEST(BackwardArgs, ValidArgumentsPass) {
  BwdArgs a;
  EXPECT_EQ(a.dgrad(), Status::kSuccess) << a.msg;
  EXPECT_EQ(a.wgrad(), Status::kSuccess) << a.msg;
  a.beta = -0.5f;
  a.alpha = 0.0f;
  EXPECT_EQ(a.wgrad(), Status::kSuccess) << a.msg;
}

TEST(BackwardArgs, NullTensorsAreNamed) {
  for (const char* name : {"dy", "w", "dx"}) {
    BwdArgs a;
    if (name == std::string("dy")) a.dy = nullptr;
    if (name == std::string("w")) a.w = nullptr;
    if (name == std::string("dx")) a.out = nullptr;
    EXPECT_EQ(a.dgrad(), Status::kNullPointer);
    EXPECT_EQ(a.msg.rfind(std::string(name) + " is null", 0), 0u) << a.msg;
  }
  for (const char* name : {"x", "dy", "dw"}) {
    BwdArgs a;
    if (name == std::string("x")) a.x = nullptr;
    if (name == std::string("dy")) a.dy = nullptr;
    if (name == std::string("dw")) a.out = nullptr;
    EXPECT_EQ(a.wgrad(), Status::kNullPointer);
    EXPECT_EQ(a.msg.rfind(std::string(name) + " is null", 0), 0u) << a.msg;
  }
  BwdArgs kept;
  kept.w = nullptr;
  kept.kept = true;  // backward data may use the kept filter
  EXPECT_EQ(kept.dgrad(), Status::kSuccess) << kept.msg;
}

TEST(BackwardArgs, ScalingMustBeFinite) {
  BwdArgs a;
  a.beta = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(a.wgrad(), Status::kInvalidArgument);
  EXPECT_NE(a.msg.find("alpha and beta"), std::string::npos) << a.msg;
  a.beta = 0.0f;
  a.alpha = std::numeric_limits<float>::infinity();
  EXPECT_EQ(a.wgrad(), Status::kInvalidArgument);
}

TEST(BackwardArgs, OverlapsUseTheOutputsSize) {
  BwdArgs a;
  // dx has n*c*h*w = 1536 fp32 elements (6144 bytes): dy 4 KiB past it overlaps.
  a.dy = static_cast<char*>(a.out) + 4096;
  EXPECT_EQ(a.dgrad(), Status::kInvalidArgument);
  EXPECT_NE(a.msg.find("dy overlaps dx"), std::string::npos) << a.msg;
  // dw has k*c*r*s = 300 elements: fp32 dw (1200 bytes) overlaps x placed 1 KiB after it, an
  // fp16 one (600 bytes) does not.
  BwdArgs b;
  b.d.dtype = DType::kF16;
  b.x = static_cast<char*>(b.out) + 1024;
  b.dw_dtype = DType::kF32;
  EXPECT_EQ(b.wgrad(), Status::kInvalidArgument);
  EXPECT_NE(b.msg.find("x overlaps dw"), std::string::npos) << b.msg;
  b.dw_dtype = DType::kF16;
  EXPECT_EQ(b.wgrad(), Status::kSuccess) << b.msg;
}

TEST(BackwardArgs, MisalignedAndShortWorkspace) {
  BwdArgs a;
  a.d.dtype = DType::kF16;
  a.dw_dtype = DType::kF32;
  a.out = static_cast<char*>(a.out) + 2;  // fp16-aligned, not fp32-aligned
  EXPECT_EQ(a.wgrad(), Status::kMisalignedPointer);
  EXPECT_NE(a.msg.find("dw is not aligned to its 4-byte elements"), std::string::npos) << a.msg;
  BwdArgs b;
  b.ws_bytes = b.ws_needed - 1;
  EXPECT_EQ(b.dgrad(), Status::kWorkspaceTooSmall);
}

}  // namespace
}  // namespace fftconv::detail
