#!/bin/bash
# device run (2026-12-07b): Z = combo-1207 (main + sep-shared-runs + wgrad-rows-sum), M = main's
# bench, G = wgrad-gemm (main + the implicit-GEMM backward filter).
R=$(cd "$(dirname "$0")/.." && pwd)
[ -e /work/main ] || { mkdir -p /work && ln -s "$R" /work/main; }
W=/tmp/w; rm -rf $W; mkdir -p $W; tar xJf "$R/.carry/bins.tar.xz" -C $W
export LD_LIBRARY_PATH=$W/lib:$LD_LIBRARY_PATH
L=$W/logs; mkdir -p $L
fin() { tar czf "$OUT/all.tgz" -C $W logs; }
trap fin EXIT
cd "$R"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total,driver_version --format=csv > $L/gpu.txt 2>&1
cat $L/gpu.txt
S=$(date +%s)
el() { echo "$(( $(date +%s) - S )) s $*" | tee -a $L/times.txt; }
Z=$W/Z; M=$W/M; G=$W/G
el start
X='-*seed1*'
for i in 0 1 2; do
  ( GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i timeout 200 $Z/fftconv_gpu_tests --gtest_filter="$X" > $L/t-all-$i.txt 2>&1; echo "rc=$?" >> $L/t-all-$i.txt ) &
done
( FFTCONV_FUSED_WGRAD_SUM=rows timeout 200 $Z/fftconv_gpu_tests --gtest_filter='*Fused*' > $L/t-fused-rows.txt 2>&1; echo "rc=$?" >> $L/t-fused-rows.txt
  FFTCONV_SEPARABLE_STRIP=whole timeout 100 $Z/fftconv_gpu_tests --gtest_filter='Separable*:Border*' > $L/t-sep-whole.txt 2>&1; echo "rc=$?" >> $L/t-sep-whole.txt ) &
( timeout 200 $G/fftconv_gpu_tests --gtest_filter='ImplicitGemm*:Backward*:Registry*' > $L/t-igemm.txt 2>&1; echo "rc=$?" >> $L/t-igemm.txt ) &
wait
el tests
for f in $L/t-*.txt; do echo "== $f"; grep -E "^\[  FAILED|PASSED|rc=|tests ran|SKIPPED \] [0-9]|sweep" $f | head -12; done
# the implicit-GEMM backward filter against cuDNN (strict, the engine's cuDNN path, and TF32)
timeout 240 $G/fftconv-bench --shapes .carry/igemm.csv --pass wgrad --algo implicit_gemm --verify --json $L/ig-igemm.json > $L/ig-igemm.txt 2>&1
el igemm
cat $L/ig-igemm.txt | tail -15
timeout 60 $G/fftconv-bench --shapes .carry/igemm.csv --pass wgrad --verify --no-cudnn --json $L/ig-auto.json > $L/ig-auto.txt 2>&1
el igemm-auto
for t in 1 2; do for s in off rows; do
  FFTCONV_FUSED_WGRAD_SUM=$s timeout 60 $Z/fftconv-bench --shapes data/shapes/suite.csv --filter 'dw|landmark_batch64$' --pass wgrad --verify --no-cudnn --json $L/rows-$s-$t.json > $L/rows-$s-$t.txt 2>&1
done; done
el rows-ab
SEP="--desc n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32 --desc n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32 --desc n8c1h96w96k1r45s45p22x22u1x1d1x1g1f32 --desc n1c3h2048w2048k3r45s45p22x22u1x1d1x1g3f32"
for t in 1 2; do for b in M Z; do
  timeout 60 $W/$b/fftconv-bench $SEP --gaussian 7 --pass fwd,dgrad --dtypes f32,f16 --verify --no-cudnn --json $L/sep-$b-$t.json > $L/sep-$b-$t.txt 2>&1
done; done
el sep-ab
