#!/usr/bin/env bash
# Builds fftconv on a GPU machine, runs every test, the verified benchmark driver on every shape
# suite, the Google Benchmark suite and the PyTorch baseline, writes the report (table and chart)
# and the comparison with the recorded H200 baseline, times fftconv-blur and the landmark example
# on the GPU and the CPU backend, and leaves logs and JSON under $OUT (default: ./gpu-out).
#
#   scripts/gpu_check.sh                 # every step: build test bench dtypes gbench torch report blur main
#                                        #   python example torchops filters
#   FFTCONV_GPU_STEPS="build bench" scripts/gpu_check.sh
#   FFTCONV_CTEST_ARGS="-R Suite" FFTCONV_BENCH_ARGS="--filter landmark" scripts/gpu_check.sh
#   FFTCONV_LIMIT_TEST=200 FFTCONV_LIMIT_BENCH=150 scripts/gpu_check.sh   # bound steps (seconds)
#
# All steps together should take about 15 minutes on an H200, estimated from partial runs (tests 5,
# driver 4, Google Benchmark 3, PyTorch 2, blur 1): where one call is limited to 10 minutes, run
# "build test bench" and then "gbench torch report blur main" on the same machine (the build is
# reused). On a machine with several GPUs, steps run side by side: in FFTCONV_GPU_STEPS, ';'
# separates stages run one after the other and '|' separates groups of a stage, each group on its
# own GPU (round robin), e.g. on two GPUs
#   FFTCONV_GPU_STEPS="build; test | bench" scripts/gpu_check.sh
#   FFTCONV_GPU_STEPS="gbench | torch blur main; report" scripts/gpu_check.sh
# Steps: build, test (ctest), sanitize (compute-sanitizer memcheck, racecheck, initcheck and
# synccheck over the GPU suites on small shapes: sanitizer.txt; not by default), soak
# (fftconv_soak, 8 threads: a case pool for FFTCONV_SOAK_SECONDS, default 120, then a minute of
# new cases: soak.txt; not by default), bench (fftconv-bench --verify on every suite CSV, and suite.csv
# again in fp16 and bf16), dtypes (suite.csv in fp32, fp16 and bf16 timed in turn, 200 rounds,
# with a second fp32 copy as control and bench_report's half-against-fp32 table, timed as direct
# calls and as CUDA-graph replays, then
# --stages in both dtype orders), gbench
# (fftconv_gbench, one JSON per pass), torch
# (bench/torch_baseline.py), report (bench_report and bench_compare), blur (fftconv-blur and the
# landmark example on both backends), main (the README's main job, scripts/main_job.sh), python
# (the Python package installed by pip from this tree into $BUILD-pip, its pytest run against
# that install: pytest-torch.txt), torchops (bench/torch_ops.py, fftconv.conv2d against F.conv2d
# interleaved: torch-ops.json, after bench/torch_host_cost.py: host-cost.json), pytest (the
# package's tests against the build tree's extension: pytest-torch.txt), example (apps/examples/landmark_train.py: the two loss curves),
# filters (bench/torch_filters.py: Gaussian blurs against kornia, torchvision and F.conv2d:
# filters.json; FFTCONV_FILTERS_ARGS appended), parity (bench/torch_ops.py on suite.csv and
# bench/parity_small.csv, three passes and dtypes, then bench/parity.py: parity.json and
# parity.md; FFTCONV_PARITY_SHAPES replaces the two CSV files, e.g. with bench/parity_small.csv
# alone where the suite rows are measured already; FFTCONV_PARITY_ARGS appended to torch_ops.py's;
# not by default), callbacks (the FFT path's pad in cuFFT's load callback against the pad kernel:
# fftconv-bench on suite.csv, every pass, --stages, with and without --callbacks, each plan's
# time included: callbacks-on.json, callbacks-off.json; not by default), spectrum (a training
# step's shared filter spectrum, fftconv-bench --shared-spectrum on suite.csv, fwd and dgrad:
# spectrum.json; FFTCONV_SPECTRUM_ARGS appended; not by default), fused (the fused small-plane
# path: its GPU tests, racecheck over its kernels, and the small-plane suite rows with --algo
# fft_fused, fft and auto: fused-*.txt and fused-*.json, and the rows whose fused size lies
# between powers of two forced to the next power of two: fused-pow2-*; FFTCONV_FUSED_ALGOS,
# FFTCONV_FUSED_ARGS, FFTCONV_FUSED_PASSES (default fwd,dgrad,wgrad);
# not by default), borders (border modes: the GPU tests of borders, the separable path, the
# device oracles and autotuning, the Python padding_mode tests, and fftconv-bench on
# bench/borders.csv, every pass with random filters and the forward pass with kept Gaussians:
# borders-*.txt, borders*.json; FFTCONV_BORDERS_ARGS appended to the benchmark's; not by default),
# cudnn (the cuDNN path through the graph API against the legacy search: its GPU tests, then
# fftconv-bench --algo cudnn with each --cudnn-search of FFTCONV_CUDNN_SEARCHES (default "find
# graph auto") on FFTCONV_CUDNN_SHAPES, default bench/parity_small.csv and the suite's seed1 rows,
# every pass: engine, cold and host times, cudnn-<search>.json; FFTCONV_CUDNN_ARGS appended;
# not by default), direct (the
# direct path: its GPU tests, then fftconv-bench --verify on the suite's small rows,
# every pass, with --algo direct, fft and auto: direct-*.txt, direct-*.json;
# FFTCONV_DIRECT_ARGS appended; not by default), ownfft (the FFT path's own plane kernels,
# Options::own_fft: their GPU tests and racecheck, then the suite rows they cover with --algo
# fft, every pass, with and without --own-fft, and --stages: ownfft-*.txt, ownfft-*.json;
# FFTCONV_OWNFFT_ARGS appended; not by default), ab (a second build with FFTCONV_AB_DEFINES added
# to the compiler flags, its bench driver timed against this build's in turns on the small-plane
# rows: ab-*.txt, ab-*.json; FFTCONV_AB_ROWS, FFTCONV_AB_ARGS; not by default), suite (suite.csv,
# every pass, verified, with the cuDNN baselines, continued from FFTCONV_SUITE_JSON with
# --resume where an earlier call stopped: suite.json, suite.txt, suite-progress.txt;
# FFTCONV_SUITE_FIND_ROWS (rows whose baselines use cudnnFind alone), FFTCONV_SUITE_ARGS
# appended; not by default).
#
# Environment: OUT (log folder), FFTCONV_GPU_BUILD (build folder, default build-gpu),
# FFTCONV_GPU_STEPS, FFTCONV_BUILD_TARGETS (what the build step builds, e.g. "fftconv_gpu_tests
# fftconv-bench fftconv_torch" where a call's time is short; default everything), FFTCONV_LIMIT_<STEP> (seconds for that step; default unbounded; a stopped
# step keeps what it wrote: the driver and torch_baseline.py write their JSON as they go),
# FFTCONV_CTEST_ARGS, FFTCONV_BENCH_SUITES (CSV files, default data/shapes/*.csv),
# FFTCONV_BENCH_PASSES (default: fwd,dgrad,wgrad for suite.csv, fwd for the others),
# FFTCONV_BENCH_DTYPES (dtypes suite.csv runs in a second time, without the cuDNN baselines;
# default f16,bf16; empty: none), FFTCONV_GBENCH_DTYPES (default f32,f16,bf16), FFTCONV_BENCH_OPTS (default "--verify"; e.g. add "--gemm all --stages" for the GEMM
# sweep and stage times), FFTCONV_BENCH_ARGS (appended), FFTCONV_GBENCH_FILTER (default: Auto,
# cuDNN best strict and TF32: every provider is --benchmark_filter=.), FFTCONV_BASELINE (JSON the
# compare step checks against; default data/results/h200/gbench-<pass>.json, for fwd the
# driver's suite-forward.json while no Google Benchmark run is recorded),
# CMAKE_CUDA_ARCHITECTURES (default 90), FFTCONV_STB_INCLUDE_DIR (stb headers, where libstb-dev
# is not installed), FFTCONV_DEB_DIR (default .deb: Debian packages from scripts/fetch_debs.sh,
# unpacked with dpkg -x for the build where the machine lacks them: CLI11, nlohmann-json, Eigen),
# FFTCONV_WHL_DIR (default .whl: Python wheels installed with pip --no-index into $BUILD-whl and
# put on PYTHONPATH, e.g. kornia, kornia-rs and torchvision, fetched with pip download; and
# nvidia-cutlass, whose headers the build finds there for the implicit-GEMM path).
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
BUILD=${FFTCONV_GPU_BUILD:-build-gpu}
STEPS=${FFTCONV_GPU_STEPS:-build test bench dtypes gbench torch report blur main python example torchops filters}
# (pytest: the package's tests against the build tree instead of a pip install; not by default.)
JOBS=$(nproc 2>/dev/null || echo 4)
mkdir -p "$OUT"
status=0

[ -n "${FFTCONV_GPU_CHILD:-}" ] || {
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv 2>&1
  nvcc --version 2>&1 | tail -2
  echo "CXX=${CXX:-} $(${CXX:-c++} --version | head -1); python3 $(command -v python3)"
  cmake --version | head -1
  git rev-parse HEAD 2>/dev/null || true
  git status --porcelain 2>/dev/null | head -20 || true
} >"$OUT/env.txt" 2>&1
[ -n "${FFTCONV_GPU_CHILD:-}" ] || head -4 "$OUT/env.txt"

# Stages (';') and parallel groups ('|'): this script once per group, each on its own GPU.
if [[ "$STEPS" == *";"* || "$STEPS" == *"|"* ]]; then
  self="$PWD/scripts/gpu_check.sh"
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c "^GPU")
  [ "$ngpu" -ge 1 ] || ngpu=1
  IFS=';' read -ra stages <<<"$STEPS"
  s=0
  for stage in "${stages[@]}"; do
    IFS='|' read -ra groups <<<"$stage"
    pids=()
    for g in "${!groups[@]}"; do
      log="$OUT/stage$s-group$g.log"
      if [ "${#groups[@]}" -gt 1 ]; then
        CUDA_VISIBLE_DEVICES=$((g % ngpu)) FFTCONV_GPU_STEPS="${groups[$g]}" OUT="$OUT" FFTCONV_GPU_CHILD=1 "$self" >"$log" 2>&1 &
      else
        FFTCONV_GPU_STEPS="${groups[$g]}" OUT="$OUT" FFTCONV_GPU_CHILD=1 "$self" >"$log" 2>&1 &
      fi
      pids+=($!)
    done
    for g in "${!pids[@]}"; do
      wait "${pids[$g]}" || status=1
      echo "== stage $s group $g (${groups[$g]# }):"
      cat "$OUT/stage$s-group$g.log"
    done
    grep -q "^BUILD FAILED" "$OUT"/stage$s-group*.log && exit 1
    s=$((s + 1))
  done
  echo "gpu_check status $status"
  exit $status
fi

step() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# Runs a command under the step's limit (FFTCONV_LIMIT_<STEP>), if any.
limited() {
  local var="FFTCONV_LIMIT_$(echo "$1" | tr '[:lower:]' '[:upper:]')"
  shift
  if [ -n "${!var:-}" ]; then timeout "${!var}" "$@"; else "$@"; fi
}


# Header-only build dependencies the GPU machine lacks travel as .deb files (no network there).
DEB_DIR=${FFTCONV_DEB_DIR:-.deb}
if compgen -G "$DEB_DIR/*.deb" >/dev/null; then
  DEPS="$PWD/$BUILD-deps"
  mkdir -p "$DEPS"
  for deb in "$DEB_DIR"/*.deb; do dpkg -x "$deb" "$DEPS"; done
  export CMAKE_PREFIX_PATH="$DEPS/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
fi

# Python wheels the GPU machine lacks (kornia, torchvision for the blur benchmarks) travel as
# .whl files: installed into a directory of their own, first on PYTHONPATH.
WHL_DIR=${FFTCONV_WHL_DIR:-.whl}
if compgen -G "$WHL_DIR/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target "$PWD/$BUILD-whl" "$WHL_DIR"/*.whl \
    >"$OUT/wheels.log" 2>&1 || echo "wheels from $WHL_DIR did not install (wheels.log)"
  export PYTHONPATH="$PWD/$BUILD-whl${PYTHONPATH:+:$PYTHONPATH}"
fi

if step build; then
  # The python3 on PATH is the one with torch: the extension and the Python tests use it.
  if ! { cmake -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
           -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" \
           -DPython_EXECUTABLE="$(command -v python3)" -DPython3_EXECUTABLE="$(command -v python3)" \
           ${FFTCONV_STB_INCLUDE_DIR:+-DFFTCONV_STB_INCLUDE_DIR="$FFTCONV_STB_INCLUDE_DIR"} &&
         cmake --build "$BUILD" -j "$JOBS" ${FFTCONV_BUILD_TARGETS:+--target $FFTCONV_BUILD_TARGETS}; } \
         >"$OUT/build.log" 2>&1; then
    echo "BUILD FAILED"; grep -E "error|Error" "$OUT/build.log" | head -40; exit 1
  fi
  echo "build ok in $SECONDS s"; grep -E "fftconv: (Python|python3)" "$OUT/build.log"
fi

if step test; then
  # shellcheck disable=SC2086
  limited test ctest --test-dir "$BUILD" --output-on-failure -j 4 --timeout 1500 ${FFTCONV_CTEST_ARGS:-} \
    >"$OUT/ctest.log" 2>&1 || status=1
  grep -E "^\[ (sweep|row) " "$OUT/ctest.log" | sed 's/ (cudnn \(find\|heuristic\|graph\).*//' | head -80
  grep -E "tests passed|tests failed|Failed|\*\*\*|Skipped\)$" "$OUT/ctest.log" | head -40
fi

if step sanitize; then
  # compute-sanitizer's four tools over the GPU suites on small shapes (the sweeps and suite rows
  # are left out: they would take hours under the tools), each under FFTCONV_SANITIZE_TIMEOUT
  # seconds; a summary per tool in sanitizer.txt (data/results/h200/sanitizer.txt).
  # FFTCONV_SANITIZE_TOOLS, FFTCONV_SANITIZE_FILTER and FFTCONV_SANITIZE_FILTER_RACECHECK override.
  san=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
  filter=${FFTCONV_SANITIZE_FILTER:-"Runtime.*:Pointers.*:Stages.*:Tiled.SmallTilesMatchOracle:Tiled.TiledAndFullAgree:*KeptFilter.*:Memory.CApiKeepsAFilter:BackwardData.*:BackwardFilter.*:Backward.PassesAreAdjoint:Backward.BadCalls:Backward.GraphCapture:*GemmKernel.*"}
  {
    echo "compute-sanitizer over $BUILD/tests/fftconv_gpu_tests, $(date -u +%Y-%m-%dT%H:%MZ)"
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1
    "$san" --version 2>&1 | grep -i version
    echo "commit $(git rev-parse --short HEAD 2>/dev/null) $(git status --porcelain 2>/dev/null | grep -q . && echo '(with local changes)')"
    echo "gtest filter (racecheck: its own, below): $filter"
  } >"$OUT/sanitizer.txt"
  # racecheck is the slowest tool (every shared-memory access is tracked): the kernels that share
  # memory between threads, the GEMM tilings and the FFT stages, on their small tests.
  racecheck_filter="Stages.*:*GemmKernel.*:Tiled.SmallTilesMatchOracle:Runtime.ForwardIsDeterministic:BackwardData.KeptFilter"
  for tool in ${FFTCONV_SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}; do
    extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check full)
    tool_filter=$filter
    [ "$tool" = racecheck ] && tool_filter=${FFTCONV_SANITIZE_FILTER_RACECHECK:-$racecheck_filter}
    t0=$(date +%s)
    timeout "${FFTCONV_SANITIZE_TIMEOUT:-120}" "$san" --tool "$tool" "${extra[@]}" --error-exitcode 99 \
      --print-limit 50 "$BUILD/tests/fftconv_gpu_tests" --gtest_filter="$tool_filter" \
      >"$OUT/sanitize-$tool.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    t1=$(date +%s)
    {
      echo
      echo "== $tool (${extra[*]:-default options}): exit $rc, $((t1 - t0)) s$([ $rc -eq 124 ] && echo ', stopped by the time limit')"
      [ "$tool_filter" = "$filter" ] || echo "gtest filter: $tool_filter"
      grep -E "^\[==========\] [0-9]+ tests|^\[  PASSED  \]|^\[  FAILED  \]|^\[  SKIPPED \]" "$OUT/sanitize-$tool.log"
      grep -E "ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY" "$OUT/sanitize-$tool.log" | tail -3
    } >>"$OUT/sanitizer.txt"
  done
  cat "$OUT/sanitizer.txt"
fi
if step soak; then
  # 8 threads build, run and destroy plans of random shapes for every pass (tests/gpu/soak.cpp):
  # a pool of 64 cases per thread, cycled (the leak check: memory back to its level after the
  # first round), then new random cases for FFTCONV_SOAK_FRESH_SECONDS (default 60; every call
  # must succeed; the memory the code of newly used kernels takes is reported, bounded at
  # 256 MiB). Both in soak.txt.
  limited soak "$BUILD/tests/fftconv_soak" --threads 8 --seconds "${FFTCONV_SOAK_SECONDS:-120}" \
    --rounds 10 --pool 64 >"$OUT/soak.txt" 2>&1 || status=1
  echo >>"$OUT/soak.txt"
  limited soak "$BUILD/tests/fftconv_soak" --threads 8 --seconds "${FFTCONV_SOAK_FRESH_SECONDS:-60}" \
    --rounds 6 --pool 0 --max-growth-mib 256 >>"$OUT/soak.txt" 2>&1 || status=1
  grep -E "^(fftconv_soak|total|device memory in use:|soak|FAIL)" "$OUT/soak.txt"
fi

if step bench; then
  for suite in ${FFTCONV_BENCH_SUITES:-data/shapes/*.csv}; do
    base=$(basename "$suite" .csv)
    # shellcheck disable=SC2086
    passes=fwd
    [ "$base" = suite ] && passes=fwd,dgrad,wgrad
    limited bench "$BUILD/apps/fftconv-bench" --shapes "$suite" --pass "${FFTCONV_BENCH_PASSES:-$passes}" \
      ${FFTCONV_BENCH_OPTS:---verify} \
      --json "$OUT/bench-$base.json" ${FFTCONV_BENCH_ARGS:-} >"$OUT/bench-$base.txt" 2>&1 || status=1
    cat "$OUT/bench-$base.txt"
    # The suite in the other dtypes (fp32 math inside): accuracy and the fp16/bf16 times.
    dtypes=${FFTCONV_BENCH_DTYPES-f16,bf16}
    if [ "$base" = suite ] && [ -n "$dtypes" ]; then
      # shellcheck disable=SC2086
      limited bench "$BUILD/apps/fftconv-bench" --shapes "$suite" --pass "${FFTCONV_BENCH_PASSES:-$passes}" \
        --dtypes "$dtypes" --no-cudnn ${FFTCONV_BENCH_OPTS:---verify} --json "$OUT/bench-$base-dtypes.json" \
        ${FFTCONV_BENCH_ARGS:-} >"$OUT/bench-$base-dtypes.txt" 2>&1 || status=1
      cat "$OUT/bench-$base-dtypes.txt"
    fi
  done
fi
if step suite; then
  # The whole suite, every pass, verified, with the cuDNN baselines (the run behind
  # data/results/h200/suite.json), continued across calls: --resume keeps what the file
  # FFTCONV_SUITE_JSON holds (default in the build folder, which the machine keeps between calls;
  # a file carried in the tree continues it on a fresh machine of the same kind) and runs the
  # rest; --progress leaves in suite-progress.txt the part a stopped row-pass was in.
  # The rows FFTCONV_SUITE_FIND_ROWS names (a regex, default photo_blur_rgb_2k) take their cuDNN
  # baselines from cudnnFind alone: on photo_blur_rgb_2k's backward data the graph API's first
  # engine (eng2 k2=1 k3=0) ran about 147 s without returning (H100, h100/2026-12-05-fused run 10;
  # the cuDNN path now leaves the graph API out of that pass there), and its backward filter's
  # engines have not been run on that plane.
  SUITE_JSON=${FFTCONV_SUITE_JSON:-$PWD/$BUILD/suite-resume.json}
  find_rows=${FFTCONV_SUITE_FIND_ROWS-photo_blur_rgb_2k}
  mkdir -p "$BUILD"
  if [ -n "$find_rows" ]; then
    { head -1 data/shapes/suite.csv; tail -n +2 data/shapes/suite.csv | grep -Ev "^($find_rows)," || true; } \
      >"$BUILD/suite-graph.csv"
    { head -1 data/shapes/suite.csv; tail -n +2 data/shapes/suite.csv | grep -E "^($find_rows)," || true; } \
      >"$BUILD/suite-find.csv"
  else
    cp data/shapes/suite.csv "$BUILD/suite-graph.csv"
    head -1 data/shapes/suite.csv >"$BUILD/suite-find.csv"
  fi
  for part in graph find; do
    search=()
    [ "$part" = find ] && search=(--cudnn-search find)
    [ "$(wc -l <"$BUILD/suite-$part.csv")" -gt 1 ] || continue
    # shellcheck disable=SC2086
    limited suite "$BUILD/apps/fftconv-bench" --shapes "$BUILD/suite-$part.csv" --pass fwd,dgrad,wgrad \
      --verify --resume --progress "${search[@]}" --json "$SUITE_JSON" ${FFTCONV_SUITE_ARGS:-} \
      >>"$OUT/suite.txt" 2>>"$OUT/suite-progress.txt" || status=1
  done
  [ -f "$SUITE_JSON" ] && cp "$SUITE_JSON" "$OUT/suite.json"
  grep -E "^resuming|out of tolerance" "$OUT/suite.txt" | tail -2
  tail -3 "$OUT/suite-progress.txt"
  python3 - "$OUT/suite.json" data/shapes/suite.csv <<'PY' || echo "suite: no results yet"
import csv, json, sys
rows = json.load(open(sys.argv[1]))["rows"]
want = 3 * sum(1 for _ in csv.DictReader(open(sys.argv[2])))
done = len({(r["desc"], r["pass"]) for r in rows})
print(f"suite: {done} of {want} row-passes measured" + ("" if done >= want else " (run the step again)"))
PY
fi
if step dtypes; then
  # fp16 and bf16 against fp32, a row's dtypes timed in turn (--interleave: the same GPU state
  # for every dtype), each against fp32 round by round with its 95% interval, and (--control) a
  # second copy of the fp32 case against the first: the spread of two runs of the same work.
  # Then where the time goes: the forward stages with either dtype first.
  limited dtypes "$BUILD/apps/fftconv-bench" --shapes data/shapes/suite.csv --pass fwd,dgrad,wgrad \
    --dtypes f32,f16,bf16 --interleave --control --no-cudnn --verify --iters 200 \
    --json "$OUT/dtypes.json" >"$OUT/dtypes.txt" 2>&1 || status=1
  tail -1 "$OUT/dtypes.txt"
  scripts/bench_report "$OUT/dtypes.json" --shapes data/shapes/suite.csv --markdown "$OUT/dtypes.md" \
    >/dev/null && grep -E "^- (f16|bf16|fp32 copy)" "$OUT/dtypes.md"
  # The same as CUDA-graph replays: the device's time without the host's launch gaps, which
  # decide the rows of 20-50 us.
  limited dtypes "$BUILD/apps/fftconv-bench" --shapes data/shapes/suite.csv --pass fwd,dgrad,wgrad \
    --dtypes f32,f16,bf16 --interleave --control --no-cudnn --graph --iters 200 \
    --json "$OUT/dtypes-graph.json" >"$OUT/dtypes-graph.txt" 2>&1 || status=1
  scripts/bench_report "$OUT/dtypes-graph.json" --shapes data/shapes/suite.csv \
    --markdown "$OUT/dtypes-graph.md" >/dev/null && grep -E "^- (f16|bf16|fp32 copy)" "$OUT/dtypes-graph.md"
  for order in f32,f16 f16,f32; do
    limited dtypes "$BUILD/apps/fftconv-bench" --shapes data/shapes/suite.csv --dtypes "$order" \
      --stages --no-cudnn --json "$OUT/stages-$order.json" >"$OUT/stages-$order.txt" 2>&1 || status=1
  done
fi

if step gbench; then
  # One file per pass, so a stopped run keeps the passes it finished.
  for pass in fwd dgrad wgrad; do
    limited gbench "$BUILD/bench/fftconv_gbench" --passes "$pass" --dtypes "${FFTCONV_GBENCH_DTYPES:-f32,f16,bf16}" \
      --benchmark_filter="${FFTCONV_GBENCH_FILTER:-/(fftconv_auto|cudnn_fp32|cudnn_tf32)/}" \
      --benchmark_out="$OUT/gbench-$pass.json" --benchmark_out_format=json \
      >"$OUT/gbench-$pass.txt" 2>&1 || status=1
    tail -n +1 "$OUT/gbench-$pass.txt" | grep -E "/(fftconv_auto|cudnn_fp32)/" | cut -c1-120
  done
fi

if step torch; then
  limited torch python3 bench/torch_baseline.py --shapes data/shapes/suite.csv \
    --out "$OUT/torch.json" >"$OUT/torch.txt" 2>&1 || status=1
  tail -3 "$OUT/torch.txt"
fi

if step report; then
  results=$(ls "$OUT"/gbench-*.json "$OUT"/torch.json 2>/dev/null)
  if [ -n "$results" ]; then
    # shellcheck disable=SC2086
    scripts/bench_report $results --shapes data/shapes/suite.csv --markdown "$OUT/report.md" \
      --chart "$OUT/report.png" || status=1
    # Against the recorded H200 baseline of each pass: its Google Benchmark run where one is
    # recorded, else (forward) the driver's recorded suite run.
    for pass in fwd dgrad wgrad; do
      old=data/results/h200/gbench-$pass.json
      [ -f "$old" ] || { [ $pass = fwd ] && old=data/results/h200/suite-forward.json; }
      [ -n "${FFTCONV_BASELINE:-}" ] && old=$FFTCONV_BASELINE
      if [ -f "$old" ] && [ -f "$OUT/gbench-$pass.json" ]; then
        scripts/bench_compare "$old" "$OUT/gbench-$pass.json" | tee -a "$OUT/compare.txt" || true
      fi
    done
  fi
fi

if step blur; then
  # The README's photo timing: a 2048x2048 RGB photo, 45x45 Gaussian, median of 20, on the GPU
  # and on the CPU backend (all cores); then the shipped photos in one batch, and the landmark
  # example on both backends.
  if [ -x "$BUILD/apps/fftconv-blur" ]; then
    "$BUILD/apps/fftconv-make-images" --upscale data/images/astronaut.png "$OUT/astronaut_2048.png" \
      2048x2048 || status=1
    for dev in gpu cpu; do
      "$BUILD/apps/fftconv-blur" --device $dev --repeat 20 --out "$OUT/blur-2048-$dev" \
        "$OUT/astronaut_2048.png" >"$OUT/blur-2048-$dev.txt" 2>&1 || status=1
      cat "$OUT/blur-2048-$dev.txt"
    done
    "$BUILD/apps/fftconv-blur" --device gpu --repeat 20 --out "$OUT/blur-photos" data/images \
      >"$OUT/blur-photos.txt" 2>&1 || status=1
    cat "$OUT/blur-photos.txt"
  else
    echo "fftconv-blur was not built (no stb headers: install libstb-dev or set FFTCONV_STB_INCLUDE_DIR)"
  fi
  for dev in gpu cpu; do
    "$BUILD/apps/landmark_heatmaps" --device $dev --iters 20 >"$OUT/landmarks-$dev.txt" 2>&1 || status=1
    cat "$OUT/landmarks-$dev.txt"
  done
fi
if step main; then
  FFTCONV_BUILD="$BUILD" limited main scripts/main_job.sh >"$OUT/main-job.txt" 2>&1 || status=1
  cat "$OUT/main-job.txt"
fi

if step python; then
  # The package as a user installs it (pip over scikit-build-core, against this python3's torch),
  # then its tests against that install; the extension's load dependencies and exports first.
  PIP_TARGET="$PWD/$BUILD-pip"
  rm -rf "$PIP_TARGET"
  if limited python python3 -m pip install --no-build-isolation --no-deps --no-cache-dir \
       --target "$PIP_TARGET" . >"$OUT/pip-install.log" 2>&1; then
    ext=$(ls "$PIP_TARGET"/fftconv/_C*.so)
    { ldd "$ext"; nm -D --defined-only "$ext"; } >"$OUT/extension.txt" 2>&1
    grep -E "libstdc|not found" "$OUT/extension.txt"
    PYTHONPATH="$PIP_TARGET" FFTCONV_LIBRARY="$PWD/$BUILD/lib/libfftconv.so" PYTHONDONTWRITEBYTECODE=1 \
      limited python python3 -m pytest -v -rs -p no:cacheprovider python/tests \
      >"$OUT/pytest-torch.txt" 2>&1 || status=1
    tail -15 "$OUT/pytest-torch.txt"
  else
    status=1; echo "pip install failed"; tail -30 "$OUT/pip-install.log"
  fi
fi
if step pytest; then
  # The package's tests against the extension of the build tree (faster than the python step).
  PYTHONPATH="$PWD/$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" FFTCONV_LIBRARY="$PWD/$BUILD/lib/libfftconv.so" \
    PYTHONDONTWRITEBYTECODE=1 limited pytest python3 -m pytest -v -rs -p no:cacheprovider python/tests \
    >"$OUT/pytest-torch.txt" 2>&1 || status=1
  tail -4 "$OUT/pytest-torch.txt"
fi
# The package from the build tree (the python step's install where it ran).
PKG_PATH="$PWD/$BUILD/python"
[ -d "$PWD/$BUILD-pip/fftconv" ] && PKG_PATH="$PWD/$BUILD-pip"
if step example; then
  PYTHONPATH="$PKG_PATH" limited example python3 apps/examples/landmark_train.py \
    --json "$OUT/landmark-train.json" >"$OUT/landmark-train.txt" 2>&1 || status=1
  tail -25 "$OUT/landmark-train.txt"
fi
if step torchops; then
  # Where the host time of a forward call goes (the engine's C API call against each layer
  # above it), then the interleaved benchmark.
  PYTHONPATH="$PKG_PATH" limited torchops python3 bench/torch_host_cost.py \
    --library "$BUILD/lib/libfftconv.so" --filter "${FFTCONV_HOST_COST_ROWS:-seed3|landmark|replknet|slak}" \
    --out "$OUT/host-cost.json" >"$OUT/host-cost.txt" 2>&1 || status=1
  cat "$OUT/host-cost.txt"
  PYTHONPATH="$PKG_PATH" limited torchops python3 bench/torch_ops.py --shapes data/shapes/suite.csv \
    ${FFTCONV_TORCHOPS_ARGS:---cpp-bench $BUILD/apps/fftconv-bench} \
    --out "$OUT/torch-ops.json" >"$OUT/torch-ops.txt" 2>&1 || status=1
  tail -60 "$OUT/torch-ops.txt"
fi
if step filters; then
  # Gaussian blurs against kornia, torchvision and the dense F.conv2d (bench/torch_filters.py).
  PYTHONPATH="$PKG_PATH${PYTHONPATH:+:$PYTHONPATH}" limited filters python3 bench/torch_filters.py \
    ${FFTCONV_FILTERS_ARGS:-} --out "$OUT/filters.json" >"$OUT/filters.txt" 2>&1 || status=1
  cat "$OUT/filters.txt"
fi
if step borders; then
  # Border modes (ConvDesc::border): correctness on the device, then the bordered rows' times
  # (cuDNN's baseline plans the bordered problem too: what F.pad and a convolution cost).
  limited borders "$BUILD/tests/fftconv_gpu_tests" \
    --gtest_filter='Border*:Separable*:DeviceReference.Backward*HostOracle:Tuning*' \
    >"$OUT/borders-tests.txt" 2>&1 || status=1
  grep -E "^\[ (sweep|oracle) |OK \]|FAILED|PASSED|SKIPPED" "$OUT/borders-tests.txt" | head -60
  PYTHONPATH="$PKG_PATH${PYTHONPATH:+:$PYTHONPATH}" limited borders python3 -m pytest -q -rs \
    -p no:cacheprovider python/tests/test_padding_mode.py python/tests/test_filters.py \
    python/tests/test_nn.py >"$OUT/borders-pytest.txt" 2>&1 || status=1
  tail -5 "$OUT/borders-pytest.txt"
  # shellcheck disable=SC2086
  limited borders "$BUILD/apps/fftconv-bench" --shapes bench/borders.csv --pass fwd,dgrad,wgrad \
    --verify --json "$OUT/borders.json" ${FFTCONV_BORDERS_ARGS:-} >"$OUT/borders-bench.txt" 2>&1 || status=1
  cat "$OUT/borders-bench.txt"
  # shellcheck disable=SC2086
  limited borders "$BUILD/apps/fftconv-bench" --shapes bench/borders.csv --pass fwd --gaussian 7 \
    --verify --json "$OUT/borders-gaussian.json" ${FFTCONV_BORDERS_ARGS:-} \
    >"$OUT/borders-gaussian.txt" 2>&1 || status=1
  cat "$OUT/borders-gaussian.txt"
fi
if step cudnn; then
  # CudnnSearch::kGraph: correctness first (the graph plans, and the legacy sweeps, which share
  # the bias stage), then both searches on the same rows.
  limited cudnn "$BUILD/tests/fftconv_gpu_tests" \
    --gtest_filter='CudnnGraph.*:ForwardSweep.Cudnn*:BackwardSweep.Cudnn*:Runtime.Cudnn*' \
    >"$OUT/cudnn-tests.txt" 2>&1 || status=1
  grep -E "^\[ sweep |OK \]|FAILED|PASSED|SKIPPED" "$OUT/cudnn-tests.txt" | head -40
  cudnn_rows="$OUT/cudnn-rows.csv"
  if [ -z "${FFTCONV_CUDNN_SHAPES:-}" ]; then
    { cat bench/parity_small.csv; grep '^seed1_' data/shapes/suite.csv | cut -d, -f1-16; } >"$cudnn_rows"
  fi
  for search in ${FFTCONV_CUDNN_SEARCHES:-find graph auto}; do
    # shellcheck disable=SC2086
    limited cudnn "$BUILD/apps/fftconv-bench" --shapes "${FFTCONV_CUDNN_SHAPES:-$cudnn_rows}" \
      --algo cudnn --cudnn-search "$search" --pass fwd,dgrad,wgrad --no-cudnn --verify \
      --json "$OUT/cudnn-$search.json" ${FFTCONV_CUDNN_ARGS:-} >"$OUT/cudnn-$search.txt" 2>&1 || status=1
    cat "$OUT/cudnn-$search.txt"
  done
fi
if step direct; then
  limited direct "$BUILD/tests/fftconv_gpu_tests" --gtest_filter='Direct*' \
    >"$OUT/direct-tests.txt" 2>&1 || status=1
  grep -E "^\[ sweep |OK \]|FAILED|PASSED|SKIPPED" "$OUT/direct-tests.txt" | head -20
  direct_rows="$OUT/direct-rows.csv"
  { head -1 data/shapes/suite.csv
    grep -E '^(seed3_|landmark_batch64,|odd_rect|dilated2)' data/shapes/suite.csv; } >"$direct_rows"
  for algo in direct fft auto; do
    # shellcheck disable=SC2086
    limited direct "$BUILD/apps/fftconv-bench" --shapes "$direct_rows" --algo "$algo" \
      --pass fwd,dgrad,wgrad --verify --no-cudnn --json "$OUT/direct-$algo.json" ${FFTCONV_DIRECT_ARGS:-} \
      >"$OUT/direct-$algo.txt" 2>&1 || status=1
    cat "$OUT/direct-$algo.txt"
  done
  # The backward filter's two layouts on the same rows, in turns taps rows taps rows (plans take
  # the rows layout where it applies, the taps layout with FFTCONV_DIRECT_WGRAD=taps;
  # lib/direct/direct_conv.h).
  for turn in 1 2; do
    for layout in taps rows; do
      # shellcheck disable=SC2086
      limited direct env FFTCONV_DIRECT_WGRAD="$layout" "$BUILD/apps/fftconv-bench" \
        --shapes "$direct_rows" --algo direct --pass wgrad --verify --no-cudnn \
        --json "$OUT/direct-wgrad-$turn-$layout.json" ${FFTCONV_DIRECT_ARGS:-} \
        >"$OUT/direct-wgrad-$turn-$layout.txt" 2>&1 || status=1
      echo "== backward filter, $layout layout, turn $turn"
      cat "$OUT/direct-wgrad-$turn-$layout.txt"
    done
  done
fi
if step parity; then
  # Auto against F.conv2d on the suite and the small kernels (issue: Auto never loses).
  PYTHONPATH="$PKG_PATH${PYTHONPATH:+:$PYTHONPATH}" limited parity python3 bench/torch_ops.py \
    --shapes ${FFTCONV_PARITY_SHAPES:-data/shapes/suite.csv bench/parity_small.csv} --passes fwd,dgrad,wgrad \
    --dtypes f32,f16,bf16 --host-calls 0 ${FFTCONV_PARITY_ARGS:-} --out "$OUT/parity-ops.json" \
    >"$OUT/parity-ops.txt" 2>&1 || status=1
  python3 bench/parity.py "$OUT/parity-ops.json" --out "$OUT/parity.json" \
    --markdown "$OUT/parity.md" | tee "$OUT/parity.txt" || status=1
fi
if step callbacks; then
  for mode in off on; do
    flag=""
    [ "$mode" = on ] && flag="--callbacks"
    # shellcheck disable=SC2086
    limited callbacks "$BUILD/apps/fftconv-bench" --shapes data/shapes/suite.csv --algo fft \
      --pass fwd,dgrad,wgrad --verify --no-cudnn $flag --json "$OUT/callbacks-$mode.json" \
      >"$OUT/callbacks-$mode.txt" 2>&1 || status=1
    "$BUILD/apps/fftconv-bench" --shapes data/shapes/suite.csv --algo fft --stages --no-cudnn \
      $flag >"$OUT/callbacks-$mode-stages.txt" 2>&1 || status=1
    grep -E "out of tolerance" "$OUT/callbacks-$mode.txt"
  done
fi
if step spectrum; then
  # shellcheck disable=SC2086
  limited spectrum "$BUILD/apps/fftconv-bench" --shapes data/shapes/suite.csv --pass fwd,dgrad \
    --shared-spectrum --verify --no-cudnn ${FFTCONV_SPECTRUM_ARGS:-} --json "$OUT/spectrum.json" \
    >"$OUT/spectrum.txt" 2>&1 || status=1
  grep -E "out of tolerance" "$OUT/spectrum.txt"
fi
if step fused; then
  # The fused small-plane path: its GPU tests, racecheck over its kernels' barriers, and the
  # small-plane suite rows forced fused and staged, and under Auto, every pass (back-to-back,
  # cold and host times; FFTCONV_FUSED_PASSES picks them): fused-*.txt, fused-*.json.
  limited fused "$BUILD/tests/fftconv_gpu_tests" --gtest_filter='Fused*' >"$OUT/fused-tests.txt" 2>&1 ||
    status=1
  grep -E "^\[ sweep|FAILED|PASSED" "$OUT/fused-tests.txt" | head -20
  san=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
  limited fused "$san" --tool racecheck --error-exitcode 99 "$BUILD/tests/fftconv_gpu_tests" \
    --gtest_filter='Fused.CapturesInACudaGraph:Fused.KeptFilterMatchesPerCall:Fused.EveryCoveredSize:Fused.BackwardFilterSlicesSumInOrder' \
    >"$OUT/fused-racecheck.txt" 2>&1 || status=1
  grep -E "RACECHECK SUMMARY|PASSED|FAILED" "$OUT/fused-racecheck.txt" | head -5
  small="$OUT/fused-rows.csv"
  grep -E "^(name|seed3_landmark_same|landmark_batch64|landmark_heatmaps_dw68|replknet_dw31_14|replknet_dw31_56|slak_dw51_28)," \
    data/shapes/suite.csv >"$small"
  for algo in ${FFTCONV_FUSED_ALGOS:-fft_fused fft auto}; do
    # shellcheck disable=SC2086
    limited fused "$BUILD/apps/fftconv-bench" --shapes "$small" --pass "${FFTCONV_FUSED_PASSES:-fwd,dgrad,wgrad}" --algo "$algo" \
      --verify --no-cudnn ${FFTCONV_FUSED_ARGS:-} --json "$OUT/fused-$algo.json" \
      >"$OUT/fused-$algo.txt" 2>&1 || status=1
    echo "== --algo $algo"; cat "$OUT/fused-$algo.txt"
  done
  # The sizes between the powers of two against the next power of two, forced, on the same
  # machine (replknet_dw31_56 runs 72x72 by default, slak_dw51_28 56x56), and the heatmap rows'
  # tiles (2 x 2 of 96x96 by default) against the whole 128x128 plane: fused-pow2-*.
  for pair in replknet_dw31_56:128 slak_dw51_28:64 landmark_batch64:128 seed3_landmark_same:128; do
    row=${pair%%:*} f=${pair##*:}
    grep -E "^(name|$row)," data/shapes/suite.csv >"$OUT/fused-pow2-$row.csv"
    # shellcheck disable=SC2086
    limited fused "$BUILD/apps/fftconv-bench" --shapes "$OUT/fused-pow2-$row.csv" \
      --pass "${FFTCONV_FUSED_PASSES:-fwd,dgrad,wgrad}" --algo fft_fused --fft "${f}x$f" --verify \
      --no-cudnn ${FFTCONV_FUSED_ARGS:-} --json "$OUT/fused-pow2-$row.json" \
      >"$OUT/fused-pow2-$row.txt" 2>&1 || status=1
    echo "== --algo fft_fused --fft ${f}x$f"; cat "$OUT/fused-pow2-$row.txt"
  done
fi
if step ownfft; then
  # The own plane kernels (Options::own_fft) against pad + cuFFT + clip: their GPU tests,
  # racecheck over their barriers, then the suite rows whose FFT sizes they take, every pass,
  # full-image FFT with and without --own-fft (back-to-back, cold and host times), and the
  # forward pass's --stages: ownfft-*.txt, ownfft-*.json; FFTCONV_OWNFFT_ARGS appended.
  limited ownfft "$BUILD/tests/fftconv_gpu_tests" --gtest_filter='OwnFft*' \
    >"$OUT/ownfft-tests.txt" 2>&1 || status=1
  grep -E "OK \]|FAILED|PASSED|SKIPPED|Failure" "$OUT/ownfft-tests.txt" | head -20
  san=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
  limited ownfft "$san" --tool racecheck --error-exitcode 99 "$BUILD/tests/fftconv_gpu_tests" \
    --gtest_filter='OwnFft.StagesMatchCufftAndTheClip' >"$OUT/ownfft-racecheck.txt" 2>&1 || status=1
  grep -E "RACECHECK SUMMARY|PASSED|FAILED" "$OUT/ownfft-racecheck.txt" | head -5
  own_rows="$OUT/ownfft-rows.csv"
  grep -E "^(name|seed3_landmark_same|landmark_|multichannel_|replknet_|slak_|odd_rect|strided2|dilated2)" \
    data/shapes/suite.csv >"$own_rows"
  for mode in on off; do
    # The pad + cuFFT + clip path was verified on these rows before; the own kernels are checked
    # against the fp64 oracle on every row and pass.
    flag="" verify=""
    [ "$mode" = on ] && flag="--own-fft" verify="--verify"
    # shellcheck disable=SC2086
    limited ownfft "$BUILD/apps/fftconv-bench" --shapes "$own_rows" --algo fft \
      --pass fwd,dgrad,wgrad $verify --no-cudnn $flag ${FFTCONV_OWNFFT_ARGS:-} \
      --json "$OUT/ownfft-$mode.json" >"$OUT/ownfft-$mode.txt" 2>&1 || status=1
    # shellcheck disable=SC2086
    limited ownfft "$BUILD/apps/fftconv-bench" --shapes "$own_rows" --algo fft --stages \
      --no-cudnn $flag >"$OUT/ownfft-$mode-stages.txt" 2>&1 || status=1
    echo "== own_fft $mode"; cat "$OUT/ownfft-$mode.txt"
  done
fi
if step ab; then
  # Two builds of the bench driver timed against each other: this build ($BUILD, step build)
  # and $BUILD-ab configured with FFTCONV_AB_DEFINES added to the C++ and CUDA flags (e.g.
  # "-DFFTCONV_FUSED_WGRAD_SMEM_MAX_F=32"), on FFTCONV_AB_ROWS (a regex of suite.csv's row names;
  # default the small-plane rows) with FFTCONV_AB_ARGS (default "--pass wgrad --algo fft_fused"),
  # in turns A B A B (two processes a side: the spread between turns of one side is the noise):
  # ab-<turn>-<side>.txt and .json.
  if [ -z "${FFTCONV_AB_DEFINES:-}" ]; then
    echo "step ab: FFTCONV_AB_DEFINES is empty"; status=1
  elif ! { cmake -B "$BUILD-ab" -DCMAKE_BUILD_TYPE=Release \
             -DCMAKE_CUDA_ARCHITECTURES="${CMAKE_CUDA_ARCHITECTURES:-90}" \
             -DCMAKE_CXX_FLAGS="$FFTCONV_AB_DEFINES" -DCMAKE_CUDA_FLAGS="$FFTCONV_AB_DEFINES" \
             -DPython_EXECUTABLE="$(command -v python3)" -DPython3_EXECUTABLE="$(command -v python3)" &&
           cmake --build "$BUILD-ab" -j "$JOBS" --target fftconv-bench; } >"$OUT/ab-build.log" 2>&1; then
    echo "AB BUILD FAILED"; grep -E "error|Error" "$OUT/ab-build.log" | head -20; status=1
  else
    ab_rows="$OUT/ab-rows.csv"
    { head -1 data/shapes/suite.csv
      grep -E "^(${FFTCONV_AB_ROWS:-seed3_landmark_same|landmark_batch64|landmark_heatmaps_dw68|replknet_dw31_14|replknet_dw31_56|slak_dw51_28}),"  \
        data/shapes/suite.csv; } >"$ab_rows"
    for turn in 1 2; do
      for side in A B; do
        bin="$BUILD/apps/fftconv-bench"
        [ "$side" = B ] && bin="$BUILD-ab/apps/fftconv-bench"
        # shellcheck disable=SC2086
        limited ab "$bin" --shapes "$ab_rows" ${FFTCONV_AB_ARGS:---pass wgrad --algo fft_fused} \
          --verify --no-cudnn --json "$OUT/ab-$turn-$side.json" >"$OUT/ab-$turn-$side.txt" 2>&1 ||
          status=1
        echo "== turn $turn, side $side ($side = B: $FFTCONV_AB_DEFINES)"
        grep -vE "^  kept filter" "$OUT/ab-$turn-$side.txt"
      done
    done
  fi
fi
echo "gpu_check status $status"
exit $status
