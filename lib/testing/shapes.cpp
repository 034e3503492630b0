// Shape suites: the CSV reader and the dtype variants of its rows.
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <istream>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "testing/testing.h"

namespace fftconv::testing {

void PrintTo(const ShapeRow& row, std::ostream* os) {
  *os << row.name << " " << row.desc.to_string();
}

std::vector<ShapeRow> load_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open shape suite '" + path + "'");
  return load_shapes(in, path);
}

std::vector<ShapeRow> load_shapes(std::istream& in, const std::string& source) {
  // An optional last column, "border" (zero, reflect, replicate, circular; ConvDesc::border),
  // given in the header or not at all.
  static const char* kColumns[] = {"name",  "n",     "c",      "h",     "w",        "k",
                                   "r",     "s",     "pad_h",  "pad_w", "stride_h", "stride_w",
                                   "dil_h", "dil_w", "groups", "dtype", "border"};
  constexpr std::size_t kMaxColumns = sizeof(kColumns) / sizeof(kColumns[0]);
  std::size_t kNumColumns = kMaxColumns - 1;
  std::vector<ShapeRow> rows;
  std::string line;
  int line_no = 0;
  bool header_seen = false;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    auto where = [&] { return source + ":" + std::to_string(line_no) + ": "; };
    if (!header_seen && cells.size() == kMaxColumns) kNumColumns = kMaxColumns;
    if (cells.size() != kNumColumns) {
      throw std::runtime_error(where() + "expected " + std::to_string(kNumColumns) +
                               " columns, found " + std::to_string(cells.size()));
    }
    if (!header_seen) {
      for (std::size_t i = 0; i < kNumColumns; ++i) {
        if (cells[i] != kColumns[i]) {
          throw std::runtime_error(where() + "header column " + std::to_string(i + 1) + " is '" +
                                   cells[i] + "', expected '" + kColumns[i] + "'");
        }
      }
      header_seen = true;
      continue;
    }
    std::int64_t v[14];
    for (int i = 0; i < 14; ++i) {
      const std::string& c = cells[i + 1];
      char* end = nullptr;
      v[i] = std::strtoll(c.c_str(), &end, 10);
      if (c.empty() || *end != '\0') {
        throw std::runtime_error(where() + "column '" + kColumns[i + 1] + "' is not an integer: '" +
                                 c + "'");
      }
    }
    ShapeRow row;
    row.name = cells[0];
    ConvDesc& d = row.desc;
    d.n = v[0];
    d.c = v[1];
    d.h = v[2];
    d.w = v[3];
    d.k = v[4];
    d.r = v[5];
    d.s = v[6];
    d.pad_h = v[7];
    d.pad_w = v[8];
    d.stride_h = v[9];
    d.stride_w = v[10];
    d.dil_h = v[11];
    d.dil_w = v[12];
    d.groups = v[13];
    try {
      d.dtype = parse_dtype(cells[15]);
      if (kNumColumns == kMaxColumns) d.border = parse_border(cells[16]);
    } catch (const std::exception& e) {
      throw std::runtime_error(where() + e.what());
    }
    rows.push_back(row);
  }
  if (!header_seen) throw std::runtime_error("shape suite '" + source + "' has no header line");
  return rows;
}

std::vector<ShapeRow> with_dtypes(const std::vector<ShapeRow>& rows,
                                  const std::vector<DType>& dtypes) {
  std::vector<ShapeRow> out;
  std::set<std::string> seen;
  for (const ShapeRow& row : rows) {
    std::string base = row.name;
    for (const char* suffix : {"_f32", "_f16", "_bf16"}) {
      const std::size_t n = std::strlen(suffix);
      if (base.size() > n && base.compare(base.size() - n, n, suffix) == 0) {
        base.resize(base.size() - n);
        break;
      }
    }
    for (DType t : dtypes) {
      ShapeRow v = row;
      v.desc.dtype = t;
      if (t != row.desc.dtype)
        v.name = base + (t == DType::kF32 ? "" : std::string("_") + dtype_name(t));
      if (seen.insert(v.desc.to_string()).second) out.push_back(v);
    }
  }
  return out;
}

std::vector<DType> parse_dtype_list(const std::string& list) {
  std::vector<DType> out;
  std::stringstream items(list);
  std::string item;
  while (std::getline(items, item, ',')) out.push_back(parse_dtype(item));
  if (out.empty()) throw std::runtime_error("the dtype list is empty (give f32, f16 and/or bf16)");
  return out;
}

}  // namespace fftconv::testing
