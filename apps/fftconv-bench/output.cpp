// fftconv-bench's output: the aligned table and the JSON results (nlohmann::json).
#include "output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

namespace bench {
namespace {

namespace ft = fftconv::testing;
using Json = nlohmann::ordered_json;  // keys in the order written

// A row that took this long (wall clock) says where the time went under its line.
constexpr double kSlowRowSeconds = 10.0;

// A number as the readers want it: 6 significant digits (as the results have always been
// written), null for NaN and infinities (not measured).
Json number(double v) {
  if (!std::isfinite(v)) return nullptr;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return std::strtod(buf, nullptr);
}

// Names to times, in order: {"regtile_1x1": 0.0306, ...}.
Json times(const std::vector<std::pair<std::string, double>>& named) {
  Json o = Json::object();
  for (const auto& [name, ms] : named) o[name] = number(ms);
  return o;
}

Json row_json(const Row& r) {
  Json j;
  j["name"] = r.name;
  j["desc"] = r.desc;
  j["pass"] = r.pass;
  j["within_tolerance"] = r.ok;
  j["verified"] = r.verified;
  j["dtype"] = r.dtype;
  j["engine_ms"] = number(r.engine_ms);
  j["plan_ms"] = number(r.plan_ms);
  j["host_us"] = number(r.host_us);
  j["cold_ms"] = number(r.cold_ms);
  j["fft_ms"] = number(r.fft_ms);
  j["cudnn_ms"] = number(r.cudnn_ms);
  j["cudnn_algo"] = r.cudnn_algo;
  j["cudnn_tf32_ms"] = number(r.cudnn_tf32_ms);
  j["cudnn_tf32_algo"] = r.cudnn_tf32_algo;
  j["cudnn_search"] = r.cudnn_search;
  j["speedup"] = number(r.speedup);
  j["rel_err"] = number(r.rel_err);
  j["max_err"] = number(r.max_err);
  j["algo"] = r.algo;
  j["fft_h"] = r.fft_h;
  j["fft_w"] = r.fft_w;
  j["tiles_h"] = r.tiles_h;
  j["tiles_w"] = r.tiles_w;
  j["kept_ms"] = number(r.kept_ms);
  j["kept_rel_err"] = number(r.kept_rel_err);
  j["kept_cold_ms"] = number(r.kept_cold_ms);
  j["kept_host_us"] = number(r.kept_host_us);
  if (!r.kept_note.empty()) j["kept_plan"] = r.kept_note;
  if (!r.shared_note.empty()) {
    j["shared_ms"] = number(r.shared_ms);
    j["shared_rel_err"] = number(r.shared_rel_err);
    j["shared_cold_ms"] = number(r.shared_cold_ms);
    j["shared_host_us"] = number(r.shared_host_us);
    j["shared_plan"] = r.shared_note;
  }
  j["gemm"] = r.gemm;
  j["workspace_bytes"] = r.workspace_bytes;
  j["floor_ms"] = number(r.floor_ms);
  j["status"] = r.status;
  j["reason"] = r.reason;
  const auto ratio = [&j](const std::string& key, const ft::PairedRatio& p) {
    j[key + "_ratio"] = number(p.median);
    j[key + "_lo"] = number(p.lo);
    j[key + "_hi"] = number(p.hi);
  };
  if (r.has_paired) {
    ratio("paired", r.paired);
    j["paired_base"] = r.paired_base;
  }
  if (r.has_control) ratio("control", r.control);
  if (r.has_paired || r.has_control) j["rounds"] = (r.has_paired ? r.paired : r.control).rounds;
  if (!r.fft_sizes_ms.empty()) j["fft_sizes_ms"] = times(r.fft_sizes_ms);
  if (!r.stages.empty()) {
    Json stages = Json::object();
    for (const fftconv::StageTime& st : r.stages) stages[st.stage] = number(st.ms);
    j["stages_ms"] = stages;
    j["gemm_flops"] = number(r.gemm_flops);
    j["gemm_min_bytes"] = number(r.gemm_min_bytes);
  }
  if (!r.wall_s.empty()) {
    Json wall = Json::object();
    for (const auto& [part, s] : r.wall_s) wall[part] = number(s);
    j["wall_s"] = wall;
  }
  if (!r.gemm_ms.empty()) {
    j["gemm_best"] = r.gemm_best;
    j["gemm_best_ms"] = number(r.gemm_best_ms);
    j["cublas_best"] = r.cublas_best;
    j["cublas_best_ms"] = number(r.cublas_best_ms);
    j["regret"] = number(r.regret);
    j["gemm_ms"] = times(r.gemm_ms);
  }
  return j;
}

// Compact JSON; bytes that are not UTF-8 (from a device name or an error message) are replaced
// rather than failing the write.
std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The document with a member per line and an array member's elements a line each, the layout
// of the results in data/results: a row per line, easy to read and to grep.
void write_document(std::ostream& out, const Json& doc) {
  out << "{\n";
  std::size_t member = 0;
  for (const auto& [key, value] : doc.items()) {
    out << "  " << dump(key) << ": ";
    if (value.is_array() && !value.empty()) {
      out << "[\n";
      for (std::size_t i = 0; i < value.size(); ++i) {
        out << "    " << dump(value[i]) << (i + 1 < value.size() ? "," : "") << "\n";
      }
      out << "  ]";
    } else {
      out << dump(value);
    }
    out << (++member < doc.size() ? "," : "") << "\n";
  }
  out << "}\n";
}

}  // namespace

std::string fmt(double v, const char* f) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

void print_header() {
  std::printf(
      "%-24s %-5s %-5s %9s %8s %8s %7s %8s %9s %-22s %9s %8s %9s %9s %-9s %-15s %-12s %8s "
      "%8s %s\n",
      "name", "pass", "dtype", "engine_ms", "kept_ms", "plan_ms", "host_us", "cold_ms", "cudnn_ms",
      "cudnn_algo", "tf32_ms", "speedup", "rel_err", "max_err", "algo", "fft", "gemm", "ws_MiB",
      "floor_ms", "status");
}

void print_row(const Row& r) {
  std::string fft = r.fft_h ? std::to_string(r.fft_h) + "x" + std::to_string(r.fft_w) : "-";
  if (r.tiles_h * r.tiles_w > 1)
    fft += "/" + std::to_string(r.tiles_h) + "x" + std::to_string(r.tiles_w);
  std::printf(
      "%-24s %-5s %-5s %9s %8s %8s %7s %8s %9s %-22s %9s %8s %9s %9s %-9s %-15s %-12s %8s "
      "%8s %s\n",
      r.name.c_str(), r.pass.c_str(), r.dtype.c_str(), fmt(r.engine_ms).c_str(),
      fmt(r.kept_ms).c_str(), fmt(r.plan_ms, "%.1f").c_str(), fmt(r.host_us, "%.1f").c_str(),
      fmt(r.cold_ms).c_str(), fmt(r.cudnn_ms).c_str(),
      r.cudnn_algo.empty() ? "-" : r.cudnn_algo.c_str(), fmt(r.cudnn_tf32_ms).c_str(),
      fmt(r.speedup, "%.2fx").c_str(), fmt(r.rel_err, "%.2e").c_str(),
      fmt(r.max_err, "%.2e").c_str(), r.algo.empty() ? "-" : r.algo.c_str(), fft.c_str(),
      r.gemm.empty() ? "-" : r.gemm.c_str(),
      fmt(double(r.workspace_bytes) / (1 << 20), "%.1f").c_str(), fmt(r.floor_ms).c_str(),
      r.status.c_str());
  if (!r.kept_note.empty()) {
    std::printf("  kept filter: %s ms, cold %s ms, host %s us: %s\n", fmt(r.kept_ms).c_str(),
                fmt(r.kept_cold_ms).c_str(), fmt(r.kept_host_us, "%.1f").c_str(),
                r.kept_note.c_str());
  }
  if (!r.shared_note.empty()) {
    std::printf("  shared spectrum: %s ms, cold %s ms, host %s us, rel_err %s: %s\n",
                fmt(r.shared_ms).c_str(), fmt(r.shared_cold_ms).c_str(),
                fmt(r.shared_host_us, "%.1f").c_str(), fmt(r.shared_rel_err, "%.2e").c_str(),
                r.shared_note.c_str());
  }
  if (!r.gemm_ms.empty()) {
    std::printf("  gemm sweep (fft ms):");
    for (const auto& g : r.gemm_ms) std::printf(" %s=%s", g.first.c_str(), fmt(g.second).c_str());
    std::printf("\n  best own %s %s ms, best cublas %s %s ms, heuristic regret %s\n",
                r.gemm_best.c_str(), fmt(r.gemm_best_ms).c_str(), r.cublas_best.c_str(),
                fmt(r.cublas_best_ms).c_str(), fmt(r.regret, "%.3f").c_str());
  }
  if (!r.fft_sizes_ms.empty()) {
    std::printf("  fft sizes (ms):");
    for (const auto& f : r.fft_sizes_ms)
      std::printf(" %s=%s", f.first.c_str(), fmt(f.second).c_str());
    std::printf("\n");
  }
  if (!r.stages.empty()) {
    std::printf("  stages (ms):");
    for (const auto& st : r.stages)
      std::printf(" %s=%s", st.stage.c_str(), fmt(st.ms, "%.4f").c_str());
    for (const auto& st : r.stages) {
      if (st.stage == "gemm" && st.ms > 0) {
        std::printf(
            "  | gemm %.0f GFLOP/s, floor %.4f ms (%.0f MB at 4.3 TB/s, %.2f GFLOP at 67 TFLOP/s)",
            r.gemm_flops / (st.ms * 1e6),
            1e3 * std::max(r.gemm_min_bytes / ft::kCopyBytesPerSec,
                           r.gemm_flops / ft::kFp32FlopsPerSec),
            r.gemm_min_bytes * 1e-6, r.gemm_flops * 1e-9);
      }
    }
    std::printf("\n");
  }
  const auto print_ratio = [](const char* what, const ft::PairedRatio& p) {
    std::printf("  %s, round by round: %.4f [%.4f, %.4f] (%.1f%% interval, %d rounds)\n", what,
                p.median, p.lo, p.hi, 100.0 * p.coverage, p.rounds);
  };
  if (r.has_paired) print_ratio("against the first dtype", r.paired);
  if (r.has_control) print_ratio("a second copy against this one", r.control);
  double wall = 0.0;
  for (const auto& part : r.wall_s) wall += part.second;
  if (wall >= kSlowRowSeconds) {
    std::printf("  wall time %.1f s:", wall);
    for (const auto& [part, s] : r.wall_s) std::printf(" %s %.1f s", part.c_str(), s);
    std::printf("\n");
  }
  for (const std::string& note : r.notes) std::printf("  not measured: %s\n", note.c_str());
  std::fflush(stdout);
}

Resumed read_resumed(const std::string& path, const Config& cfg) {
  Resumed out;
  std::ifstream in(path);
  if (!in) {
    if (std::ifstream(path + ".tmp")) {
      throw std::runtime_error(path + " does not exist but " + path +
                               ".tmp does: an earlier run stopped while writing it");
    }
    return out;  // nothing to resume: start afresh
  }
  Json doc;
  try {
    doc = Json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + " is not JSON: " + e.what());
  }
  if (!doc.is_object() || !doc.contains("meta") || !doc["meta"].is_object() ||
      !doc.contains("rows") || !doc["rows"].is_array()) {
    throw std::runtime_error(path + " is not a results file of fftconv-bench (meta and rows)");
  }
  const Json& meta = doc["meta"];
  // Rows timed otherwise would not compare with this run's.
  const auto same = [&](const char* key, const Json& mine) {
    if (!meta.contains(key) || meta[key] != mine) {
      throw std::runtime_error(path + " was timed with " + key + " " +
                               (meta.contains(key) ? dump(meta[key]) : std::string("unset")) +
                               ", this run with " + dump(mine));
    }
  };
  same("iters", cfg.iters);
  same("warmup", cfg.warmup);
  same("graph", cfg.graph);
  same("interleave", cfg.interleave);
  // (A file written before these were recorded is refused too. The cuDNN search may differ:
  // each row says which search gave its baselines.)
  same("algo", fftconv::algo_name(cfg.algo));
  same("verify", cfg.verify);
  same("cudnn", cfg.cudnn);
  same("gemm", cfg.gemm);
  same("gaussian", cfg.gaussian_sigma);
  if (meta.contains("device") && !meta["device"].is_string()) {
    throw std::runtime_error(path + ": its meta's device is not a string");
  }
  out.device = meta.value("device", std::string());
  if (meta.contains("resumed") && meta["resumed"].is_array()) {
    for (const Json& m : meta["resumed"]) out.metas.push_back(dump(m));
  }
  Json own = meta;
  own.erase("resumed");
  out.metas.push_back(dump(own));
  const auto flag = [&](const Json& row, const char* key, bool otherwise) {
    if (!row.contains(key)) return otherwise;
    if (!row[key].is_boolean()) {
      throw std::runtime_error(path + " has a row whose " + key +
                               " is not true or false: " + dump(row));
    }
    return row[key].get<bool>();
  };
  for (const Json& row : doc["rows"]) {
    if (!row.is_object() || !row.contains("desc") || !row["desc"].is_string() ||
        !row.contains("pass") || !row["pass"].is_string()) {
      throw std::runtime_error(path + " has a row without desc and pass (strings): " + dump(row));
    }
    // A row that could not be measured (status "error: ...": out of memory, a failed plan) is
    // dropped and run again; a measured one, in tolerance or not, is kept.
    if (row.contains("status") && row["status"].is_string() &&
        row["status"].get<std::string>().rfind("error", 0) == 0) {
      ++out.dropped;
      continue;
    }
    out.done.emplace(row["desc"].get<std::string>(), row["pass"].get<std::string>());
    if (flag(row, "verified", false) && !flag(row, "within_tolerance", true)) {
      ++out.out_of_tolerance;
    }
    out.rows.push_back(dump(row));
  }
  return out;
}

void write_json(const std::string& path, const Config& cfg, const std::vector<Row>& rows,
                const std::string& device, bool complete, const Resumed& resumed) {
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  Json meta;
  meta["command"] = cfg.command;
  meta["device"] = device;
  meta["cuda_runtime"] = runtime;
  meta["date"] = date;
  meta["iters"] = cfg.iters;
  meta["warmup"] = cfg.warmup;
  meta["timing"] =
      std::string(cfg.graph
                      ? "median of CUDA-event times per CUDA-graph replay of the engine's pass"
                      : "median of CUDA-event times per pass") +
      (cfg.interleave ? ", a row's dtypes timed in turn" : "");
  meta["graph"] = cfg.graph;
  meta["interleave"] = cfg.interleave;
  meta["control"] = cfg.control;
  meta["placements"] = cfg.interleave ? cfg.placements : 1;
  // What decides a row's numbers besides its shape: --resume refuses a file measured otherwise.
  meta["algo"] = fftconv::algo_name(cfg.algo);
  meta["verify"] = cfg.verify;
  meta["cudnn"] = cfg.cudnn;
  meta["gemm"] = cfg.gemm;
  meta["gaussian"] = cfg.gaussian_sigma;
  meta["cudnn_search"] = fftconv::cudnn_search_name(cfg.cudnn_search);
  meta["complete"] = complete;
  if (!resumed.metas.empty()) {
    meta["resumed"] = Json::array();
    for (const std::string& m : resumed.metas) meta["resumed"].push_back(Json::parse(m));
  }
  Json doc;
  doc["meta"] = meta;
  doc["rows"] = Json::array();
  for (const std::string& r : resumed.rows) doc["rows"].push_back(Json::parse(r));
  for (const Row& r : rows) doc["rows"].push_back(row_json(r));

  const std::string tmp = path + ".tmp";  // renamed over path once whole
  std::ofstream out(tmp);
  if (!out) {
    std::fprintf(stderr, "fftconv-bench: cannot write %s\n", tmp.c_str());
    return;
  }
  write_document(out, doc);
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "fftconv-bench: cannot write %s\n", path.c_str());
  }
}

}  // namespace bench
