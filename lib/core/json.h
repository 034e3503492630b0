// A small JSON value for the library's own files (the tuning cache): parse, inspect, build, dump.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace fftconv::detail {

/// A JSON value: null, bool, number (double), string, array, or object whose keys keep their
/// insertion order. Accessors used on the wrong type throw fftconv::Error(kInvalidArgument).
class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  // Implicit on purpose: building a value reads like the JSON it makes, e.g. o.set("ms", 0.5).
  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : type_(Type::kBool), bool_(b) {}
  Json(double x) : type_(Type::kNumber), number_(x) {}
  Json(int x) : type_(Type::kNumber), number_(x) {}
  Json(const char* s) : type_(Type::kString), string_(s) {}
  Json(std::string s) : type_(Type::kString), string_(std::move(s)) {}
  static Json array(Array items = {});
  static Json object();

  /// Parses a whole document; throws Error(kInvalidArgument, "json: <what> at offset N") on
  /// malformed or truncated input, trailing characters, or nesting deeper than kMaxDepth.
  static Json parse(const std::string& text);
  static constexpr int kMaxDepth = 64;

  /// Valid JSON text. indent > 0: one member per line, nested by `indent` spaces; indent <= 0: one
  /// line, items separated by ", ". Numbers round-trip; integers print without an exponent;
  /// NaN and infinities (which JSON cannot hold) print as null.
  std::string dump(int indent = 2) const;

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  bool as_bool() const;
  double as_number() const;
  const std::string& as_string() const;
  const Array& items() const;     // array elements
  const Object& members() const;  // object members, in insertion order
  std::size_t size() const;       // elements or members; 0 for scalars

  /// The member `key` of an object, or nullptr (missing key, or not an object).
  const Json* find(const std::string& key) const;
  /// The member `key` of an object, or a null value (missing key, or not an object).
  const Json& operator[](const std::string& key) const;

  /// Object: replaces member `key` (keeping its position) or appends it. Returns *this.
  Json& set(const std::string& key, Json value);
  /// Array: appends an element. Returns *this.
  Json& push_back(Json value);

  /// Structural equality; object members compare in order.
  bool operator==(const Json& other) const;
  bool operator!=(const Json& other) const { return !(*this == other); }

 private:
  void dump_to(std::string& out, int indent, int level) const;

  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0.0;
  std::string string_;
  Array array_;
  Object object_;
};

}  // namespace fftconv::detail
