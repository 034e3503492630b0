#!/usr/bin/env bash
# The README's main job, after the build: blurs the shipped photos with fftconv-blur (on the GPU
# when there is one, else on the CPU backend), times a 2048x2048 RGB photo with the 45x45
# Gaussian, runs the landmark-heatmap example, and on a GPU machine the verified benchmark of the
# shape suite against cuDNN. Works on a machine without a GPU.
#
#   scripts/main_job.sh            # build folder "build", results in build/main-job/
#
# Environment: FFTCONV_BUILD (build folder, default build), FFTCONV_CPU_THREADS (CPU threads).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${FFTCONV_BUILD:-build}
OUT="$BUILD/main-job"
mkdir -p "$OUT"

if [ -x "$BUILD/apps/fftconv-blur" ]; then
  echo "== fftconv-blur: the shipped photos, 45x45 Gaussian, mirrored borders -> $OUT/photos"
  "$BUILD/apps/fftconv-blur" --device auto --out "$OUT/photos" data/images

  echo "== fftconv-blur: a 2048x2048 RGB photo (data/images/astronaut.png upscaled), median of 10"
  "$BUILD/apps/fftconv-make-images" --upscale data/images/astronaut.png "$OUT/astronaut_2048.png" 2048x2048
  "$BUILD/apps/fftconv-blur" --device auto --repeat 10 --out "$OUT/photo-2048" "$OUT/astronaut_2048.png"
else
  echo "== fftconv-blur was not built: stb's headers were not found (install libstb-dev, or point" \
       "STB_ROOT / -DFFTCONV_STB_INCLUDE_DIR at stb_image.h and stb_image_write.h); photos skipped"
fi

echo "== landmark heatmaps: 32 faces x 68 landmarks, 96x96, 45x45 Gaussian"
"$BUILD/apps/landmark_heatmaps" --device auto | tee "$OUT/landmarks.txt"

if grep -q " on gpu$" "$OUT/landmarks.txt"; then
  echo "== fftconv-bench: the shape suite on the GPU, timed against cuDNN, verified"
  "$BUILD/apps/fftconv-bench" --shapes data/shapes/suite.csv --verify
else
  echo "== no CUDA device: the GPU benchmark (fftconv-bench --shapes data/shapes/suite.csv --verify) is skipped"
fi
