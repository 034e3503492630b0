#!/bin/bash
# device run 2: Z2 = verify branch (defaults: fused wgrad g-only smem 33-64, rows direct wgrad, whole-strip rule)
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
Z=$W/Z
el start
for i in 0 1 2 3; do
  ( GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $Z/fftconv_gpu_tests > $L/t-all-$i.txt 2>&1; echo "rc=$?" >> $L/t-all-$i.txt ) &
done
( FFTCONV_DIRECT_WGRAD=taps timeout 200 $Z/fftconv_gpu_tests --gtest_filter='Direct.*:Backward.*' > $L/t-taps.txt 2>&1; echo "rc=$?" >> $L/t-taps.txt ) &
wait
el tests
for f in $L/t-*.txt; do echo "== $f"; grep -E "^\[  FAILED|PASSED|rc=|tests ran|SKIPPED \] [0-9]" $f | head -20; done
for t in 1 2; do
  timeout 120 $Z/fftconv-bench --shapes data/shapes/suite.csv --filter landmark --pass fwd,dgrad,wgrad --verify --no-cudnn --json $L/auto-landmark-$t.json > $L/auto-landmark-$t.txt 2>&1
  timeout 120 $Z/fftconv-bench --shapes data/shapes/suite.csv --filter _dw --pass wgrad --verify --no-cudnn --json $L/auto-dw-$t.json > $L/auto-dw-$t.txt 2>&1
done
el auto
SEP="--desc n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32 --desc n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32 --desc n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32 --desc n8c1h96w96k1r45s45p22x22u1x1d1x1g1f32 --desc n1c3h2048w2048k3r45s45p22x22u1x1d1x1g3f32"
timeout 90 $Z/fftconv-bench $SEP --gaussian 7 --pass fwd,dgrad --dtypes f32,f16 --verify --no-cudnn --json $L/sep-auto.json > $L/sep-auto.txt 2>&1
el sep
