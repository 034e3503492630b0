// fftconv-bench's output: the aligned table on stdout and the JSON results file.
#pragma once

#include <string>
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

/// Writes the results as JSON ({"meta": {...}, "rows": [...]}, a row per line) to `path`, through
/// a temporary file renamed over it once whole. Written after every row (complete = false until
/// the last), so a run stopped early keeps what it measured. A failure is reported on stderr.
void write_json(const std::string& path, const Config& cfg, const std::vector<Row>& rows,
                const std::string& device, bool complete);

}  // namespace bench
