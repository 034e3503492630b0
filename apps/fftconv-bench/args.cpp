// fftconv-bench's command line (CLI11).
#include "args.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cli.h"

namespace bench {
namespace {

namespace ft = fftconv::testing;
using fftconv::Pass;

// The items of a comma-separated list, empty ones included ("fwd,,dgrad" has three).
std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) items.push_back(item);
  return items;
}

std::vector<Pass> parse_pass_list(const std::string& list) {
  std::vector<Pass> passes;
  for (const std::string& item : split_list(list)) passes.push_back(fftconv::parse_pass(item));
  if (passes.empty()) throw std::invalid_argument("needs at least one of fwd, dgrad, wgrad");
  return passes;
}

// --fft: "all", or HxW with both sizes >= 1.
void parse_fft(const std::string& v, Config& c) {
  c.fft_all = v == "all";
  c.fft_h = c.fft_w = 0;
  if (c.fft_all) return;
  const std::size_t x = v.find('x');
  char* end = nullptr;
  const long long h = std::strtoll(v.c_str(), &end, 10);
  const bool h_ok = x != std::string::npos && x > 0 && end == v.c_str() + x;
  const long long w = h_ok ? std::strtoll(v.c_str() + x + 1, &end, 10) : 0;
  if (!h_ok || x + 1 == v.size() || *end != '\0' || h < 1 || w < 1) {
    throw std::invalid_argument("expects HxW (e.g. 128x128) or all, not '" + v + "'");
  }
  c.fft_h = h;
  c.fft_w = w;
}

// The command as recorded in results: where the JSON went is not part of the experiment.
std::string recorded_command(int argc, char** argv) {
  std::string command;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      ++i;
      continue;
    }
    if (a.rfind("--json=", 0) == 0) continue;
    command += (command.empty() ? "" : " ") + a;
  }
  return command;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "fftconv-bench: %s (see --help)\n", message.c_str());
  return fftconv_apps::kExitUsage;
}

}  // namespace

int parse_args(int argc, char** argv, Config& c) {
  using fftconv_apps::integer_in;
  using fftconv_apps::parsed_by;
  using fftconv_apps::repeatable;
  CLI::App app(
      "Runs the fftconv engine on shape suites (or one shape), times it against cuDNN, verifies "
      "it\nagainst the fp64 device oracle, and writes an aligned table and JSON.",
      "fftconv-bench");
  fftconv_apps::configure(app);
  app.footer(
      "Exit status: 0 done, 1 a verified row out of tolerance, 2 bad arguments, an unreadable\n"
      "shape file or no CUDA GPU.");

  // ---- what to run ----
  const char* const kShapes = "Shapes";
  repeatable(app.add_option("--shapes", c.shape_files,
                            "shape suite CSV (columns name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,\n"
                            "stride_w,dil_h,dil_w,groups,dtype); may repeat"))
      ->type_name("FILE")
      ->group(kShapes);
  // One row from flags, and --desc rows named by the --name given before them; flags apply in
  // the order given (--pad 3 --pad-h 5: 5 x 3; --pad-h 5 --pad 3: 3 x 3).
  fftconv::ConvDesc d;
  std::string name = "cli";
  app.add_option_function<std::string>(
         "--desc",
         [&](const std::string& v) {
           c.single.push_back({name == "cli" ? "desc" : name, fftconv::ConvDesc::parse(v)});
         },
         "one shape by its canonical string\n(n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32); may repeat")
      ->type_name("STRING")
      ->check(parsed_by([](const std::string& v) { fftconv::ConvDesc::parse(v); }))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->trigger_on_parse()
      ->group(kShapes);
  app.add_option("--name", name,
                 "name of the row from the shape flags (default cli) and of the --desc\n"
                 "rows after it (default desc)")
      ->type_name("TEXT")
      ->trigger_on_parse()
      ->group(kShapes);
  std::vector<CLI::Option*> shape_flags;
  const auto dim = [&](const char* flag, std::int64_t& field, const char* what) {
    shape_flags.push_back(app.add_option(flag, field, what)
                              ->type_name("N")
                              ->check(integer_in(std::numeric_limits<long long>::min()))
                              ->trigger_on_parse()
                              ->group(kShapes));
  };
  const auto both = [&](const char* flag, std::int64_t& a, std::int64_t& b, const char* what) {
    shape_flags.push_back(app.add_option_function<std::int64_t>(
                                 flag, [&a, &b](std::int64_t v) { a = b = v; }, what)
                              ->type_name("N")
                              ->check(integer_in(std::numeric_limits<long long>::min()))
                              ->trigger_on_parse()
                              ->group(kShapes));
  };
  dim("--n", d.n, "batch (default 1)");
  dim("--c", d.c, "input channels (default 1)");
  dim("--h", d.h, "input height (default 1)");
  dim("--w", d.w, "input width (default 1)");
  dim("--k", d.k, "output channels (default 1)");
  dim("--r", d.r, "kernel height (default 1)");
  dim("--s", d.s, "kernel width (default 1)");
  both("--pad", d.pad_h, d.pad_w, "zero padding on each side, both axes (default 0)");
  dim("--pad-h", d.pad_h, "zero padding, rows");
  dim("--pad-w", d.pad_w, "zero padding, columns");
  both("--stride", d.stride_h, d.stride_w, "stride, both axes (default 1)");
  dim("--stride-h", d.stride_h, "stride, rows");
  dim("--stride-w", d.stride_w, "stride, columns");
  both("--dil", d.dil_h, d.dil_w, "dilation, both axes (default 1)");
  dim("--dil-h", d.dil_h, "dilation, rows");
  dim("--dil-w", d.dil_w, "dilation, columns");
  dim("--groups", d.groups, "groups (default 1)");
  shape_flags.push_back(
      app.add_option_function<std::string>(
             "--dtype", [&](const std::string& v) { d.dtype = fftconv::parse_dtype(v); },
             "element type: f32 (default), f16 or bf16")
          ->type_name("T")
          ->check(parsed_by([](const std::string& v) { fftconv::parse_dtype(v); }))
          ->trigger_on_parse()
          ->group(kShapes));
  app.add_option_function<std::string>(
         "--pass", [&](const std::string& v) { c.passes = parse_pass_list(v); },
         "passes to run, comma-separated: fwd (default), dgrad, wgrad")
      ->type_name("LIST")
      ->check(parsed_by([](const std::string& v) { parse_pass_list(v); }))
      ->group(kShapes);
  app.add_option_function<std::string>(
         "--dtypes", [&](const std::string& v) { c.dtypes = ft::parse_dtype_list(v); },
         "run every row in each dtype of LIST (f32,f16,bf16) instead of the\n"
         "CSV's; variants are named <row>_<dtype> (no suffix for f32)")
      ->type_name("LIST")
      ->check(parsed_by([](const std::string& v) { ft::parse_dtype_list(v); }))
      ->group(kShapes);
  app.add_option("--filter", c.filter, "only rows whose name contains TEXT (after --dtypes naming)")
      ->type_name("TEXT")
      ->group(kShapes);

  // ---- measurement ----
  const char* const kRun = "Measurement";
  app.add_flag("--verify", c.verify,
               "compare with the fp64 device oracle; exit 1 if a row is out of\ntolerance")
      ->group(kRun);
  app.add_option("--json", c.json_path, "write the results as JSON")
      ->type_name("FILE")
      ->group(kRun);
  app.add_flag("--resume", c.resume,
               "with --json FILE: keep the row-passes FILE holds (an earlier run with the\n"
               "same timing settings on the same device, stopped early) and run only\n"
               "the others; a FILE that does not exist starts afresh")
      ->group(kRun);
  app.add_flag("--progress", c.progress,
               "say on stderr as each row-pass starts and as each of its parts ends\n"
               "(engine, sweeps, cudnn, cudnn_tf32), with its wall time")
      ->group(kRun);
  app.add_option("--iters", c.iters, "timed runs per measurement (median reported; default 20)")
      ->type_name("N")
      ->check(integer_in(1))
      ->group(kRun);
  app.add_option("--warmup", c.warmup, "untimed runs first (default 5)")
      ->type_name("N")
      ->check(integer_in(0))
      ->group(kRun);
  app.add_flag("--graph", c.graph,
               "time the engine's passes as replays of a CUDA graph captured once\n"
               "per input copy: device time without host launch gaps (cuDNN\n"
               "baselines are timed as direct calls either way)")
      ->group(kRun);
  app.add_flag("--interleave", c.interleave,
               "with --dtypes: time the engine on a row's dtypes in turn (iteration i\n"
               "of every dtype before iteration i+1 of any, in rotating order), so a\n"
               "drift of the device falls on every dtype alike; each dtype's\n"
               "time against the first one's, round by round: the median ratio\n"
               "and its 95% interval (JSON paired_ratio, paired_lo, paired_hi)")
      ->group(kRun);
  app.add_option("--placements", c.placements,
                 "with --interleave: each dtype's runs rotate over N engine instances\n"
                 "(plan, workspace and output; default 4), so that no dtype's time\n"
                 "rests on where one plan's allocations happened to land")
      ->type_name("N")
      ->check(integer_in(1, 64))
      ->group(kRun);
  app.add_flag("--control", c.control,
               "with --interleave: time a second, separate copy of the first dtype\n"
               "(its own plan and tensors) in turn with the others; its ratio to the\n"
               "first (JSON control_ratio, control_lo, control_hi) shows how far\n"
               "two runs of the same work differ")
      ->group(kRun);
  app.add_option("--gaussian", c.gaussian_sigma,
                 "every filter plane a normalised Gaussian of this sigma instead of random\n"
                 "values (rank 1: a kept filter runs as 1-D passes, the separable path)")
      ->check(CLI::PositiveNumber)
      ->group(kRun);
  app.add_flag("--stages", c.stages,
               "time every stage of the forward engine (pad, r2c, gemm, c2r, clip);\n"
               "GEMM GFLOP/s")
      ->group(kRun);
  bool no_cudnn = false;
  app.add_flag("--no-cudnn", no_cudnn, "skip the cuDNN baselines")->group(kRun);
  app.add_flag("--callbacks", c.fft_callbacks,
               "FFT path: pad in a cuFFT load callback as the r2c reads\n"
               "(Options::fft_callbacks) instead of in a pad kernel")
      ->group(kRun);
  app.add_flag("--own-fft", c.own_fft,
               "FFT paths: pad + r2c and c2r + clip in the own one-pass plane kernels\n"
               "(Options::own_fft) instead of pad, cuFFT and clip")
      ->group(kRun);
  app.add_flag("--shared-spectrum", c.shared_spectrum,
               "also time a training step's use of the filter spectrum (Plan::filter_spectrum):\n"
               "fwd: filter_spectrum + forward_with_spectrum; dgrad: backward_data_with_spectrum\n"
               "of the forward plan's spectrum, at its FFT size")
      ->group(kRun);
  bool no_pointer_check = false;
  app.add_flag("--no-pointer-check", no_pointer_check,
               "plans without Options::check_pointers (to measure what the check costs)")
      ->group(kRun);

  // ---- the engine ----
  const char* const kEngine = "Engine";
  app.add_option_function<std::string>(
         "--algo", [&](const std::string& v) { c.algo = fftconv::parse_algo(v); },
         "engine algorithm: auto (default), fft, fft_tiled, fft_fused, separable,\n"
         "direct or cudnn")
      ->type_name("A")
      ->check(parsed_by([](const std::string& v) { fftconv::parse_algo(v); }))
      ->group(kEngine);
  app.add_option("--cudnn-algo", c.cudnn_algo,
                 "the engine's cuDNN algorithm (with --algo cudnn; names as in\n"
                 "fftconv::cudnn_algo_names, e.g. ALGO_0, FFT, FFT_TILING)")
      ->type_name("NAME")
      ->group(kEngine);
  app.add_option_function<std::string>(
         "--cudnn-search",
         [&](const std::string& v) { c.cudnn_search = fftconv::parse_cudnn_search(v); },
         "how the cuDNN path picks its algorithm, the engine's (--algo cudnn, or\n"
         "where Auto picks cuDNN) and the cuDNN columns': auto (default: the faster\n"
         "of find and graph), find (the legacy API's cudnnFind*), heuristic, or graph\n"
         "(the graph API's engines, timed)")
      ->type_name("S")
      ->check(parsed_by([](const std::string& v) { fftconv::parse_cudnn_search(v); }))
      ->group(kEngine);
  app.add_option("--gemm", c.gemm,
                 "FFT path: force a GEMM tiling, or (all) time every tiling and cuBLAS\n"
                 "path on rows the engine runs through the FFT, with the heuristic's\n"
                 "regret (its tiling's time / the best own tiling's time)")
      ->type_name("NAME|all")
      ->group(kEngine);
  app.add_option_function<std::string>(
         "--fft", [&](const std::string& v) { parse_fft(v, c); },
         "FFT path: force the FFT size, or (all) time the first candidate\nsizes")
      ->type_name("HxW|all")
      ->check(parsed_by([](const std::string& v) {
        Config scratch;
        parse_fft(v, scratch);
      }))
      ->group(kEngine);
  app.add_option("--workspace-limit", c.workspace_limit,
                 "largest workspace the engine may plan for")
      ->type_name("BYTES")
      ->check(integer_in(0))
      ->group(kEngine);
  app.add_option_function<std::string>(
         "--tuning", [&](const std::string& v) { c.tuning = fftconv::parse_tuning(v); },
         "heuristic (default), autotune or exhaustive GEMM choice at plan time")
      ->type_name("MODE")
      ->check(parsed_by([](const std::string& v) { fftconv::parse_tuning(v); }))
      ->group(kEngine);
  app.add_option("--tuning-cache", c.tuning_cache,
                 "tuning cache file for autotune/exhaustive\n(default $FFTCONV_TUNING_CACHE)")
      ->type_name("FILE")
      ->group(kEngine);

  c.command = recorded_command(argc, argv);
  try {
    const int status = fftconv_apps::parse(app, argc, argv, "fftconv-bench: ");
    if (status >= 0) return status;
  } catch (const std::exception& e) {  // a value the validators let through but the parser refused
    return usage_error(e.what());
  }
  c.cudnn = !no_cudnn;
  c.check_pointers = !no_pointer_check;
  for (const CLI::Option* o : shape_flags) {
    if (o->count() > 0) {
      c.single.push_back({name, d});
      break;
    }
  }
  if (c.stages && (c.passes.size() > 1 || c.passes[0] != Pass::kForward)) {
    std::fprintf(stderr, "fftconv-bench: note: --stages times the forward pass only\n");
  }
  if (c.shape_files.empty() && c.single.empty()) {
    return usage_error("give --shapes FILE.csv or a shape (--desc, --n ...)");
  }
  if (c.control && !c.interleave) return usage_error("--control needs --interleave");
  if (c.resume && c.json_path.empty()) return usage_error("--resume needs --json FILE");
  if (c.resume && c.interleave) {
    return usage_error("--resume runs whole groups only; it does not take --interleave");
  }
  if (c.interleave && c.dtypes.size() < 2) {
    return usage_error("--interleave needs --dtypes with two or more dtypes");
  }
  return -1;
}

fftconv::Options engine_options(const Config& cfg, Pass pass) {
  fftconv::Options engine;
  engine.pass = pass;
  engine.algo = cfg.algo;
  engine.workspace_limit = cfg.workspace_limit;
  engine.tuning = cfg.tuning;
  engine.tuning_cache = cfg.tuning_cache;
  engine.cudnn_algo = cfg.cudnn_algo;
  engine.cudnn_search = cfg.cudnn_search;
  if (!cfg.gemm.empty() && cfg.gemm != "all") engine.gemm_kernel = cfg.gemm;
  engine.fft_h = cfg.fft_h;
  engine.fft_w = cfg.fft_w;
  engine.check_pointers = cfg.check_pointers;
  engine.fft_callbacks = cfg.fft_callbacks;
  engine.own_fft = cfg.own_fft;
  return engine;
}

}  // namespace bench
