// fftconv-blur's command line (CLI11): the options and their checks, apart from the run.
#pragma once

#include <string>
#include <vector>

namespace blur {

/// What the command line asks for.
struct Args {
  std::vector<std::string> inputs;
  std::string out_dir, out_file, kernel_file, size, device = "auto", border = "reflect";
  double sigma = 0.0;
  bool has_sigma = false, normalize = false, force = false, quiet = false;
  int batch = 0, threads = 0, repeat = 1;
};

/// `v` as an integer from `lo` to `hi`; throws UserError naming `opt` otherwise.
int parse_int(const std::string& opt, const std::string& v, int lo, int hi);

/// Fills `a` from the command line. Returns -1 when the tool should go on, 0 after --help,
/// 2 after a command line CLI11 refuses (reported on stderr); throws UserError for a bad
/// value or combination.
int parse_args(int argc, char** argv, Args& a);

}  // namespace blur
