// forward()'s argument checks run before anything is enqueued; they need no device.
#include <gtest/gtest.h>

#include <cstdint>

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

}  // namespace
}  // namespace fftconv::detail
