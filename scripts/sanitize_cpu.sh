#!/usr/bin/env bash
# The CPU test suites under sanitizers, as CI runs them:
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (no recovery: the first report fails the
#         test) over every CPU suite: descriptors, argument checks, heuristics, the C API, the
#         tuning cache (its multi-process test included), the host backend and fftconv-blur;
#   tsan  ThreadSanitizer over the threaded ones: the host backend's worker threads, the tuning
#         cache shared by threads and processes, plans shared by threads.
#
#   scripts/sanitize_cpu.sh [asan] [tsan]        # both by default; build dirs build-asan, build-tsan
#
# GPU tests are not built (compute-sanitizer covers the device side); without a GPU the CUDA
# runtime only answers "no device". Environment: FFTCONV_SANITIZE_JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
KINDS=${*:-asan tsan}
JOBS=${FFTCONV_SANITIZE_JOBS:-$(nproc)}
status=0

build() {  # build <dir> <flags> <targets...>: the targets this configuration has
  local dir=$1 flags=$2 have t f cuda_flags="" wanted=()
  shift 2
  for f in $flags; do cuda_flags+=" -Xcompiler=$f"; done  # nvcc splits -Xcompiler values at commas
  cmake -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFFTCONV_BUILD_PYTHON=OFF \
    -DFFTCONV_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CUDA_FLAGS="$cuda_flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" >"$dir.log" 2>&1 ||
    { echo "sanitizer configure $dir failed:"; tail -30 "$dir.log"; exit 1; }
  have=$(cmake --build "$dir" --target help)
  for t in "$@"; do grep -q "\.\.\. $t\$" <<<"$have" && wanted+=("$t"); done
  cmake --build "$dir" -j "$JOBS" --target "${wanted[@]}" >>"$dir.log" 2>&1 ||
    { echo "sanitizer build $dir failed:"; tail -30 "$dir.log"; exit 1; }
}

run_suites() {  # run_suites <dir> <test executables...>: each one directly (ctest would also
  local dir=$1 t         # list the GPU suites, which are not built here)
  shift
  for t in "$@"; do
    [ -x "$dir/tests/$t" ] || continue  # fftconv_app_tests needs the stb headers
    echo "== $dir: $t"
    "$dir/tests/$t" --gtest_brief=1 || return 1
  done
}

for kind in $KINDS; do
  case $kind in
    asan)
      build build-asan "-fsanitize=address -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
        fftconv_cpu_tests fftconv_host_tests fftconv_app_tests fftconv-blur fftconv-make-images
      # detect_leaks: the tests' own allocations are all freed; the CUDA runtime's one-time
      # initialisation is suppressed by name (tests/sanitizers/lsan.supp).
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1 \
      LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_suites build-asan fftconv_cpu_tests fftconv_host_tests fftconv_app_tests || status=1
      ;;
    tsan)
      build build-tsan "-fsanitize=thread -fno-omit-frame-pointer" fftconv_cpu_tests fftconv_host_tests
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/sanitizers/tsan.supp \
        GTEST_FILTER="HostBackend*:HostBackward*:TuningCache*:Registry*:Wisdom*" \
        run_suites build-tsan fftconv_cpu_tests fftconv_host_tests || status=1
      ;;
    *) echo "unknown sanitizer '$kind' (asan, tsan)"; exit 2 ;;
  esac
done
echo "sanitize_cpu status $status"
exit $status
