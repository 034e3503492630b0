#!/bin/bash
# device run 4: main built on the device (extension, library, bench driver), then PyTorch-level
# host cost, interleaved ops against F.conv2d on the small-plane rows, Gaussian blurs against kornia.
R=$(cd "$(dirname "$0")/.." && pwd)
cd "$R"
O=/tmp/o4; rm -rf $O; mkdir -p $O
fin() { tar czf "$OUT/all.tgz" -C /tmp o4; }
trap fin EXIT
S=$(date +%s)
OUT=$O FFTCONV_GPU_BUILD=build-gpu FFTCONV_BUILD_TARGETS="fftconv fftconv_torch fftconv-bench" \
  FFTCONV_GPU_STEPS="build torchops filters" FFTCONV_LIMIT_TORCHOPS=110 FFTCONV_LIMIT_FILTERS=80 \
  FFTCONV_TORCHOPS_ARGS="--filter ^(seed3_landmark_same|landmark_batch64|slak_dw51_28)\$ --dtypes f32,f16 --passes fwd,dgrad,wgrad --iters 20 --host-calls 1000" \
  FFTCONV_FILTERS_ARGS="--no-cpu --rows landmark_batch64,landmark_dw68,photo_rgb_2k --cold-iters 10" \
  timeout 430 bash scripts/gpu_check.sh > $O/gpu_check.txt 2>&1
echo "rc=$? $(( $(date +%s) - S )) s" | tee -a $O/gpu_check.txt
tail -50 $O/gpu_check.txt
