#!/bin/bash
# device run 9 (2026-12-07b): G = wgrad-gemm merged with main 99a8b7c (fused rows-sum rule on by
# default; the implicit-GEMM path with its tile and slice knobs).
R=$(cd "$(dirname "$0")/.." && pwd)
[ -e /work/main ] || { mkdir -p /work && ln -s "$R" /work/main; }
W=/tmp/w; rm -rf $W; mkdir -p $W; tar xJf "$R/.carry/bins.tar.xz" -C $W
export LD_LIBRARY_PATH=$W/lib:$LD_LIBRARY_PATH
L=$W/logs; mkdir -p $L
fin() { tar czf "$OUT/all.tgz" -C $W logs; }
trap fin EXIT
cd "$R"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | tee $L/gpu.txt
S=$(date +%s)
el() { echo "$(( $(date +%s) - S )) s $*" | tee -a $L/times.txt; }
G=$W/G
( timeout 150 $G/fftconv_gpu_tests --gtest_filter='ImplicitGemm*' > $L/t-igemm.txt 2>&1; echo "rc=$?" >> $L/t-igemm.txt
  FFTCONV_IGEMM_TILE=square timeout 100 $G/fftconv_gpu_tests --gtest_filter='ImplicitGemm.*MatchOracle' > $L/t-igemm-square.txt 2>&1; echo "rc=$?" >> $L/t-igemm-square.txt ) &
( timeout 200 $G/fftconv_gpu_tests --gtest_filter='*Fused*' > $L/t-fused.txt 2>&1; echo "rc=$?" >> $L/t-fused.txt ) &
wait
el tests
for f in $L/t-*.txt; do echo "== $f"; grep -E "^\[  FAILED|PASSED|rc=|sweep" $f | head -14; done
for cfg in "default 0" "square 0" "default 8" "default 16" "narrow 0"; do
  set -- $cfg; tile=$1; cap=$2
  env $( [ $tile != default ] && echo FFTCONV_IGEMM_TILE=$tile ) $( [ $cap != 0 ] && echo FFTCONV_IGEMM_MAX_SLICES=$cap ) \
    timeout 60 $G/fftconv-bench --shapes .carry/igemm.csv --pass wgrad --algo implicit_gemm --no-cudnn --json $L/ig-$tile-$cap.json > $L/ig-$tile-$cap.txt 2>&1
  echo "$tile $cap: $(grep -E ' wgrad ' $L/ig-$tile-$cap.txt | awk '{printf "%s %s | ", $1, $4}')"
done
el igemm-ab
timeout 90 $G/fftconv-bench --shapes .carry/igemm.csv --pass wgrad --verify --no-cudnn --json $L/ig-auto.json > $L/ig-auto.txt 2>&1
echo "auto: $(grep -E ' wgrad ' $L/ig-auto.txt | awk '{printf "%s %s %s | ", $1, $4, $15}')"
timeout 60 $G/fftconv-bench --shapes .carry/igemm.csv --filter small7x7_c512 --pass wgrad --algo fft --no-cudnn --json $L/ig-fft.json > $L/ig-fft.txt 2>&1
echo "fft: $(grep -E ' wgrad ' $L/ig-fft.txt | awk '{printf "%s %s | ", $1, $4}')"
el igemm-auto
for r in landmark_heatmaps_dw68 replknet_dw31_56 slak_dw51_28 replknet_dw31_14 landmark_batch64; do
  timeout 30 $G/fftconv-bench --shapes data/shapes/suite.csv --filter $r --pass wgrad --verify --no-cudnn --json $L/fw-$r.json > $L/fw-$r.txt 2>&1
  echo "$r: $(grep -E "^$r " $L/fw-$r.txt | awk '{print $4, $8, $13}')"
done
el fused-default
