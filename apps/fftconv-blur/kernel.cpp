#include "kernel.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "image_io.h"

namespace blur {

namespace {

// Far beyond any blur kernel; keeps a malformed shape from asking for gigabytes.
constexpr long long kMaxKernelElements = 1LL << 24;

bool little_endian_host() {
  const std::uint16_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

// Reads a little-endian value of T from p.
template <typename T>
T load_le(const unsigned char* p) {
  unsigned char b[sizeof(T)];
  for (std::size_t i = 0; i < sizeof(T); ++i)
    b[i] = p[little_endian_host() ? i : sizeof(T) - 1 - i];
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError("cannot read kernel '" + path + "': " + std::strerror(errno));
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  if (in.bad()) throw UserError("cannot read kernel '" + path + "': " + std::strerror(errno));
  return bytes;
}

bool ends_with_npy(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == ".npy";
}

// Value of key `key` in a .npy header dict: the text after "'key':" up to the next top-level
// comma or closing brace (a tuple is kept whole).
std::string header_value(const std::string& header, const std::string& key,
                         const std::string& name) {
  std::size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) at = header.find("\"" + key + "\"");
  if (at == std::string::npos) {
    throw UserError("kernel '" + name + "': the .npy header has no '" + key + "' entry");
  }
  std::size_t colon = header.find(':', at);
  if (colon == std::string::npos) {
    throw UserError("kernel '" + name + "': malformed .npy header");
  }
  std::size_t begin = colon + 1;
  while (begin < header.size() && header[begin] == ' ') ++begin;
  std::size_t end = begin;
  int depth = 0;
  while (end < header.size()) {
    const char ch = header[end];
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (depth == 0 && (ch == ',' || ch == '}')) break;
    ++end;
  }
  std::string v = header.substr(begin, end - begin);
  while (!v.empty() && v.back() == ' ') v.pop_back();
  return v;
}

std::string unquote(const std::string& s) {
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) {
    return s.substr(1, s.size() - 2);
  }
  return s;
}

void check_finite(const Kernel& k, const std::string& name) {
  for (std::size_t i = 0; i < k.values.size(); ++i) {
    if (!std::isfinite(k.values[i])) {
      throw UserError("kernel '" + name + "': element (" + std::to_string(i / k.cols) + ", " +
                      std::to_string(i % k.cols) + ") is not a finite float32 number");
    }
  }
}

}  // namespace

double Kernel::sum() const {
  double s = 0.0;
  for (float v : values) s += v;
  return s;
}

Kernel gaussian_kernel(int rows, int cols, double sigma) {
  if (rows < 1 || cols < 1) throw UserError("kernel size must be positive");
  if (!(sigma > 0.0) || !std::isfinite(sigma)) throw UserError("sigma must be a positive number");
  Kernel k;
  k.rows = rows;
  k.cols = cols;
  check_kernel_size(k);
  std::vector<double> g(std::size_t(rows) * std::size_t(cols));
  double total = 0.0;
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) {
      const double di = i - (rows - 1) / 2, dj = j - (cols - 1) / 2;
      const double v = std::exp(-(di * di + dj * dj) / (2.0 * sigma * sigma));
      g[std::size_t(i) * cols + j] = v;
      total += v;
    }
  }
  k.values.resize(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) k.values[i] = static_cast<float>(g[i] / total);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "gaussian %dx%d sigma %.4g", rows, cols, sigma);
  k.source = buf;
  return k;
}

void check_kernel_size(const Kernel& k) {
  if (k.rows % 2 == 0 || k.cols % 2 == 0) {
    throw UserError("kernel" + (k.source.empty() ? std::string() : " '" + k.source + "'") + " is " +
                    std::to_string(k.rows) + "x" + std::to_string(k.cols) +
                    ": both sizes must be odd so that the kernel has a centre element (pad an "
                    "even kernel with a row or column of zeros to place its centre)");
  }
}

Kernel parse_npy(const std::vector<unsigned char>& bytes, const std::string& name) {
  static const unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) {
    throw UserError("kernel '" + name + "': not a .npy file (no \\x93NUMPY magic)");
  }
  const int major = bytes[6];
  std::size_t header_len = 0, header_begin = 0;
  if (major == 1) {
    header_len = load_le<std::uint16_t>(&bytes[8]);
    header_begin = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw UserError("kernel '" + name + "': truncated .npy header");
    header_len = load_le<std::uint32_t>(&bytes[8]);
    header_begin = 12;
  } else {
    throw UserError("kernel '" + name + "': .npy format version " + std::to_string(major) +
                    " is not supported (1, 2 or 3)");
  }
  if (bytes.size() < header_begin + header_len) {
    throw UserError("kernel '" + name + "': truncated .npy header");
  }
  const std::string header(bytes.begin() + header_begin, bytes.begin() + header_begin + header_len);
  const std::string descr = unquote(header_value(header, "descr", name));
  const std::string order = header_value(header, "fortran_order", name);
  const std::string shape = header_value(header, "shape", name);

  std::size_t item = 0;
  if (descr == "<f4") {
    item = 4;
  } else if (descr == "<f8") {
    item = 8;
  } else if (descr == ">f4" || descr == ">f8") {
    throw UserError("kernel '" + name + "': big-endian data ('" + descr +
                    "') is not supported; save it little-endian, e.g. k.astype('<f4')");
  } else {
    throw UserError("kernel '" + name + "': dtype '" + descr +
                    "' is not supported; save float32 or float64 (e.g. k.astype(np.float32))");
  }
  if (order == "True") {
    throw UserError("kernel '" + name +
                    "': Fortran-ordered arrays are not supported; save np.ascontiguousarray(k)");
  }
  if (order != "False") {
    throw UserError("kernel '" + name + "': malformed fortran_order '" + order + "'");
  }
  // shape: "(45, 45)" or "(45,)" or "()".
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') {
    throw UserError("kernel '" + name + "': malformed shape '" + shape + "'");
  }
  std::vector<long long> dims;
  std::stringstream ss(shape.substr(1, shape.size() - 2));
  std::string part;
  while (std::getline(ss, part, ',')) {
    const std::size_t b = part.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    char* end = nullptr;
    const long long v = std::strtoll(part.c_str() + b, &end, 10);
    while (end && *end == ' ') ++end;
    if (!end || *end != '\0' || v < 0) {
      throw UserError("kernel '" + name + "': malformed shape '" + shape + "'");
    }
    dims.push_back(v);
  }
  if (dims.size() != 2) {
    throw UserError("kernel '" + name + "': the array is " + std::to_string(dims.size()) +
                    "-D with shape " + shape + "; a kernel is a 2-D array");
  }
  if (dims[0] < 1 || dims[1] < 1) {
    throw UserError("kernel '" + name + "': the array is empty (shape " + shape + ")");
  }
  if (dims[0] > kMaxKernelElements / dims[1]) {
    throw UserError("kernel '" + name + "': shape " + shape + " is too large for a kernel");
  }
  const std::size_t count = std::size_t(dims[0]) * std::size_t(dims[1]);
  const std::size_t data_begin = header_begin + header_len;
  const std::size_t have = bytes.size() - data_begin;
  if (have != count * item) {
    throw UserError("kernel '" + name + "': shape " + shape + " of '" + descr + "' needs " +
                    std::to_string(count * item) + " bytes of data, the file has " +
                    std::to_string(have) + (have < count * item ? " (truncated)" : ""));
  }
  Kernel k;
  k.rows = static_cast<int>(dims[0]);
  k.cols = static_cast<int>(dims[1]);
  k.values.resize(count);
  const unsigned char* data = bytes.data() + data_begin;
  for (std::size_t i = 0; i < count; ++i) {
    k.values[i] = item == 4 ? load_le<float>(data + 4 * i)
                            : static_cast<float>(load_le<double>(data + 8 * i));
  }
  check_finite(k, name);
  k.source = name;
  return k;
}

Kernel parse_text_kernel(const std::string& text, const std::string& name) {
  Kernel k;
  std::stringstream lines(text);
  std::string line;
  int line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    const std::size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    for (char& ch : line) {
      if (ch == ',' || ch == '\t' || ch == '\r') ch = ' ';
    }
    std::stringstream tokens(line);
    std::string token;
    std::vector<float> row;
    while (tokens >> token) {
      errno = 0;
      char* end = nullptr;
      const double v = std::strtod(token.c_str(), &end);
      if (end == token.c_str() || *end != '\0') {
        throw UserError("kernel '" + name + "' line " + std::to_string(line_no) + ": '" + token +
                        "' is not a number");
      }
      if (!std::isfinite(v) || errno == ERANGE || !std::isfinite(static_cast<float>(v))) {
        throw UserError("kernel '" + name + "' line " + std::to_string(line_no) + ": '" + token +
                        "' is not a finite float32 number");
      }
      row.push_back(static_cast<float>(v));
    }
    if (row.empty()) continue;
    if (k.rows > 0 && static_cast<int>(row.size()) != k.cols) {
      throw UserError("kernel '" + name + "' line " + std::to_string(line_no) + ": " +
                      std::to_string(row.size()) + " values, the rows above have " +
                      std::to_string(k.cols) + " (a kernel is a rectangular matrix)");
    }
    if (static_cast<long long>(k.values.size() + row.size()) > kMaxKernelElements) {
      throw UserError("kernel '" + name + "': too large for a kernel");
    }
    k.cols = static_cast<int>(row.size());
    ++k.rows;
    k.values.insert(k.values.end(), row.begin(), row.end());
  }
  if (k.rows == 0) throw UserError("kernel '" + name + "': no values (an empty matrix)");
  k.source = name;
  return k;
}

Kernel load_kernel(const std::string& path) {
  const std::vector<unsigned char> bytes = read_bytes(path);
  if (bytes.empty()) throw UserError("kernel '" + path + "': the file is empty");
  static const unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  const bool npy = bytes.size() >= 6 && std::memcmp(bytes.data(), kMagic, 6) == 0;
  if (npy || ends_with_npy(path)) return parse_npy(bytes, path);
  for (unsigned char b : bytes) {
    if (b == 0) throw UserError("kernel '" + path + "': a binary file that is not .npy");
  }
  return parse_text_kernel(std::string(bytes.begin(), bytes.end()), path);
}

void write_text_kernel(const std::string& path, const Kernel& k, const std::string& comment) {
  std::ofstream out(path);
  if (!out) throw UserError("cannot write '" + path + "': " + std::strerror(errno));
  std::stringstream lines(comment);
  std::string line;
  while (std::getline(lines, line)) out << "# " << line << "\n";
  char buf[32];
  for (int i = 0; i < k.rows; ++i) {
    for (int j = 0; j < k.cols; ++j) {
      std::snprintf(buf, sizeof(buf), "%.9g", double(k.values[std::size_t(i) * k.cols + j]));
      out << (j ? " " : "") << buf;
    }
    out << "\n";
  }
  out.close();
  if (!out) throw UserError("cannot write '" + path + "': " + std::strerror(errno));
}

void write_npy_kernel(const std::string& path, const Kernel& k) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(k.rows) + ", " + std::to_string(k.cols) + "), }";
  // numpy pads the header with spaces and a newline so the data starts on a 64-byte boundary.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::vector<unsigned char> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bytes.push_back(static_cast<unsigned char>(header.size() & 0xff));
  bytes.push_back(static_cast<unsigned char>(header.size() >> 8));
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (float v : k.values) {
    unsigned char b[4];
    std::memcpy(b, &v, 4);
    if (!little_endian_host()) std::swap(b[0], b[3]), std::swap(b[1], b[2]);
    bytes.insert(bytes.end(), b, b + 4);
  }
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw UserError("cannot write '" + path + "': " + std::strerror(errno));
}

}  // namespace blur
