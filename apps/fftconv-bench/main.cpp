// fftconv-bench: runs the engine on shape suites (or one shape), times it against cuDNN, verifies it
// against the fp64 device oracle, and writes an aligned table and JSON.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fftconv/fftconv.hpp"
#include "geometry/fft_geometry.h"
#include "reference/reference.h"
#include "testing/testing.h"

namespace {

using fftconv::Algo;
using fftconv::ConvDesc;
using fftconv::DType;
using fftconv::Options;
using fftconv::Pass;
using fftconv::Plan;
namespace ft = fftconv::testing;

using ft::kCopyBytesPerSec;
using ft::kFp32FlopsPerSec;
// Inputs smaller than this are rotated among several copies so timings do not measure L2 (50 MB).
constexpr std::size_t kL2Bytes = 50u << 20;
constexpr int kMaxRotations = 32;

struct Config {
  std::vector<std::string> shape_files;
  std::vector<ft::ShapeRow> single;
  bool verify = false;
  bool cudnn = true;
  std::string json_path;
  std::string filter;
  int iters = 20;
  int warmup = 5;
  Algo algo = Algo::kAuto;
  std::string gemm;  // "" heuristic, a tiling name, or "all" (time every tiling per FFT row)
  std::string cudnn_algo;  // --cudnn-algo: the engine's cuDNN algorithm by name (with --algo cudnn)
  bool stages = false;
  bool graph = false;       // --graph: time CUDA-graph replays of the engine's pass
  bool interleave = false;  // --interleave: time a row's dtypes in turn
  bool control = false;     // --control: with --interleave, a second copy of the first dtype too
  int placements = 4;       // --placements: engine instances each --interleave run rotates over
  std::size_t workspace_limit = Options::kNoLimit;
  std::string fft;  // "" cost model, "HxW" forced, or "all" (time candidate sizes per FFT row)
  fftconv::Tuning tuning = fftconv::Tuning::kHeuristic;
  std::string tuning_cache;
  std::vector<Pass> passes = {Pass::kForward};
  std::vector<fftconv::DType> dtypes;  // --dtypes: every row in each (empty: the CSV's dtype)
  std::string command;
};

struct Row {
  std::string name, desc, dtype, status = "ok";
  std::string pass = "fwd";  // fwd, dgrad or wgrad
  bool verified = false, ok = true;
  double engine_ms = NAN, plan_ms = NAN, fft_ms = NAN;
  double cudnn_ms = NAN, cudnn_tf32_ms = NAN, speedup = NAN;
  std::string cudnn_algo, cudnn_tf32_algo;
  double rel_err = NAN, max_err = NAN;
  double kept_ms = NAN, kept_rel_err = NAN;  // fwd/dgrad with the filter spectrum kept (set_filter)
  std::int64_t tiles_h = 1, tiles_w = 1;
  std::string algo, gemm, reason;
  std::int64_t fft_h = 0, fft_w = 0;
  std::size_t workspace_bytes = 0;
  double floor_ms = NAN;
  std::vector<std::pair<std::string, double>> gemm_ms;  // --gemm all: FFT time per tiling
  std::string gemm_best, cublas_best;
  double regret = NAN;        // chosen own tiling's time / best own tiling's time
  double gemm_best_ms = NAN, cublas_best_ms = NAN;
  std::vector<fftconv::StageTime> stages;  // --stages: the engine's stages
  std::vector<std::pair<std::string, double>> fft_sizes_ms;  // --fft all: time per FFT size
  double gemm_flops = 0.0, gemm_min_bytes = 0.0;
  // --interleave: this row's time against the first row of its group (the first of --dtypes),
  // round by round (testing::paired_ratio); on that first row, --control's second copy of it.
  ft::PairedRatio paired, control;
  bool has_paired = false, has_control = false;
  std::string paired_base;  // the dtype of the group's first row
};

[[noreturn]] void usage(int code) {
  std::printf(
      "usage: fftconv-bench [--shapes FILE.csv]... [shape flags | --desc STRING] [options]\n"
      "  --shapes FILE     shape suite CSV (columns name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,\n"
      "                    stride_w,dil_h,dil_w,groups,dtype); may repeat\n"
      "  shape flags       --n --c --h --w --k --r --s --pad --pad-h --pad-w --stride --stride-h\n"
      "                    --stride-w --dil --dil-h --dil-w --groups --dtype f32|f16|bf16 --name\n"
      "  --desc STRING     one shape by its canonical string (n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32)\n"
      "  --pass LIST       passes to run, comma-separated: fwd (default), dgrad, wgrad\n"
      "  --verify          compare with the fp64 device oracle; exit 1 if a row is out of tolerance\n"
      "  --json FILE       write the results as JSON\n"
      "  --iters N         timed runs per measurement (median reported; default 20)\n"
      "  --graph           time the engine's passes as replays of a CUDA graph captured once\n"
      "                    per input copy: device time without host launch gaps (cuDNN\n"
      "                    baselines are timed as direct calls either way)\n"
      "  --interleave      with --dtypes: time the engine on a row's dtypes in turn (iteration i\n"
      "                    of every dtype before iteration i+1 of any, in rotating order), so a\n"
      "                    drift of the device falls on every dtype alike; each dtype's\n"
      "                    time against the first one's, round by round: the median ratio\n"
      "                    and its 95% interval (JSON paired_ratio, paired_lo, paired_hi)\n"
      "  --placements N    with --interleave: each dtype's runs rotate over N engine instances\n"
      "                    (plan, workspace and output; default 4), so that no dtype's time\n"
      "                    rests on where one plan's allocations happened to land\n"
      "  --control         with --interleave: time a second, separate copy of the first dtype\n"
      "                    (its own plan and tensors) in turn with the others; its ratio to the\n"
      "                    first (JSON control_ratio, control_lo, control_hi) shows how far\n"
      "                    two runs of the same work differ\n"
      "  --warmup N        untimed runs first (default 5)\n"
      "  --algo A          engine algorithm: auto (default), fft or cudnn\n"
      "  --cudnn-algo NAME the engine's cuDNN algorithm (with --algo cudnn; names as in\n"
      "                    fftconv::cudnn_algo_names, e.g. ALGO_0, FFT, FFT_TILING)\n"
      "  --gemm NAME|all   FFT path: force a GEMM tiling, or (all) time every tiling and cuBLAS\n"
      "                    path on rows the engine runs through the FFT, with the heuristic's\n"
      "                    regret (its tiling's time / the best own tiling's time)\n"
      "  --fft HxW|all     FFT path: force the FFT size, or (all) time the first candidate sizes\n"
      "  --workspace-limit BYTES  largest workspace the engine may plan for\n"
      "  --stages          time every stage of the forward engine (pad, r2c, gemm, c2r, clip);\n"
      "                    GEMM GFLOP/s\n"
      "  --tuning MODE     heuristic (default), autotune or exhaustive GEMM choice at plan time\n"
      "  --tuning-cache F  tuning cache file for autotune/exhaustive (default $FFTCONV_TUNING_CACHE)\n"
      "  --no-cudnn        skip the cuDNN baselines\n"
      "  --dtypes LIST     run every row in each dtype of LIST (f32,f16,bf16) instead of the\n"
      "                    CSV's; variants are named <row>_<dtype> (no suffix for f32)\n"
      "  --filter TEXT     only rows whose name contains TEXT (after --dtypes naming)\n");
  std::exit(code);
}

Config parse_args(int argc, char** argv) {
  Config c;
  // The command as recorded in results: where the JSON went is not part of the experiment.
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--json" && i + 1 < argc) {
      ++i;
      continue;
    }
    c.command += (c.command.empty() ? "" : " ") + std::string(argv[i]);
  }
  ConvDesc d;
  bool have_shape_flags = false;
  std::string name = "cli";
  std::map<std::string, std::int64_t*> ints = {
      {"--n", &d.n},           {"--c", &d.c},         {"--h", &d.h},
      {"--w", &d.w},           {"--k", &d.k},         {"--r", &d.r},
      {"--s", &d.s},           {"--pad-h", &d.pad_h}, {"--pad-w", &d.pad_w},
      {"--stride-h", &d.stride_h}, {"--stride-w", &d.stride_w}, {"--dil-h", &d.dil_h},
      {"--dil-w", &d.dil_w},   {"--groups", &d.groups}};
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) {
      std::fprintf(stderr, "fftconv-bench: %s needs a value\n", argv[i]);
      usage(2);
    }
    return argv[++i];
  };
  auto integer = [&](const std::string& flag, const std::string& v) {
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end) {
      std::fprintf(stderr, "fftconv-bench: %s expects an integer, got '%s'\n", flag.c_str(), v.c_str());
      usage(2);
    }
    return static_cast<std::int64_t>(x);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") usage(0);
    if (ints.count(a)) {
      *ints[a] = integer(a, value(i));
      have_shape_flags = true;
    } else if (a == "--pad") {
      d.pad_h = d.pad_w = integer(a, value(i));
      have_shape_flags = true;
    } else if (a == "--stride") {
      d.stride_h = d.stride_w = integer(a, value(i));
      have_shape_flags = true;
    } else if (a == "--dil") {
      d.dil_h = d.dil_w = integer(a, value(i));
      have_shape_flags = true;
    } else if (a == "--dtype") {
      d.dtype = fftconv::parse_dtype(value(i));
      have_shape_flags = true;
    } else if (a == "--name") {
      name = value(i);
    } else if (a == "--desc") {
      c.single.push_back({name == "cli" ? "desc" : name, ConvDesc::parse(value(i))});
    } else if (a == "--shapes") {
      c.shape_files.push_back(value(i));
    } else if (a == "--pass") {
      c.passes.clear();
      std::stringstream list(value(i));
      std::string item;
      while (std::getline(list, item, ',')) c.passes.push_back(fftconv::parse_pass(item));
      if (c.passes.empty()) {
        std::fprintf(stderr, "fftconv-bench: --pass needs at least one of fwd, dgrad, wgrad\n");
        usage(2);
      }
    } else if (a == "--dtypes") {
      c.dtypes = ft::parse_dtype_list(value(i));
    } else if (a == "--verify") {
      c.verify = true;
    } else if (a == "--no-cudnn") {
      c.cudnn = false;
    } else if (a == "--json") {
      c.json_path = value(i);
    } else if (a == "--filter") {
      c.filter = value(i);
    } else if (a == "--iters") {
      c.iters = static_cast<int>(integer(a, value(i)));
    } else if (a == "--warmup") {
      c.warmup = static_cast<int>(integer(a, value(i)));
    } else if (a == "--gemm") {
      c.gemm = value(i);
    } else if (a == "--fft") {
      c.fft = value(i);
    } else if (a == "--workspace-limit") {
      c.workspace_limit = static_cast<std::size_t>(integer(a, value(i)));
    } else if (a == "--stages") {
      c.stages = true;
    } else if (a == "--graph") {
      c.graph = true;
    } else if (a == "--interleave") {
      c.interleave = true;
    } else if (a == "--control") {
      c.control = true;
    } else if (a == "--placements") {
      c.placements = static_cast<int>(integer(a, value(i)));
    } else if (a == "--tuning") {
      c.tuning = fftconv::parse_tuning(value(i));
    } else if (a == "--tuning-cache") {
      c.tuning_cache = value(i);
    } else if (a == "--cudnn-algo") {
      c.cudnn_algo = value(i);
    } else if (a == "--algo") {
      c.algo = fftconv::parse_algo(value(i));
    } else {
      std::fprintf(stderr, "fftconv-bench: unknown argument '%s'\n", a.c_str());
      usage(2);
    }
  }
  if (have_shape_flags) c.single.push_back({name, d});
  if (c.stages && (c.passes.size() > 1 || c.passes[0] != Pass::kForward)) {
    std::fprintf(stderr, "fftconv-bench: note: --stages times the forward pass only\n");
  }
  if (c.shape_files.empty() && c.single.empty()) {
    std::fprintf(stderr, "fftconv-bench: give --shapes FILE.csv or a shape (--desc, --n ...)\n");
    usage(2);
  }
  if (c.control && !c.interleave) {
    std::fprintf(stderr, "fftconv-bench: --control needs --interleave\n");
    usage(2);
  }
  if (c.interleave && c.dtypes.size() < 2) {
    std::fprintf(stderr, "fftconv-bench: --interleave needs --dtypes with two or more dtypes\n");
    usage(2);
  }
  if (c.placements < 1 || c.placements > 64) {
    std::fprintf(stderr, "fftconv-bench: --placements must be from 1 to 64\n");
    usage(2);
  }
  if (c.iters < 1 || c.warmup < 0) {
    std::fprintf(stderr, "fftconv-bench: --iters must be >= 1 and --warmup >= 0\n");
    usage(2);
  }
  return c;
}

// Input sets: several copies when they fit in L2, so repeated runs do not time the cache. x, w
// and dy are the pass's possible inputs (dy only for backward passes); out is its output.
struct Inputs {
  std::vector<ft::DeviceBuffer> x, w, dy;
  ft::DeviceBuffer bias, out, x32, w32, bias32, dy32;
  int copies = 1;
};

std::int64_t out_elems(const ConvDesc& d, Pass pass) {
  return pass == Pass::kForward ? d.y_elems() : pass == Pass::kBackwardData ? d.x_elems() : d.w_elems();
}

ft::DeviceBuffer upload(const std::vector<unsigned char>& bytes) {
  ft::DeviceBuffer b(bytes.size());
  b.upload(bytes.data(), bytes.size());
  return b;
}

Inputs make_inputs(const ConvDesc& d, Pass pass, std::uint64_t seed) {
  Inputs in;
  const std::size_t es = fftconv::dtype_size(d.dtype);
  const bool backward = pass != Pass::kForward;
  const std::size_t in_bytes = es * (d.x_elems() + d.w_elems() + (backward ? d.y_elems() : 0));
  in.copies = in_bytes < kL2Bytes
                  ? static_cast<int>(std::min<std::size_t>(kMaxRotations, 2 * kL2Bytes / in_bytes + 1))
                  : 1;
  const auto xv = ft::random_values(d.x_elems(), seed, d.dtype);
  const auto wv = ft::random_values(d.w_elems(), seed + 1, d.dtype);
  const auto bv = ft::random_values(d.k, seed + 2, d.dtype);
  const auto dyv = backward ? ft::random_values(d.y_elems(), seed + 3, d.dtype) : std::vector<float>();
  const auto xb = ft::encode(xv, d.dtype), wb = ft::encode(wv, d.dtype);
  const auto dyb = ft::encode(dyv, d.dtype);
  for (int i = 0; i < in.copies; ++i) {
    in.x.push_back(upload(xb));
    in.w.push_back(upload(wb));
    if (backward) in.dy.push_back(upload(dyb));
  }
  in.bias = upload(ft::encode(bv, d.dtype));
  in.out = ft::DeviceBuffer(es * out_elems(d, pass));
  in.x32 = upload(ft::encode(xv, DType::kF32));
  in.w32 = upload(ft::encode(wv, DType::kF32));
  in.bias32 = upload(ft::encode(bv, DType::kF32));
  if (backward) in.dy32 = upload(ft::encode(dyv, DType::kF32));
  return in;
}

struct Timed {
  double ms = NAN, plan_ms = NAN;
  fftconv::PlanInfo info;
  std::string describe;
  std::vector<fftconv::StageTime> stages;
};

// One pass of `plan` on input copy c into `out` (null: in.out). kept: the plan holds the filter
// (set_filter), so the pass gets w == nullptr (fwd and dgrad).
void run_pass(const Plan& plan, Pass pass, const Inputs& in, const ft::DeviceBuffer& ws, int c,
              bool kept, cudaStream_t stream, const ft::DeviceBuffer* out = nullptr) {
  void* y = (out ? *out : in.out).get();
  const void* w = kept ? nullptr : in.w[static_cast<std::size_t>(c)].get();
  const auto at = [c](const std::vector<ft::DeviceBuffer>& v) {
    return v[static_cast<std::size_t>(c)].get();
  };
  switch (pass) {
    case Pass::kForward:
      plan.forward(at(in.x), w, in.bias.get(), y, ws.get(), ws.bytes(), stream);
      break;
    case Pass::kBackwardData:
      plan.backward_data(at(in.dy), w, y, ws.get(), ws.bytes(), stream);
      break;
    case Pass::kBackwardFilter:
      plan.backward_filter(at(in.x), at(in.dy), y, ws.get(), ws.bytes(), stream);
      break;
  }
}

// Plans (timed on the host) and times the plan's pass; leaves the last result in in.out.
// kept: the filter goes to set_filter() once, the pass gets w == nullptr (fwd and dgrad).
// timed == false: the pass runs once, untimed (--interleave times it with the other dtypes).
Timed time_plan(const ConvDesc& d, const Options& o, Inputs& in, const Config& cfg,
                cudaStream_t stream, bool stages = false, bool kept = false, bool timed = true) {
  Timed t;
  const auto t0 = std::chrono::steady_clock::now();
  Plan plan(d, o);
  ft::cuda_check(cudaDeviceSynchronize(), "plan");
  t.plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t.info = plan.info();
  t.describe = plan.describe();
  ft::DeviceBuffer ws(plan.workspace_size());
  if (kept) plan.set_filter(in.w[0].get(), stream);
  auto run = [&](int c) { run_pass(plan, o.pass, in, ws, c, kept, stream); };
  if (timed) {
    t.ms = cfg.graph ? ft::graph_median_ms(run, in.copies, stream, cfg.warmup, cfg.iters)
                     : ft::median_ms([&](int i) { run(i % in.copies); }, stream, cfg.warmup,
                                     cfg.iters);
  }
  if (stages && o.pass == Pass::kForward) {
    t.stages = plan.profile_forward(in.x[0].get(), kept ? nullptr : in.w[0].get(), in.bias.get(),
                                    in.out.get(), ws.get(), ws.bytes(), stream, cfg.iters);
  }
  // One more run on copy 0 so in.out holds the result for the inputs the oracle sees.
  in.out.poison();
  run(0);
  ft::cuda_check(cudaStreamSynchronize(stream), "run");
  return t;
}

std::string fmt(double v, const char* f = "%.3f") {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", ch);
      o += buf;
      continue;
    }
    o += ch;
  }
  return o;
}

std::string jnum(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// Written after every row (complete = false until the last), so a run stopped early keeps what
// it measured.
void write_json(const std::string& path, const Config& cfg, const std::vector<Row>& rows,
                const std::string& device, bool complete) {
  const std::string tmp = path + ".tmp";  // renamed over path once whole
  std::ofstream out(tmp);
  if (!out) {
    std::fprintf(stderr, "fftconv-bench: cannot write %s\n", tmp.c_str());
    return;
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  out << "{\n  \"meta\": {\"command\": \"" << json_escape(cfg.command) << "\", \"device\": \""
      << json_escape(device) << "\", \"cuda_runtime\": " << rt << ", \"date\": \"" << date
      << "\", \"iters\": " << cfg.iters << ", \"warmup\": " << cfg.warmup
      << ", \"timing\": \""
      << (cfg.graph ? "median of CUDA-event times per CUDA-graph replay of the engine's pass"
                    : "median of CUDA-event times per pass")
      << (cfg.interleave ? ", a row's dtypes timed in turn" : "")
      << "\", \"graph\": " << (cfg.graph ? "true" : "false")
      << ", \"interleave\": " << (cfg.interleave ? "true" : "false")
      << ", \"control\": " << (cfg.control ? "true" : "false")
      << ", \"placements\": " << (cfg.interleave ? cfg.placements : 1) << ", \"complete\": "
      << (complete ? "true" : "false") << "},\n  \"rows\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    out << "    {\"name\": \"" << json_escape(r.name) << "\", \"desc\": \"" << r.desc
        << "\", \"pass\": \"" << r.pass << "\", \"within_tolerance\": " << (r.ok ? "true" : "false")
        << ", \"verified\": " << (r.verified ? "true" : "false") << ", \"dtype\": \"" << r.dtype
        << "\", \"engine_ms\": " << jnum(r.engine_ms) << ", \"plan_ms\": " << jnum(r.plan_ms)
        << ", \"fft_ms\": " << jnum(r.fft_ms) << ", \"cudnn_ms\": " << jnum(r.cudnn_ms)
        << ", \"cudnn_algo\": \"" << r.cudnn_algo << "\", \"cudnn_tf32_ms\": "
        << jnum(r.cudnn_tf32_ms) << ", \"cudnn_tf32_algo\": \"" << r.cudnn_tf32_algo
        << "\", \"speedup\": " << jnum(r.speedup) << ", \"rel_err\": " << jnum(r.rel_err)
        << ", \"max_err\": " << jnum(r.max_err) << ", \"algo\": \"" << r.algo
        << "\", \"fft_h\": " << r.fft_h << ", \"fft_w\": " << r.fft_w << ", \"tiles_h\": "
        << r.tiles_h << ", \"tiles_w\": " << r.tiles_w << ", \"kept_ms\": " << jnum(r.kept_ms)
        << ", \"kept_rel_err\": " << jnum(r.kept_rel_err) << ", \"gemm\": \""
        << r.gemm << "\", \"workspace_bytes\": " << r.workspace_bytes
        << ", \"floor_ms\": " << jnum(r.floor_ms) << ", \"status\": \"" << json_escape(r.status)
        << "\", \"reason\": \"" << json_escape(r.reason) << "\"";
    const auto ratio = [&out](const char* key, const ft::PairedRatio& p) {
      out << ", \"" << key << "_ratio\": " << jnum(p.median) << ", \"" << key
          << "_lo\": " << jnum(p.lo) << ", \"" << key << "_hi\": " << jnum(p.hi);
    };
    if (r.has_paired) {
      ratio("paired", r.paired);
      out << ", \"paired_base\": \"" << r.paired_base << "\"";
    }
    if (r.has_control) ratio("control", r.control);
    if (r.has_paired || r.has_control) {
      out << ", \"rounds\": " << (r.has_paired ? r.paired : r.control).rounds;
    }
    if (!r.fft_sizes_ms.empty()) {
      out << ", \"fft_sizes_ms\": {";
      for (std::size_t k = 0; k < r.fft_sizes_ms.size(); ++k) {
        out << (k ? ", " : "") << "\"" << r.fft_sizes_ms[k].first << "\": " << jnum(r.fft_sizes_ms[k].second);
      }
      out << "}";
    }
    if (!r.stages.empty()) {
      out << ", \"stages_ms\": {";
      for (std::size_t k = 0; k < r.stages.size(); ++k) {
        out << (k ? ", " : "") << "\"" << r.stages[k].stage << "\": " << jnum(r.stages[k].ms);
      }
      out << "}, \"gemm_flops\": " << jnum(r.gemm_flops) << ", \"gemm_min_bytes\": "
          << jnum(r.gemm_min_bytes);
    }
    if (!r.gemm_ms.empty()) {
      out << ", \"gemm_best\": \"" << r.gemm_best << "\", \"gemm_best_ms\": " << jnum(r.gemm_best_ms)
          << ", \"cublas_best\": \"" << r.cublas_best << "\", \"cublas_best_ms\": "
          << jnum(r.cublas_best_ms) << ", \"regret\": " << jnum(r.regret) << ", \"gemm_ms\": {";
      for (std::size_t g = 0; g < r.gemm_ms.size(); ++g) {
        out << (g ? ", " : "") << "\"" << r.gemm_ms[g].first << "\": " << jnum(r.gemm_ms[g].second);
      }
      out << "}";
    }
    out << "}"
        << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "fftconv-bench: cannot write %s\n", path.c_str());
  }
}

void print_header() {
  std::printf("%-24s %-5s %-5s %9s %8s %8s %9s %-22s %9s %8s %9s %9s %-9s %-15s %-12s %8s %8s %s\n",
              "name", "pass", "dtype", "engine_ms", "kept_ms", "plan_ms", "cudnn_ms", "cudnn_algo",
              "tf32_ms", "speedup", "rel_err", "max_err", "algo", "fft", "gemm", "ws_MiB",
              "floor_ms", "status");
}

void print_row(const Row& r) {
  std::string fft = r.fft_h ? std::to_string(r.fft_h) + "x" + std::to_string(r.fft_w) : "-";
  if (r.tiles_h * r.tiles_w > 1) fft += "/" + std::to_string(r.tiles_h) + "x" + std::to_string(r.tiles_w);
  std::printf("%-24s %-5s %-5s %9s %8s %8s %9s %-22s %9s %8s %9s %9s %-9s %-15s %-12s %8s %8s %s\n",
              r.name.c_str(), r.pass.c_str(), r.dtype.c_str(), fmt(r.engine_ms).c_str(), fmt(r.kept_ms).c_str(),
              fmt(r.plan_ms, "%.1f").c_str(),
              fmt(r.cudnn_ms).c_str(), r.cudnn_algo.empty() ? "-" : r.cudnn_algo.c_str(),
              fmt(r.cudnn_tf32_ms).c_str(), fmt(r.speedup, "%.2fx").c_str(),
              fmt(r.rel_err, "%.2e").c_str(), fmt(r.max_err, "%.2e").c_str(),
              r.algo.empty() ? "-" : r.algo.c_str(), fft.c_str(), r.gemm.empty() ? "-" : r.gemm.c_str(),
              fmt(double(r.workspace_bytes) / (1 << 20), "%.1f").c_str(), fmt(r.floor_ms).c_str(),
              r.status.c_str());
  std::fflush(stdout);
}

// The engine's options for `pass` from the command line; false (with `status` set) on a bad --fft.
bool engine_options(const Config& cfg, Pass pass, Options& engine, std::string& status) {
  engine.pass = pass;
  engine.algo = cfg.algo;
  engine.workspace_limit = cfg.workspace_limit;
  engine.tuning = cfg.tuning;
  engine.tuning_cache = cfg.tuning_cache;
  engine.cudnn_algo = cfg.cudnn_algo;
  if (!cfg.gemm.empty() && cfg.gemm != "all") engine.gemm_kernel = cfg.gemm;
  if (!cfg.fft.empty() && cfg.fft != "all") {
    long long fh = 0, fw = 0;
    if (std::sscanf(cfg.fft.c_str(), "%lldx%lld", &fh, &fw) != 2) {
      status = "error: --fft expects HxW or all";
      return false;
    }
    engine.fft_h = fh;
    engine.fft_w = fw;
  }
  return true;
}

Row run_row(const ft::ShapeRow& shape, Pass pass, std::uint64_t seed, const Config& cfg,
            cudaStream_t stream) {
  Row r;
  const ConvDesc& d = shape.desc;
  r.name = shape.name;
  r.pass = fftconv::pass_name(pass);
  r.desc = d.to_string();
  r.dtype = fftconv::dtype_name(d.dtype);
  std::string why;
  if (d.validate(&why) != fftconv::Status::kSuccess) {
    r.status = "error: " + why;
    r.ok = false;
    return r;
  }
  Inputs in = make_inputs(d, pass, seed);
  const std::int64_t n_out = out_elems(d, pass);
  std::vector<double> ref_host;  // the oracle's output, computed on first use
  auto check_output = [&]() {
    if (ref_host.empty()) {
      ft::DeviceBuffer ref(sizeof(double) * n_out);
      namespace ref_ns = fftconv::reference;
      switch (pass) {
        case Pass::kForward:
          ref_ns::conv2d_forward_device(d, in.x32.as<float>(), in.w32.as<float>(),
                                        in.bias32.as<float>(), ref.as<double>(), stream);
          break;
        case Pass::kBackwardData:
          ref_ns::conv2d_backward_data_device(d, in.dy32.as<float>(), in.w32.as<float>(),
                                              ref.as<double>(), stream);
          break;
        case Pass::kBackwardFilter:
          ref_ns::conv2d_backward_filter_device(d, in.x32.as<float>(), in.dy32.as<float>(),
                                                ref.as<double>(), stream);
          break;
      }
      ft::cuda_check(cudaStreamSynchronize(stream), "oracle");
      ref_host.resize(n_out);
      ref.download(ref_host.data(), ref_host.size() * sizeof(double));
    }
    std::vector<unsigned char> out_host(in.out.bytes());
    in.out.download(out_host.data(), out_host.size());
    return ft::compare(ft::decode(out_host.data(), n_out, d.dtype), ref_host);
  };

  Options engine;
  if (!engine_options(cfg, pass, engine, r.status)) return r;
  try {
    const Timed t = time_plan(d, engine, in, cfg, stream, cfg.stages, false, !cfg.interleave);
    r.stages = t.stages;
    r.gemm_flops = t.info.gemm_flops;
    r.gemm_min_bytes = t.info.gemm_min_bytes;
    r.engine_ms = t.ms;
    r.plan_ms = t.plan_ms;
    r.algo = fftconv::algo_name(t.info.algo);
    r.fft_h = t.info.fft_h;
    r.fft_w = t.info.fft_w;
    r.gemm = t.info.gemm;
    r.workspace_bytes = t.info.workspace_bytes;
    r.reason = t.info.reason;
    r.floor_ms = ft::floor_ms(d, pass, t.info);
    r.tiles_h = t.info.tiles_h;
    r.tiles_w = t.info.tiles_w;
    if (t.info.algo == Algo::kFft) r.fft_ms = t.ms;
    if (cfg.verify) {
      const ft::ErrorStats e = check_output();
      r.verified = true;
      r.rel_err = e.rel_l2;
      r.max_err = e.max_err;
      r.ok = e.pass(ft::tolerance(d.dtype));
      if (!r.ok) {
        r.status = "FAIL " + e.to_string() + " (tolerance " + fmt(ft::tolerance(d.dtype), "%.0e") +
                   "); repro: fftconv-bench --desc " + r.desc + " --pass " + r.pass + " --verify";
      }
    }
    // The same plan with the filter spectrum kept: the filter's pad and transform leave the pass.
    if ((t.info.algo == Algo::kFft || t.info.algo == Algo::kFftTiled) &&
        pass != Pass::kBackwardFilter) {
      r.kept_ms = time_plan(d, engine, in, cfg, stream, false, true).ms;
      if (cfg.verify) {
        const ft::ErrorStats e = check_output();
        r.kept_rel_err = e.rel_l2;
        if (!e.pass(ft::tolerance(d.dtype))) {
          r.ok = false;
          r.status = "FAIL with kept filter " + e.to_string() + "; repro: fftconv-bench --desc " +
                     r.desc + " --pass " + r.pass + " --verify";
        }
      }
    }
  } catch (const std::exception& e) {
    r.status = std::string("error: ") + e.what();
  }
  // The FFT path's own time where Auto chose something else (the heuristic's regret shows here).
  if (cfg.algo == Algo::kAuto && r.algo != "fft") {
    try {
      Options o;
      o.pass = pass;
      o.algo = Algo::kFft;
      r.fft_ms = time_plan(d, o, in, cfg, stream).ms;
    } catch (const std::exception&) {
    }
  }
  if (cfg.fft == "all" && r.algo == "fft") {
    // The first candidate sizes on each axis, with the heuristic's GEMM for each.
    constexpr std::size_t kSizesPerAxis = 4;
    auto hs = fftconv::detail::fft_size_candidates(fftconv::detail::min_fft_h(d));
    auto ws = fftconv::detail::fft_size_candidates(fftconv::detail::min_fft_w(d));
    hs.resize(std::min(hs.size(), kSizesPerAxis));
    ws.resize(std::min(ws.size(), kSizesPerAxis));
    for (std::int64_t fh : hs) {
      for (std::int64_t fw : ws) {
        if (d.h == d.w && d.pad_h == d.pad_w && d.r == d.s && fh != fw) continue;  // square: diagonal
        Options o;
        o.pass = pass;
        o.algo = Algo::kFft;
        o.fft_h = fh;
        o.fft_w = fw;
        double ms = NAN;
        try {
          ms = time_plan(d, o, in, cfg, stream).ms;
        } catch (const std::exception&) {
        }
        r.fft_sizes_ms.emplace_back(std::to_string(fh) + "x" + std::to_string(fw), ms);
      }
    }
  }
  if (cfg.gemm == "all" && r.algo == "fft") {
    // Every path at the same FFT size, on rows where the engine runs the FFT path; the regret is
    // over our own tilings, the heuristic's pick against the fastest of them.
    double chosen = NAN;
    std::string heuristic = r.gemm;
    if (cfg.tuning != fftconv::Tuning::kHeuristic || !cfg.gemm.empty()) {
      try {
        Options o;
        o.pass = pass;
        o.algo = Algo::kFft;
        heuristic = Plan(d, o).info().gemm;
      } catch (const std::exception&) {
      }
    }
    for (const std::string& name : fftconv::gemm_kernel_names()) {
      Options o;
      o.pass = pass;
      o.algo = Algo::kFft;
      o.gemm_kernel = name;
      double ms = NAN;
      try {
        ms = time_plan(d, o, in, cfg, stream).ms;
      } catch (const std::exception&) {
      }
      r.gemm_ms.emplace_back(name, ms);
      const bool cublas = name.rfind("cublas", 0) == 0;
      std::string& best_name = cublas ? r.cublas_best : r.gemm_best;
      double& best_ms = cublas ? r.cublas_best_ms : r.gemm_best_ms;
      if (!std::isnan(ms) && (std::isnan(best_ms) || ms < best_ms)) {
        best_ms = ms;
        best_name = name;
      }
      if (name == heuristic) chosen = ms;
    }
    r.regret = chosen / r.gemm_best_ms;
  }
  if (cfg.cudnn) {
    Options o;
    o.pass = pass;
    o.algo = Algo::kCudnn;
    try {
      const Timed t = time_plan(d, o, in, cfg, stream);
      r.cudnn_ms = t.ms;
      r.cudnn_algo = t.info.cudnn_algo + "/" + t.info.cudnn_math;
    } catch (const std::exception& e) {
      r.cudnn_algo = "error";
      if (r.status == "ok") r.status = std::string("cudnn: ") + e.what();
    }
    if (d.dtype == DType::kF32) {
      o.allow_tf32 = true;
      try {
        const Timed t = time_plan(d, o, in, cfg, stream);
        r.cudnn_tf32_ms = t.ms;
        r.cudnn_tf32_algo = t.info.cudnn_algo + "/" + t.info.cudnn_math;
      } catch (const std::exception&) {
      }
    }
    r.speedup = r.cudnn_ms / r.engine_ms;
  }
  return r;
}

// --interleave: the engine's times for `pass` on each row of `group` (one shape in several
// dtypes; seeds as run_row's), timed in turn; empty for a row that does not plan. With
// cfg.control the last entry holds a second, separate copy of the first row's run (empty when
// the first row does not plan).
std::vector<std::vector<float>> interleaved_times(const std::vector<const ft::ShapeRow*>& group,
                                                  const std::vector<std::uint64_t>& seeds,
                                                  Pass pass, const Config& cfg,
                                                  cudaStream_t stream) {
  // Run c of a variant reads input copy c % in.copies and runs engine instance c % placements
  // (its own plan, workspace and output: two plans of one shape may differ by several percent on
  // a launch-bound row, as cuFFT's tables and our buffers land elsewhere); `rotation` (the input
  // copies rounded up to a multiple of the placements) runs cover every pairing of an instance.
  struct Instance {
    std::unique_ptr<Plan> plan;
    ft::DeviceBuffer ws, out;
  };
  struct Variant {
    Inputs in;
    std::vector<Instance> engines;
    int rotation = 1;
    std::unique_ptr<ft::GraphSet> graphs;
  };
  std::vector<std::unique_ptr<Variant>> variants;  // the runs below point into these
  std::vector<std::function<void(int)>> runs;
  std::vector<std::size_t> slot_of_run;
  const std::size_t slots = group.size() + (cfg.control ? 1 : 0);
  for (std::size_t slot = 0; slot < slots; ++slot) {
    const std::size_t g = slot < group.size() ? slot : 0;  // the control copies row 0
    if (slot == group.size() && (slot_of_run.empty() || slot_of_run[0] != 0)) break;
    Options o;
    std::string status;
    if (!engine_options(cfg, pass, o, status)) continue;
    try {
      auto v = std::make_unique<Variant>();
      Variant* p = v.get();
      p->in = make_inputs(group[g]->desc, pass, seeds[g]);
      const int k = cfg.placements;
      for (int j = 0; j < k; ++j) {
        Instance e;
        e.plan = std::make_unique<Plan>(group[g]->desc, o);
        e.ws = ft::DeviceBuffer(e.plan->workspace_size());
        e.out = ft::DeviceBuffer(p->in.out.bytes());
        p->engines.push_back(std::move(e));
      }
      p->rotation = (p->in.copies + k - 1) / k * k;
      auto direct = [p, pass, stream, k](int c) {
        const Instance& e = p->engines[static_cast<std::size_t>(c % k)];
        run_pass(*e.plan, pass, p->in, e.ws, c % p->in.copies, false, stream, &e.out);
      };
      if (cfg.graph) {
        p->graphs = std::make_unique<ft::GraphSet>(direct, p->rotation, stream);
        runs.emplace_back([p, stream](int i) { p->graphs->launch(i, stream); });
      } else {
        runs.emplace_back([p, direct](int i) { direct(i % p->rotation); });
      }
      slot_of_run.push_back(slot);
      variants.push_back(std::move(v));
    } catch (const std::exception&) {
      // run_row reported why this row does not run.
    }
  }
  std::vector<std::vector<float>> times(slots);
  if (runs.empty()) return times;
  auto t = ft::interleaved_times_ms(runs, stream, cfg.warmup, cfg.iters);
  for (std::size_t k = 0; k < t.size(); ++k) times[slot_of_run[k]] = std::move(t[k]);
  return times;
}

// Whether two descriptors are the same shape in any dtype.
bool same_shape(ConvDesc a, ConvDesc b) {
  a.dtype = b.dtype = DType::kF32;
  return a.to_string() == b.to_string();
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  try {
    cfg = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fftconv-bench: %s\n", e.what());
    return 2;
  }
  std::vector<ft::ShapeRow> rows = cfg.single;
  for (const std::string& f : cfg.shape_files) {
    try {
      for (auto& r : ft::load_shapes(f)) rows.push_back(r);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fftconv-bench: %s\n", e.what());
      return 2;
    }
  }
  if (!cfg.dtypes.empty()) rows = ft::with_dtypes(rows, cfg.dtypes);
  if (!cfg.filter.empty()) {
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const ft::ShapeRow& r) {
                                return r.name.find(cfg.filter) == std::string::npos;
                              }),
               rows.end());
  }
  std::string why;
  if (!ft::has_device(&why)) {
    std::fprintf(stderr,
                 "fftconv-bench: %s.\nThis driver times and verifies the GPU engine and needs a "
                 "CUDA GPU; %zu row(s) were loaded and none was run.\n",
                 why.c_str(), rows.size());
    return 2;
  }
  cudaDeviceProp prop{};
  int dev = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  std::printf("device: %s (%d SMs), %zu row(s), %d timed runs after %d warm-up%s, engine algo %s%s\n",
              prop.name, prop.multiProcessorCount, rows.size(), cfg.iters, cfg.warmup,
              cfg.graph ? " (CUDA-graph replays)" : "", fftconv::algo_name(cfg.algo),
              cfg.verify ? ", verified against the fp64 oracle" : "");
  cudaStream_t stream;
  ft::cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  print_header();
  std::vector<Row> results;
  int failed = 0;
  // Prints a row with its sweeps and stages, and keeps it (the JSON is rewritten as rows come).
  const auto report = [&](const Row& r) {
    if (r.verified && !r.ok) ++failed;
    print_row(r);
    if (!r.gemm_ms.empty()) {
      std::printf("  gemm sweep (fft ms):");
      for (const auto& g : r.gemm_ms) std::printf(" %s=%s", g.first.c_str(), fmt(g.second).c_str());
      std::printf("\n  best own %s %s ms, best cublas %s %s ms, heuristic regret %s\n",
                  r.gemm_best.c_str(), fmt(r.gemm_best_ms).c_str(), r.cublas_best.c_str(),
                  fmt(r.cublas_best_ms).c_str(), fmt(r.regret, "%.3f").c_str());
    }
    if (!r.fft_sizes_ms.empty()) {
      std::printf("  fft sizes (ms):");
      for (const auto& f : r.fft_sizes_ms) std::printf(" %s=%s", f.first.c_str(), fmt(f.second).c_str());
      std::printf("\n");
    }
    if (!r.stages.empty()) {
      std::printf("  stages (ms):");
      for (const auto& st : r.stages) std::printf(" %s=%s", st.stage.c_str(), fmt(st.ms, "%.4f").c_str());
      for (const auto& st : r.stages) {
        if (st.stage == "gemm" && st.ms > 0) {
          std::printf("  | gemm %.0f GFLOP/s, floor %.4f ms (%.0f MB at 4.3 TB/s, %.2f GFLOP at 67 TFLOP/s)",
                      r.gemm_flops / (st.ms * 1e6),
                      1e3 * std::max(r.gemm_min_bytes / kCopyBytesPerSec, r.gemm_flops / kFp32FlopsPerSec),
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
    results.push_back(r);
    if (!cfg.json_path.empty()) write_json(cfg.json_path, cfg, results, prop.name, false);
  };
  // Rows run in groups, pass by pass: one row each, or with --interleave a shape's dtypes
  // (consecutive after --dtypes), whose engine times are then taken in turn.
  std::vector<Row> group_rows;
  for (std::size_t first = 0; first < rows.size();) {
    std::size_t last = first + 1;
    while (cfg.interleave && last < rows.size() && same_shape(rows[first].desc, rows[last].desc))
      ++last;
    for (Pass pass : cfg.passes) {
      group_rows.clear();
      std::vector<const ft::ShapeRow*> group;
      std::vector<std::uint64_t> seeds;
      for (std::size_t row = first; row < last; ++row) {
        group.push_back(&rows[row]);
        seeds.push_back(1000 + 17 * row);
        group_rows.push_back(run_row(rows[row], pass, seeds.back(), cfg, stream));
      }
      if (cfg.interleave) {
        const auto times = interleaved_times(group, seeds, pass, cfg, stream);
        const std::vector<float>& base = times[0];
        for (std::size_t g = 0; g < group_rows.size(); ++g) {
          Row& r = group_rows[g];
          r.engine_ms = times[g].empty() ? NAN : ft::median_of(times[g]);
          if (r.algo == "fft") r.fft_ms = r.engine_ms;
          r.speedup = r.cudnn_ms / r.engine_ms;
          if (g > 0 && !base.empty() && !times[g].empty()) {
            r.paired = ft::paired_ratio(base, times[g]);
            r.has_paired = true;
            r.paired_base = group_rows[0].dtype;
          }
        }
        if (cfg.control && !base.empty() && !times.back().empty()) {
          group_rows[0].control = ft::paired_ratio(base, times.back());
          group_rows[0].has_control = true;
        }
      }
      for (const Row& r : group_rows) report(r);
    }
    first = last;
  }
  cudaStreamDestroy(stream);
  if (!cfg.json_path.empty()) write_json(cfg.json_path, cfg, results, prop.name, true);
  if (cfg.verify) {
    std::printf("%d of %zu row(s) out of tolerance\n", failed, results.size());
  }
  return failed ? 1 : 0;
}
