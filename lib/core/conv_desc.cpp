#include "fftconv/conv_desc.hpp"

#include <cctype>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace fftconv {

const char* dtype_name(DType t) noexcept {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
  }
  return "unknown_dtype";
}

DType parse_dtype(const std::string& name) {
  if (name == "f32") return DType::kF32;
  if (name == "f16") return DType::kF16;
  if (name == "bf16") return DType::kBF16;
  throw Error(Status::kUnsupportedDtype, "unknown dtype '" + name + "' (expected f32, f16 or bf16)");
}

const char* border_name(Border b) noexcept {
  switch (b) {
    case Border::kZero: return "zero";
    case Border::kReflect: return "reflect";
    case Border::kReplicate: return "replicate";
    case Border::kCircular: return "circular";
  }
  return "unknown_border";
}

Border parse_border(const std::string& name) {
  if (name == "zero" || name == "zeros" || name == "constant") return Border::kZero;
  if (name == "reflect") return Border::kReflect;
  if (name == "replicate") return Border::kReplicate;
  if (name == "circular") return Border::kCircular;
  throw Error(Status::kInvalidArgument,
              "unknown border '" + name + "' (expected zero, reflect, replicate or circular)");
}

std::size_t dtype_size(DType t) noexcept {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
  }
  return 0;
}

namespace {
std::int64_t out_extent(std::int64_t in, std::int64_t pad, std::int64_t eff_k, std::int64_t stride) {
  const std::int64_t span = in + 2 * pad - eff_k;
  if (span < 0 || stride < 1) return 0;
  return span / stride + 1;
}

// Largest size of one dimension; keeps every product we form far from int64 overflow.
constexpr std::int64_t kMaxDim = std::int64_t{1} << 31;
// Largest element count of one tensor (2^46 floats = 256 TiB: beyond any device, well inside int64).
constexpr double kMaxElems = 70368744177664.0;
}  // namespace

std::int64_t ConvDesc::out_h() const { return out_extent(h, pad_h, eff_r(), stride_h); }
std::int64_t ConvDesc::out_w() const { return out_extent(w, pad_w, eff_s(), stride_w); }

Status ConvDesc::validate(std::string* message) const {
  auto fail = [&](Status st, const std::string& why) {
    if (message) *message = why + " [" + to_string() + "]";
    return st;
  };
  if (dtype_size(dtype) == 0) {
    return fail(Status::kUnsupportedDtype,
                "unknown dtype value " + std::to_string(static_cast<int>(dtype)));
  }
  if (border != Border::kZero && border != Border::kReflect && border != Border::kReplicate &&
      border != Border::kCircular) {
    return fail(Status::kInvalidArgument,
                "unknown border value " + std::to_string(static_cast<int>(border)));
  }
  const struct {
    const char* name;
    std::int64_t value;
  } positive[] = {{"n", n}, {"c", c},        {"h", h},        {"w", w},     {"k", k},
                  {"r", r}, {"s", s},        {"stride_h", stride_h}, {"stride_w", stride_w},
                  {"dil_h", dil_h}, {"dil_w", dil_w}};
  for (const auto& p : positive) {
    if (p.value < 1) {
      return fail(Status::kBadShape, std::string(p.name) + " = " + std::to_string(p.value) +
                                         " must be at least 1");
    }
    if (p.value > kMaxDim) {
      return fail(Status::kBadShape, std::string(p.name) + " = " + std::to_string(p.value) +
                                         " is larger than 2^31");
    }
  }
  if (pad_h < 0 || pad_w < 0) {
    return fail(Status::kBadShape, "padding (" + std::to_string(pad_h) + ", " +
                                       std::to_string(pad_w) + ") must not be negative");
  }
  if (pad_h > kMaxDim || pad_w > kMaxDim) {
    return fail(Status::kBadShape, "padding is larger than 2^31");
  }
  if (groups < 1) {
    return fail(Status::kBadGroups, "groups = " + std::to_string(groups) + " must be at least 1");
  }
  if (c % groups != 0 || k % groups != 0) {
    return fail(Status::kBadGroups, "groups = " + std::to_string(groups) +
                                        " must divide both C = " + std::to_string(c) +
                                        " and K = " + std::to_string(k));
  }
  if (eff_r() > h + 2 * pad_h || eff_s() > w + 2 * pad_w) {
    return fail(Status::kKernelTooLarge,
                "dilated kernel " + std::to_string(eff_r()) + "x" + std::to_string(eff_s()) +
                    " is larger than the padded input " + std::to_string(h + 2 * pad_h) + "x" +
                    std::to_string(w + 2 * pad_w));
  }
  const double xe = double(n) * c * h * w;
  const double we = double(k) * (c / groups) * r * s;
  const double ye = double(n) * k * out_h() * out_w();
  if (xe > kMaxElems || we > kMaxElems || ye > kMaxElems) {
    return fail(Status::kBadShape, "a tensor has more than 2^46 elements");
  }
  if (message) message->clear();
  return Status::kSuccess;
}

void ConvDesc::check() const {
  std::string why;
  const Status st = validate(&why);
  if (st != Status::kSuccess) throw Error(st, why);
}

std::string ConvDesc::to_string() const {
  std::ostringstream os;
  os << 'n' << n << 'c' << c << 'h' << h << 'w' << w << 'k' << k << 'r' << r << 's' << s << 'p'
     << pad_h << 'x' << pad_w << 'u' << stride_h << 'x' << stride_w << 'd' << dil_h << 'x' << dil_w
     << 'g' << groups << dtype_name(dtype);
  if (border != Border::kZero) os << '-' << border_name(border);
  return os.str();
}

ConvDesc ConvDesc::parse(const std::string& text) {
  ConvDesc d;
  std::size_t pos = 0;
  auto bad = [&](const std::string& why) {
    return Error(Status::kInvalidArgument,
                 "malformed descriptor string '" + text + "' at offset " + std::to_string(pos) +
                     ": " + why);
  };
  auto expect = [&](char ch) {
    if (pos >= text.size() || text[pos] != ch) throw bad(std::string("expected '") + ch + "'");
    ++pos;
  };
  auto number = [&]() -> std::int64_t {
    const bool neg = pos < text.size() && text[pos] == '-';
    const std::size_t start = neg ? pos + 1 : pos;
    std::size_t end = start;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end == start || end - start > 18) throw bad("expected a number");
    std::int64_t v = std::strtoll(text.c_str() + start, nullptr, 10);
    pos = end;
    return neg ? -v : v;
  };
  expect('n'); d.n = number();
  expect('c'); d.c = number();
  expect('h'); d.h = number();
  expect('w'); d.w = number();
  expect('k'); d.k = number();
  expect('r'); d.r = number();
  expect('s'); d.s = number();
  expect('p'); d.pad_h = number(); expect('x'); d.pad_w = number();
  expect('u'); d.stride_h = number(); expect('x'); d.stride_w = number();
  expect('d'); d.dil_h = number(); expect('x'); d.dil_w = number();
  expect('g'); d.groups = number();
  const std::size_t dash = text.find('-', pos);
  const std::string rest = text.substr(pos, dash == std::string::npos ? dash : dash - pos);
  if (rest != "f32" && rest != "f16" && rest != "bf16") throw bad("expected dtype f32, f16 or bf16");
  d.dtype = parse_dtype(rest);
  if (dash != std::string::npos) {
    pos = dash + 1;
    const std::string border = text.substr(pos);
    if (border != "reflect" && border != "replicate" && border != "circular") {
      throw bad("expected border reflect, replicate or circular");
    }
    d.border = parse_border(border);
  }
  return d;
}

bool ConvDesc::operator==(const ConvDesc& o) const {
  return n == o.n && c == o.c && h == o.h && w == o.w && k == o.k && r == o.r && s == o.s &&
         pad_h == o.pad_h && pad_w == o.pad_w && stride_h == o.stride_h &&
         stride_w == o.stride_w && dil_h == o.dil_h && dil_w == o.dil_w && groups == o.groups &&
         dtype == o.dtype && border == o.border;
}

}  // namespace fftconv
