// fftconv-bench's output: the aligned table on stdout and the JSON results file.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "run.h"

namespace bench {

/// `v` in printf format `f`, or "-" for NaN.
std::string fmt(double v, const char* f = "%.3f");

/// The table's header line.
void print_header();
/// A row's line of the table, then its sweeps, stages, paired ratios and notes below it.
void print_row(const Row& r);

/// --resume: what earlier runs wrote to the JSON file, kept as written.
struct Resumed {
  std::vector<std::string> rows;   ///< each row's JSON object
  std::vector<std::string> metas;  ///< the earlier runs' meta objects, oldest first
  std::set<std::pair<std::string, std::string>> done;  ///< the rows' (desc, pass)
  std::string device;                                  ///< the device they ran on
  int out_of_tolerance = 0;                            ///< rows verified and found out of tolerance
  int dropped = 0;  ///< rows that could not be measured (status "error..."): run again
};

/// Reads `path` for --resume. A file that does not exist resumes nothing. Rows whose status
/// starts with "error" are dropped (run again). Throws std::runtime_error for a file that is not
/// such a results file, or one measured with other settings than cfg's (iters, warmup, graph,
/// interleave, algo, verify, cudnn, gemm, gaussian; the cuDNN search may differ, each row names
/// its own), naming the difference.
Resumed read_resumed(const std::string& path, const Config& cfg);

/// Writes the results as JSON ({"meta": {...}, "rows": [...]}, a row per line) to `path`, through
/// a temporary file renamed over it once whole: `resumed`'s rows first, then `rows`; the meta
/// lists the earlier runs' metas under "resumed". Written after every row (complete = false
/// until the last), so a run stopped early keeps what it measured. A failure is reported on
/// stderr.
void write_json(const std::string& path, const Config& cfg, const std::vector<Row>& rows,
                const std::string& device, bool complete, const Resumed& resumed = {});

}  // namespace bench
