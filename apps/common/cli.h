// Command-line helpers shared by the tools, on CLI11: the options every tool defines the same
// way, and the one way they report a bad command line (exit status 2) or print --help (0).
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

namespace fftconv_apps {

/// Exit status of a tool after a bad command line.
constexpr int kExitUsage = 2;

/// A tool's App: options given twice keep the last value (as the tools always did), help in
/// columns wide enough for "--workspace-limit BYTES".
inline void configure(CLI::App& app) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.get_formatter()->column_width(32);
}

/// Makes `opt` repeatable: each occurrence takes one value and every value is kept, in order.
inline CLI::Option* repeatable(CLI::Option* opt) {
  return opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1)
      ->allow_extra_args(false);
}

/// A validator from a parser that throws on a bad value (fftconv::parse_dtype, parse_algo, ...):
/// the value is accepted when `parse` returns, and the exception's text is the message.
inline CLI::Validator parsed_by(std::function<void(const std::string&)> parse) {
  return CLI::Validator(
      [parse](std::string& value) {
        try {
          parse(value);
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "");
}

/// A validator for integers from `lo` to `hi` (decimal, nothing after the digits).
inline CLI::Validator integer_in(long long lo,
                                 long long hi = std::numeric_limits<long long>::max()) {
  const std::string range = hi == std::numeric_limits<long long>::max()
                                ? ">= " + std::to_string(lo)
                                : "from " + std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, range](std::string& value) {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
          return "expects an integer " + range + ", not '" + value + "'";
        }
        return std::string();
      },
      "");
}

/// A validator for finite numbers > 0.
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& value) {
        char* end = nullptr;
        const double v = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !(v > 0.0) || v > std::numeric_limits<double>::max()) {
          return "expects a positive number, not '" + value + "'";
        }
        return std::string();
      },
      "");
}

/// The text for a command-line error: CLI11's, except for arguments no option takes, which are
/// named first ("unknown option '--x'", "unexpected argument 'x'"), and for an option given without
/// its value ("--out needs a value" for CLI11's "--out: 1 required DIR missing").
inline std::string error_text(const CLI::App& app, const CLI::ParseError& e) {
  // An argument no option takes comes first, whatever else CLI11 found: it is the likelier
  // mistake (a misspelt option), and CLI11 checks for it last.
  if (!app.get_allow_extras() && !app.remaining().empty()) {
    const std::string first = app.remaining().front();
    const bool dash = first.size() > 1 && first[0] == '-';
    return std::string(dash ? "unknown option '" : "unexpected argument '") + first + "'";
  }
  const std::string text = e.what();
  const std::size_t colon = text.find(": ");
  const std::size_t required = text.find(" required ");
  const std::string missing = " missing";
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr && colon != std::string::npos &&
      required != std::string::npos && required > colon && text.size() > missing.size() &&
      text.compare(text.size() - missing.size(), missing.size(), missing) == 0) {
    const std::string count = text.substr(colon + 2, required - colon - 2);
    return text.substr(0, colon) + " needs " + (count == "1" ? "a value" : count + " values");
  }
  return text;
}

/// Parses the command line into `app`'s options. Returns -1 when the tool should go on; 0 after
/// printing --help on stdout; kExitUsage after a bad command line, reported on stderr as
/// "<prefix><error> (see --help)".
inline int parse(CLI::App& app, int argc, const char* const* argv, const std::string& prefix) {
  // -h or --help anywhere before "--" prints the help, whatever else is wrong (CLI11 would check
  // the values first).
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg == "-h" || arg == "--help") {
      std::fputs(app.help().c_str(), stdout);
      return 0;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s%s (see --help)\n", prefix.c_str(), error_text(app, e).c_str());
    return kExitUsage;
  }
  return -1;
}

}  // namespace fftconv_apps
