// Helpers of the fuzz targets: a check that stops the run with a message, and the split of an
// input into a command line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <sanitizer/common_interface_defs.h>

/// A property every input must keep: on failure, says which and aborts (libFuzzer records the
/// input as a crash). The message goes where sanitizer reports go, which stays open when
/// -close_fd_mask closes the target's stderr.
#define FUZZ_CHECK(cond, what)                                                           \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      const std::string fuzz_message_ = std::string("fuzz check failed at ") + __FILE__ + \
                                        ":" + std::to_string(__LINE__) + ": " + #cond +   \
                                        ": " + std::string(what);                        \
      __sanitizer_report_error_summary(fuzz_message_.c_str());                           \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/// A command line from fuzz input: `program`, then one argument per line ('\n' separates; one
/// final newline ends the last argument instead of adding an empty one). A NUL byte ends its
/// argument where the C string does, as in a real argv.
class Argv {
 public:
  Argv(const char* program, const std::uint8_t* data, std::size_t size) {
    args_.emplace_back(program);
    std::string text = text_of(data, size);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (size > 0) {
      std::size_t start = 0;
      for (;;) {
        const std::size_t nl = text.find('\n', start);
        args_.push_back(text.substr(start, nl == std::string::npos ? std::string::npos : nl - start));
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
    for (std::string& a : args_) ptrs_.push_back(a.data());
    ptrs_.push_back(nullptr);  // argv[argc] is null, as main() gets it
  }
  Argv(const Argv&) = delete;
  Argv& operator=(const Argv&) = delete;

  int argc() const { return static_cast<int>(args_.size()); }
  char** argv() { return ptrs_.data(); }
  /// The whole command line, for messages.
  std::string text() const {
    std::string s;
    for (const std::string& a : args_) s += (s.empty() ? "" : " ") + ("'" + a + "'");
    return s;
  }

 private:
  std::vector<std::string> args_;
  std::vector<char*> ptrs_;
};

}  // namespace fuzz
