#!/usr/bin/env bash
# One bounded GPU-machine session for recorded results: build, the backward-pass tests, the
# verified driver on suite.csv (all passes), the Google Benchmark suite (fftconv Auto and cuDNN
# best, per pass) and the PyTorch baseline, each under its own time limit, outputs under $OUT.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
BUILD=${FFTCONV_GPU_BUILD:-build-gpu}
mkdir -p "$OUT"
{ cmake -B "$BUILD" -DCMAKE_BUILD_TYPE=Release && cmake --build "$BUILD" -j "$(nproc)"; } >"$OUT/build.log" 2>&1 ||
  { grep -E "error|Error" "$OUT/build.log" | head -30; exit 1; }
echo "build ok $(date -u +%T)"
timeout "${CTEST_LIMIT:-200}" ctest --test-dir "$BUILD" -j 4 -R "${CTEST_REGEX:-Backward|DeviceReference}" \
  --output-on-failure >"$OUT/ctest.log" 2>&1
grep -E "^\[ (sweep|row) |tests passed|tests failed|Failed" "$OUT/ctest.log" | cut -c1-200 | head -70
echo "ctest done $(date -u +%T)"
timeout "${BENCH_LIMIT:-170}" "$BUILD/apps/fftconv-bench" --shapes data/shapes/suite.csv \
  --pass fwd,dgrad,wgrad --verify --json "$OUT/suite-passes.json" >"$OUT/suite-passes.txt" 2>&1
cut -c1-230 "$OUT/suite-passes.txt"
echo "bench done $(date -u +%T)"
for pass in fwd dgrad wgrad; do
  timeout "${GBENCH_LIMIT:-50}" "$BUILD/bench/fftconv_gbench" --passes "$pass" \
    --benchmark_filter='/(fftconv_auto|cudnn_fp32|cudnn_tf32)$' \
    --benchmark_out="$OUT/gbench-$pass.json" --benchmark_out_format=json >/dev/null 2>&1
  echo "gbench $pass rc $? $(date -u +%T)"
done
timeout "${TORCH_LIMIT:-90}" python3 bench/torch_baseline.py --shapes data/shapes/suite.csv \
  --out "$OUT/torch.json" >"$OUT/torch.txt" 2>&1
echo "torch rc $? $(date -u +%T)"; tail -3 "$OUT/torch.txt"
