// fftconv-tune's command line (CLI11).
#pragma once

#include <string>
#include <vector>

namespace tune {

/// What the command line asks for.
struct Args {
  std::vector<std::string> files;  ///< --shapes, in order
  std::string out;                 ///< --out: the cache to fill
  std::string filter;
  bool exhaustive = false;
};

/// Fills `a` from the command line. Returns -1 when the tool should go on, 0 after --help, 2
/// after a bad command line (reported on stderr).
int parse_args(int argc, char** argv, Args& a);

}  // namespace tune
