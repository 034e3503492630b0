#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ and runs each for SECONDS (default 60) on a copy of its
# seed corpus (fuzz/corpus/<target>/ is never modified), with its dictionary where there is one.
#
#   fuzz/run.sh [SECONDS [TARGET...]]     # targets: conv_desc shapes tuning_cache bench_args
#                                         #          blur_args tune_args (default: all)
#
# Prints per target the executions, the corpus size and libFuzzer's exit status; exits 1 when a
# target crashed, leaked, failed a check or hung (its input is kept under <build>/artifacts/).
# Environment: FFTCONV_FUZZ_BUILD (build folder, default build-fuzz), FFTCONV_FUZZ_CXX (default
# clang++-14), FFTCONV_FUZZ_RUNS (stop a target after that many executions, if sooner),
# FFTCONV_FUZZ_KEEP=1 keeps the grown corpora (printed), ASAN_OPTIONS (default
# malloc_context_size=0: no allocation stacks in reports, about three times the executions of
# the command-line targets; rerun a crashing input without it for the full report).
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
all_targets=(conv_desc shapes tuning_cache bench_args blur_args tune_args)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
case "$seconds" in
  '' | *[!0-9]*) echo "run.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;;
esac

build=${FFTCONV_FUZZ_BUILD:-build-fuzz}
cxx=${FFTCONV_FUZZ_CXX:-clang++-14}
export PATH="${CUDA_HOME:-/usr/local/cuda}/bin:$PATH"  # FindCUDAToolkit looks for nvcc
export ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=0}

mkdir -p "$build"
cmake -S fuzz -B "$build" -DCMAKE_CXX_COMPILER="$cxx" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  echo "run.sh: configuring fuzz/ failed" >&2
  exit 2
}
cmake --build "$build" -j2 || { echo "run.sh: building fuzz/ failed" >&2; exit 2; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/fftconv-fuzz.XXXXXX")
if [ "${FFTCONV_FUZZ_KEEP:-0}" != 1 ]; then trap 'rm -rf "$scratch"' EXIT; fi
mkdir -p "$build/artifacts" "$build/logs"

failed=0
printf '%-13s %12s %8s %8s %14s %s\n' target executions seconds exec/s "corpus" status
for t in "${targets[@]}"; do
  exe="$build/fuzz_$t"
  if [ ! -x "$exe" ]; then
    echo "run.sh: no target '$t' (targets: ${all_targets[*]})" >&2
    failed=1
    continue
  fi
  corpus="$scratch/$t"
  mkdir -p "$corpus" "$build/artifacts/$t"
  cp fuzz/corpus/"$t"/* "$corpus"/
  seeds=$(ls "$corpus" | wc -l)
  extra=()
  [ -f "fuzz/$t.dict" ] && extra+=(-dict="fuzz/$t.dict")
  [ -n "${FFTCONV_FUZZ_RUNS:-}" ] && extra+=(-runs="$FFTCONV_FUZZ_RUNS")
  log="$build/logs/$t.log"
  start=$(date +%s)
  # -close_fd_mask=3: the targets' own output (help, error messages) goes nowhere; libFuzzer's
  # and the sanitizers' reports still reach the log. -timeout: an input running 25 s is a hang.
  "$exe" "${extra[@]}" -max_total_time="$seconds" -timeout=25 -close_fd_mask=3 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/$t/" "$corpus" >"$log" 2>&1
  status=$?
  elapsed=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  [ -n "$execs" ] || execs=0
  rate=$((elapsed > 0 ? execs / elapsed : execs))
  printf '%-13s %12s %8s %8s %14s %s\n' "$t" "$execs" "$elapsed" "$rate" \
    "$seeds->$(ls "$corpus" | wc -l)" "$status"
  if [ "$status" -ne 0 ]; then
    failed=1
    echo "---- $t failed (exit status $status); the end of $log:" >&2
    tail -n 40 "$log" >&2
    echo "---- artifacts: $(ls "$build/artifacts/$t" | sed "s|^|$build/artifacts/$t/|" | tr '\n' ' ')" >&2
  fi
done
[ "${FFTCONV_FUZZ_KEEP:-0}" = 1 ] && echo "grown corpora: $scratch"
exit "$failed"
