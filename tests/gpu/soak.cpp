// Soak test: threads build plans for random shapes, run all three passes, destroy them, for a
// bounded time; every call must succeed and device memory must return to its level after the
// first round (a leaked plan, cuFFT handle, cuDNN handle or kept filter shows as growth).
//
//   fftconv_soak --threads 8 --seconds 120 [--rounds 10] [--seed 1] [--max-growth-mib 64]
//                [--algos auto,fft,fft_tiled,fft_fused,cudnn] [--pool 64] [--passes fwd,dgrad,wgrad]
//
// Each thread cycles through a pool of --pool random cases (shape, dtype, algorithm, data seed;
// 0: a new random case every time). The run is cut into rounds; at the end of each the threads
// join, the device is synchronised and cudaMemGetInfo gives the memory in use. Round 1 is the
// warm-up, long enough to see every case of the pools once (module loading, library handles,
// the kernels each case uses); the check is the last round against it. With --pool 0 new cases
// keep loading kernels no earlier round used (CUDA's lazy module loading and cuDNN's engines),
// whose code also takes device memory: there the growth is that, not a leak, and --pool is the
// leak check. FFT plans (Algo::kFft, kFftTiled, kFftFused, and Auto where it picks one) are checked against
// the fp64 device oracle at the tests' tolerance on every call; cuDNN plans are run and
// synchronised only (their accuracy is the GPU suites' business). A pass an algorithm does not
// serve (Status::kNotSupported, kKernelTooLarge) is counted as declined, not failed. Exit
// status: 0 pass, 1 fail, 2 bad arguments, 77 no device (ctest's skip code).
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <csignal>
#include <execinfo.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "fftconv/fftconv.hpp"
#include "reference/reference.h"
#include "testing/testing.h"

namespace {

using fftconv::Algo;
using fftconv::ConvDesc;
using fftconv::DType;
using fftconv::Options;
using fftconv::Pass;
using fftconv::Plan;
using fftconv::Status;
namespace testing = fftconv::testing;

struct Args {
  int threads = 8;
  double seconds = 60.0;
  int rounds = 10;
  std::uint64_t seed = 1;
  double max_growth_mib = 64.0;
  std::vector<Algo> algos{Algo::kAuto, Algo::kFft, Algo::kFftTiled, Algo::kFftFused, Algo::kCudnn};
  int pool = 64;
  std::vector<Pass> passes{Pass::kForward, Pass::kBackwardData, Pass::kBackwardFilter};
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "fftconv_soak: %s\nusage: fftconv_soak [--threads N] [--seconds S] [--rounds R] "
               "[--seed K] [--max-growth-mib M] [--algos auto,fft,fft_tiled,fft_fused,cudnn] [--pool N]\n"
               "       [--passes fwd,dgrad,wgrad]\n",
               why);
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string key = argv[i];
    if (key == "--help" || key == "-h") usage("help");
    if (i + 1 >= argc) usage(("missing value after " + key).c_str());
    const char* value = argv[++i];
    if (key == "--algos" || key == "--passes") {
      // A comma-separated list of names, parsed by the library's own parsers.
      const bool algos = key == "--algos";
      if (algos) a.algos.clear(); else a.passes.clear();
      const std::string list = value;
      for (std::size_t pos = 0; pos <= list.size();) {
        const std::size_t comma = std::min(list.find(',', pos), list.size());
        const std::string name = list.substr(pos, comma - pos);
        try {
          if (algos) a.algos.push_back(fftconv::parse_algo(name));
          else a.passes.push_back(fftconv::parse_pass(name));
        } catch (const fftconv::Error& e) {
          usage(e.what());
        }
        pos = comma + 1;
      }
      continue;
    }
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(value, &end);
    if (end == value || *end != '\0' || errno != 0) usage(("not a number: " + key + " " + value).c_str());
    if (key == "--threads") a.threads = static_cast<int>(v);
    else if (key == "--seconds") a.seconds = v;
    else if (key == "--rounds") a.rounds = static_cast<int>(v);
    else if (key == "--seed") a.seed = static_cast<std::uint64_t>(v);
    else if (key == "--max-growth-mib") a.max_growth_mib = v;
    else if (key == "--pool") a.pool = static_cast<int>(v);
    else usage(("unknown option " + key).c_str());
  }
  if (a.threads < 1 || a.threads > 256) usage("--threads must be in 1..256");
  if (!(a.seconds > 0.0)) usage("--seconds must be positive");
  if (a.rounds < 2 || a.rounds > 1000) usage("--rounds must be in 2..1000");
  if (!(a.max_growth_mib >= 0.0)) usage("--max-growth-mib must be >= 0");
  if (a.pool < 0 || a.pool > 100000) usage("--pool must be in 0..100000");
  return a;
}

/// Counters of one thread (merged under a lock at the end of each round).
struct Tally {
  long shapes = 0, plans = 0, calls = 0, verified = 0, declined = 0, failures = 0;
  double worst_rel_l2[3] = {0.0, 0.0, 0.0};  // per dtype, over the verified calls
  void add(const Tally& o) {
    shapes += o.shapes;
    plans += o.plans;
    calls += o.calls;
    verified += o.verified;
    declined += o.declined;
    failures += o.failures;
    for (int i = 0; i < 3; ++i) worst_rel_l2[i] = std::max(worst_rel_l2[i], o.worst_rel_l2[i]);
  }
};

std::mutex g_print_mu;
void report_failure(const std::string& what) {
  std::lock_guard<std::mutex> lock(g_print_mu);
  std::printf("FAIL %s\n", what.c_str());
  std::fflush(stdout);
}

void check(cudaError_t err, const char* what) { testing::cuda_check(err, what); }

using testing::download;
using testing::download_f64;
using testing::upload;

bool declined(Status s) { return s == Status::kNotSupported || s == Status::kKernelTooLarge; }

/// One case of the soak: a shape, the algorithm its plans ask for and the seed of its data.
struct Case {
  ConvDesc desc;
  Algo algo = Algo::kAuto;
  std::uint64_t seed = 0;
};

Case draw_case(std::mt19937_64& gen, const std::vector<Algo>& algos) {
  static constexpr DType kDtypes[] = {DType::kF32, DType::kF16, DType::kBF16};
  testing::RandomDescOptions shape;
  shape.dtype = kDtypes[gen() % 3];
  shape.max_macs = 2e7;  // the fp64 oracle stays at milliseconds
  Case c;
  c.desc = testing::random_desc(gen, shape);
  c.algo = algos[gen() % algos.size()];
  c.seed = gen();
  return c;
}

/// One case: plans for the three passes with its algorithm, each run once (forward twice, the
/// second time with a kept filter for odd seeds), checked against the oracle where the plan is an
/// FFT plan, then destroyed.
void run_case(const Case& c, const std::vector<Pass>& passes, cudaStream_t stream, Tally& t) {
  const ConvDesc& d = c.desc;
  const Algo algo = c.algo;
  const std::uint64_t seed = c.seed;
  ++t.shapes;

  const auto xv = testing::random_values(d.x_elems(), seed, d.dtype);
  const auto wv = testing::random_values(d.w_elems(), seed + 1, d.dtype);
  const auto bv = testing::random_values(d.k, seed + 2, d.dtype);
  const auto dyv = testing::random_values(d.y_elems(), seed + 3, d.dtype);
  const testing::DeviceBuffer x = upload(xv, d.dtype), w = upload(wv, d.dtype),
                              bias = upload(bv, d.dtype), dy = upload(dyv, d.dtype);
  const testing::DeviceBuffer x32 = upload(xv, DType::kF32), w32 = upload(wv, DType::kF32),
                              b32 = upload(bv, DType::kF32), dy32 = upload(dyv, DType::kF32);
  const std::size_t esize = fftconv::dtype_size(d.dtype);
  const double tol = testing::tolerance(d.dtype);

  for (Pass pass : passes) {
    const std::string what = std::string(fftconv::pass_name(pass)) + " " + fftconv::algo_name(algo) +
                             " " + d.to_string();
    try {
      Options o;
      o.algo = algo;
      o.pass = pass;
      Plan plan(d, o);
      ++t.plans;
      const bool fft = plan.info().algo == Algo::kFft || plan.info().algo == Algo::kFftTiled ||
                       plan.info().algo == Algo::kFftFused;
      testing::DeviceBuffer ws(std::max<std::size_t>(plan.workspace_size(), 1));
      const std::int64_t out_elems = pass == Pass::kForward        ? d.y_elems()
                                     : pass == Pass::kBackwardData ? d.x_elems()
                                                                   : d.w_elems();
      testing::DeviceBuffer out(std::max<std::size_t>(out_elems * esize, 1));
      testing::DeviceBuffer ref(std::max<std::size_t>(out_elems * sizeof(double), 1));
      // Forward runs twice, the second time (every other shape) from a kept filter.
      const int runs = pass == Pass::kForward ? 2 : 1;
      for (int run = 0; run < runs; ++run) {
        // NaN in every byte (nothing written shows), ordered on the stream the pass runs on.
        check(cudaMemsetAsync(out.get(), 0xFF, out.bytes(), stream), "poison");
        if (pass == Pass::kForward) {
          const bool kept = run == 1 && (seed & 1);
          if (kept) plan.set_filter(w.get(), stream);
          plan.forward(x.get(), kept ? nullptr : w.get(), bias.get(), out.get(), ws.get(), ws.bytes(),
                       stream);
          if (kept) plan.clear_filter();
        } else if (pass == Pass::kBackwardData) {
          plan.backward_data(dy.get(), w.get(), out.get(), ws.get(), ws.bytes(), stream);
        } else {
          plan.backward_filter(x.get(), dy.get(), out.get(), ws.get(), ws.bytes(), stream);
        }
        ++t.calls;
        check(cudaStreamSynchronize(stream), what.c_str());
        if (!fft) continue;
        if (pass == Pass::kForward) {
          fftconv::reference::conv2d_forward_device(d, x32.as<float>(), w32.as<float>(),
                                                     b32.as<float>(), ref.as<double>(), stream);
        } else if (pass == Pass::kBackwardData) {
          fftconv::reference::conv2d_backward_data_device(d, dy32.as<float>(), w32.as<float>(),
                                                           ref.as<double>(), stream);
        } else {
          fftconv::reference::conv2d_backward_filter_device(d, x32.as<float>(), dy32.as<float>(),
                                                             ref.as<double>(), stream);
        }
        check(cudaStreamSynchronize(stream), "oracle");
        const testing::ErrorStats err =
            testing::compare(download(out, out_elems, d.dtype), download_f64(ref, out_elems));
        ++t.verified;
        double& worst = t.worst_rel_l2[static_cast<int>(d.dtype)];
        worst = std::max(worst, err.rel_l2);
        if (!err.pass(tol)) {
          ++t.failures;
          report_failure(what + ": " + err.to_string() + " (tolerance " + std::to_string(tol) +
                         ") plan: " + plan.describe());
        }
      }
    } catch (const fftconv::Error& e) {
      if (declined(e.status())) {
        ++t.declined;
      } else {
        ++t.failures;
        report_failure(what + ": " + e.what());
      }
    } catch (const std::exception& e) {
      ++t.failures;
      report_failure(what + ": " + e.what());
    }
  }
}

// A crash prints the stack of the thread that crashed (symbols: build with -rdynamic or read
// the addresses with addr2line) before the default action.
void on_crash(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  const char msg[] = "fftconv_soak: crashed; stack:\n";
  (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

double used_mib() {
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return static_cast<double>(total_bytes - free_bytes) / (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGSEGV, on_crash);
  std::signal(SIGABRT, on_crash);
  const Args args = parse_args(argc, argv);
  std::string why;
  if (!testing::has_device(&why)) {
    std::printf("fftconv_soak: skipped: %s\n", why.c_str());
    return 77;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::string algos, passes;
  for (Algo a : args.algos) algos += std::string(algos.empty() ? "" : ",") + fftconv::algo_name(a);
  for (Pass p : args.passes) passes += std::string(passes.empty() ? "" : ",") + fftconv::pass_name(p);
  std::printf("fftconv_soak: %s, %d threads, %.0f s in %d rounds, seed %llu, algos %s, passes %s, %s\n",
              prop.name, args.threads, args.seconds, args.rounds,
              static_cast<unsigned long long>(args.seed), algos.c_str(), passes.c_str(),
              args.pool ? ("a pool of " + std::to_string(args.pool) + " cases per thread, cycled")
                              .c_str()
                        : "a new random case every time");
  const double start_mib = used_mib();
  std::printf("device memory in use at start: %.1f MiB\n", start_mib);

  std::vector<std::mt19937_64> gens;
  std::vector<std::vector<Case>> pools(args.threads);
  std::vector<std::size_t> next(args.threads, 0);
  std::vector<cudaStream_t> streams(args.threads);
  for (int i = 0; i < args.threads; ++i) {
    gens.emplace_back(args.seed * 1000003 + i);
    for (int j = 0; j < args.pool; ++j) pools[i].push_back(draw_case(gens[i], args.algos));
    check(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking), "cudaStreamCreate");
  }
  Tally total;
  std::vector<double> used(args.rounds);
  const auto round_length = std::chrono::duration<double>(args.seconds / args.rounds);
  // The same worker threads for every round (as an application's threads live): each waits for
  // the next round to open, works until its deadline, reports, and waits again.
  std::mutex mu;
  std::condition_variable cv;
  int round_open = 0, finished = 0;  // round_open: rounds opened so far; -1: stop
  std::chrono::steady_clock::time_point deadline;
  std::vector<Tally> tallies(args.threads);
  std::vector<std::thread> workers;
  for (int i = 0; i < args.threads; ++i) {
    workers.emplace_back([&, i] {
      for (int seen = 0;;) {
        std::chrono::steady_clock::time_point until;
        {
          std::unique_lock<std::mutex> lock(mu);
          cv.wait(lock, [&] { return round_open != seen; });
          if (round_open < 0) return;
          seen = round_open;
          until = deadline;
        }
        while (std::chrono::steady_clock::now() < until) {
          if (pools[i].empty()) {
            run_case(draw_case(gens[i], args.algos), args.passes, streams[i], tallies[i]);
          } else {
            run_case(pools[i][next[i]], args.passes, streams[i], tallies[i]);
            next[i] = (next[i] + 1) % pools[i].size();
          }
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          ++finished;
        }
        cv.notify_all();
      }
    });
  }
  for (int round = 0; round < args.rounds; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(mu);
      for (Tally& t : tallies) t = Tally{};
      finished = 0;
      deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(round_length);
      ++round_open;
    }
    cv.notify_all();
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return finished == args.threads; });
    }
    Tally r;
    for (const Tally& t : tallies) r.add(t);
    total.add(r);
    used[round] = used_mib();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("round %d: %.1f s, %ld cases, %ld plans, %ld calls, %ld verified, %ld declined, "
                "%ld failed; device memory in use %.1f MiB\n",
                round + 1, secs, r.shapes, r.plans, r.calls, r.verified, r.declined, r.failures,
                used[round]);
    std::fflush(stdout);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    round_open = -1;
  }
  cv.notify_all();
  for (std::thread& w : workers) w.join();
  for (cudaStream_t s : streams) check(cudaStreamDestroy(s), "cudaStreamDestroy");

  const double growth = used.back() - used.front();
  const bool memory_ok = growth <= args.max_growth_mib;
  const bool ok = memory_ok && total.failures == 0 && total.calls > 0;
  std::printf("total: %ld cases, %ld plans, %ld calls, %ld checked against the oracle (worst "
              "rel-L2 f32 %.2e, f16 %.2e, bf16 %.2e), %ld declined, %ld failed\n",
              total.shapes, total.plans, total.calls, total.verified, total.worst_rel_l2[0],
              total.worst_rel_l2[1], total.worst_rel_l2[2], total.declined, total.failures);
  std::printf("device memory in use: %.1f MiB at start, %.1f MiB after round 1, %.1f MiB at the "
              "end: growth %+.1f MiB (limit %.0f)\n",
              start_mib, used.front(), used.back(), growth, args.max_growth_mib);
  std::printf("%s\n", ok ? "soak ok" : "soak FAILED");
  return ok ? 0 : 1;
}
