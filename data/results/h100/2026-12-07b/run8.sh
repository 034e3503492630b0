#!/bin/bash
R=$(cd "$(dirname "$0")/.." && pwd)
[ -e /work/main ] || { mkdir -p /work && ln -s "$R" /work/main; }
W=/tmp/w; rm -rf $W; mkdir -p $W; tar xJf "$R/.carry/bins.tar.xz" -C $W
export LD_LIBRARY_PATH=$W/lib:$LD_LIBRARY_PATH
L=$W/logs; mkdir -p $L
fin() { tar czf "$OUT/all.tgz" -C $W logs; }
trap fin EXIT
cd "$R"
S=$(date +%s)
el() { echo "$(( $(date +%s) - S )) s $*" | tee -a $L/times.txt; }
Z=$W/Z; G=$W/G
( timeout 150 $Z/fftconv_gpu_tests --gtest_filter='*seed1*' > $L/t-seed1.txt 2>&1; echo "rc=$?" >> $L/t-seed1.txt ) &
for t in 1 2; do for s in off rows; do for r in landmark_heatmaps_dw68 replknet_dw31_56 slak_dw51_28 replknet_dw31_14 landmark_batch64; do
  FFTCONV_FUSED_WGRAD_SUM=$s timeout 60 $Z/fftconv-bench --shapes data/shapes/suite.csv --filter $r --pass wgrad --verify --no-cudnn --json $L/rows-$s-$r-$t.json > $L/rows-$s-$r-$t.txt 2>&1
done; done; done
el rows-ab
wait
grep -E "^\[  FAILED|PASSED|rc=" $L/t-seed1.txt
for f in $L/rows-*-1.txt $L/rows-*-2.txt; do echo "$f: $(grep -E ' wgrad ' $f | awk '{print $4, $8, $13}')"; done
timeout 100 $G/fftconv_gpu_tests --gtest_filter='ImplicitGemm.Refuses*' 2>&1 | tail -20
el done
