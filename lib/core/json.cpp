#include "core/json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "fftconv/status.hpp"

namespace fftconv::detail {

namespace {

const char* type_name(Json::Type t) {
  switch (t) {
    case Json::Type::kNull:
      return "null";
    case Json::Type::kBool:
      return "bool";
    case Json::Type::kNumber:
      return "number";
    case Json::Type::kString:
      return "string";
    case Json::Type::kArray:
      return "array";
    case Json::Type::kObject:
      return "object";
  }
  return "?";
}

[[noreturn]] void throw_type(Json::Type want, Json::Type have) {
  throw Error(Status::kInvalidArgument,
              std::string("json: expected ") + type_name(want) + ", found " + type_name(have));
}

// Integral doubles below 2^63 print as plain integers; 9.2e18 is still exact in an int64.
constexpr double kMaxPlainInteger = 9.2e18;

void append_number(std::string& out, double x) {
  if (!std::isfinite(x)) {
    out += "null";
    return;
  }
  char buf[32];
  std::to_chars_result r;
  if (x == std::trunc(x) && std::fabs(x) < kMaxPlainInteger && !(x == 0 && std::signbit(x))) {
    r = std::to_chars(buf, buf + sizeof(buf), static_cast<long long>(x));
  } else {
    // Shortest text that reads back to the same double; independent of the C locale.
    r = std::to_chars(buf, buf + sizeof(buf), x);
  }
  out.append(buf, r.ptr);
}

void append_string(std::string& out, const std::string& s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += ch;  // other bytes, UTF-8 included, pass through
        }
    }
  }
  out += '"';
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Recursive descent over the RFC 8259 grammar; every error names the byte offset where it was
// detected.
class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Json document() {
    skip_ws();
    Json v = parse_value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { fail_at(what, pos_); }
  [[noreturn]] void fail_at(const std::string& what, std::size_t offset) const {
    throw Error(Status::kInvalidArgument, "json: " + what + " at offset " + std::to_string(offset));
  }

  // A byte as an error message shows it: printable ASCII quoted, anything else in hex.
  static std::string describe(char c) {
    if (c > 0x20 && c < 0x7F) return std::string("character '") + c + "'";
    char buf[16];
    std::snprintf(buf, sizeof(buf), "byte 0x%02x", static_cast<unsigned char>(c));
    return buf;
  }

  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const {
    if (at_end()) fail("unexpected end of input");
    return s_[pos_];
  }

  void skip_ws() {
    while (!at_end() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  Json parse_value(int depth) {
    const char c = peek();
    switch (c) {
      case '{':
        return parse_object(depth + 1);
      case '[':
        return parse_array(depth + 1);
      case '"':
        return Json(parse_string());
      case 't':
        literal("true");
        return Json(true);
      case 'f':
        literal("false");
        return Json(false);
      case 'n':
        literal("null");
        return Json();
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return Json(parse_number());
        fail("unexpected " + describe(c));
    }
  }

  void literal(const char* word) {
    const std::size_t start = pos_;
    for (const char* p = word; *p; ++p, ++pos_) {
      if (at_end()) fail("unexpected end of input");
      if (s_[pos_] != *p) fail_at("bad literal", start);
    }
  }

  Json parse_array(int depth) {
    if (depth > Json::kMaxDepth) fail("nesting deeper than " + std::to_string(Json::kMaxDepth));
    ++pos_;  // '['
    Json a = Json::array();
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return a;
    }
    for (;;) {
      skip_ws();
      a.push_back(parse_value(depth));
      skip_ws();
      const char c = peek();
      ++pos_;
      if (c == ']') return a;
      if (c != ',') fail_at("expected ',' or ']'", pos_ - 1);
    }
  }

  Json parse_object(int depth) {
    if (depth > Json::kMaxDepth) fail("nesting deeper than " + std::to_string(Json::kMaxDepth));
    ++pos_;  // '{'
    Json o = Json::object();
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return o;
    }
    for (;;) {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      std::string key = parse_string();
      skip_ws();
      expect(':');
      skip_ws();
      o.set(key, parse_value(depth));  // a repeated key keeps its last value
      skip_ws();
      const char c = peek();
      ++pos_;
      if (c == '}') return o;
      if (c != ',') fail_at("expected ',' or '}'", pos_ - 1);
    }
  }

  std::uint32_t hex4() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      int d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        fail("bad \\u escape");
      }
      v = v * 16 + static_cast<std::uint32_t>(d);
      ++pos_;
    }
    return v;
  }

  std::string parse_string() {
    const std::size_t start = pos_;
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail_at("unterminated string", start);
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      const std::size_t esc = pos_++;
      if (at_end()) fail_at("unterminated string", start);
      switch (s_[pos_++]) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          std::uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail_at("unpaired surrogate", esc);
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            // A high surrogate must be followed by an escaped low one.
            if (pos_ + 1 >= s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') {
              fail_at("unpaired surrogate", esc);
            }
            pos_ += 2;
            const std::uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) fail_at("unpaired surrogate", esc);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail_at("bad escape", esc);
      }
    }
  }

  void digits() {
    if (at_end() || s_[pos_] < '0' || s_[pos_] > '9') fail("bad number");
    while (!at_end() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
  }

  double parse_number() {
    const std::size_t start = pos_;
    if (s_[pos_] == '-') ++pos_;
    if (!at_end() && s_[pos_] == '0') {
      ++pos_;  // no leading zeros
    } else {
      digits();
    }
    if (!at_end() && s_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (!at_end() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (!at_end() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      digits();
    }
    double x = 0.0;
    const auto r = std::from_chars(s_.data() + start, s_.data() + pos_, x);
    if (r.ec == std::errc::result_out_of_range) fail_at("number out of range", start);
    if (r.ec != std::errc() || r.ptr != s_.data() + pos_) fail_at("bad number", start);
    return x;
  }

  const std::string& s_;
  std::size_t pos_ = 0;
};

void newline(std::string& out, int indent, int level) {
  out += '\n';
  out.append(static_cast<std::size_t>(indent) * static_cast<std::size_t>(level), ' ');
}

}  // namespace

Json Json::array(Array items) {
  Json j;
  j.type_ = Type::kArray;
  j.array_ = std::move(items);
  return j;
}

Json Json::object() {
  Json j;
  j.type_ = Type::kObject;
  return j;
}

Json Json::parse(const std::string& text) { return Parser(text).document(); }

bool Json::as_bool() const {
  if (type_ != Type::kBool) throw_type(Type::kBool, type_);
  return bool_;
}

double Json::as_number() const {
  if (type_ != Type::kNumber) throw_type(Type::kNumber, type_);
  return number_;
}

const std::string& Json::as_string() const {
  if (type_ != Type::kString) throw_type(Type::kString, type_);
  return string_;
}

const Json::Array& Json::items() const {
  if (type_ != Type::kArray) throw_type(Type::kArray, type_);
  return array_;
}

const Json::Object& Json::members() const {
  if (type_ != Type::kObject) throw_type(Type::kObject, type_);
  return object_;
}

std::size_t Json::size() const {
  if (type_ == Type::kArray) return array_.size();
  if (type_ == Type::kObject) return object_.size();
  return 0;
}

const Json* Json::find(const std::string& key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& m : object_) {
    if (m.first == key) return &m.second;
  }
  return nullptr;
}

const Json& Json::operator[](const std::string& key) const {
  static const Json kNull;
  const Json* v = find(key);
  return v ? *v : kNull;
}

Json& Json::set(const std::string& key, Json value) {
  if (type_ != Type::kObject) throw_type(Type::kObject, type_);
  for (auto& m : object_) {
    if (m.first == key) {
      m.second = std::move(value);
      return *this;
    }
  }
  object_.emplace_back(key, std::move(value));
  return *this;
}

Json& Json::push_back(Json value) {
  if (type_ != Type::kArray) throw_type(Type::kArray, type_);
  array_.push_back(std::move(value));
  return *this;
}

bool Json::operator==(const Json& other) const {
  if (type_ != other.type_) return false;
  switch (type_) {
    case Type::kNull:
      return true;
    case Type::kBool:
      return bool_ == other.bool_;
    case Type::kNumber:
      return number_ == other.number_;
    case Type::kString:
      return string_ == other.string_;
    case Type::kArray:
      return array_ == other.array_;
    case Type::kObject:
      return object_ == other.object_;
  }
  return false;
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

void Json::dump_to(std::string& out, int indent, int level) const {
  switch (type_) {
    case Type::kNull:
      out += "null";
      return;
    case Type::kBool:
      out += bool_ ? "true" : "false";
      return;
    case Type::kNumber:
      append_number(out, number_);
      return;
    case Type::kString:
      append_string(out, string_);
      return;
    case Type::kArray:
    case Type::kObject:
      break;
  }
  const bool is_arr = type_ == Type::kArray;
  const std::size_t n = size();
  out += is_arr ? '[' : '{';
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += indent > 0 ? "," : ", ";
    if (indent > 0) newline(out, indent, level + 1);
    if (is_arr) {
      array_[i].dump_to(out, indent, level + 1);
    } else {
      append_string(out, object_[i].first);
      out += ": ";
      object_[i].second.dump_to(out, indent, level + 1);
    }
  }
  if (indent > 0 && n > 0) newline(out, indent, level);
  out += is_arr ? ']' : '}';
}

}  // namespace fftconv::detail
