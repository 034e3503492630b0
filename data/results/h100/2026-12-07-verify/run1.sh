#!/bin/bash
# device run: Z = sep-whole + x-combo tree, Y = Z with fused wgrad G_SMEM 64 / SMEM 32 (bench only)
R=$(cd "$(dirname "$0")/.." && pwd)
[ -e /work/main ] || { mkdir -p /work && ln -s "$R" /work/main; }
W=/tmp/w; rm -rf $W; mkdir -p $W; tar xJf "$R/.carry/bins.tar.xz" -C $W
export LD_LIBRARY_PATH=$W/lib:$LD_LIBRARY_PATH
L=$W/logs; mkdir -p $L
fin() { tar czf "$OUT/all.tgz" -C $W logs; }
trap fin EXIT
cd "$R"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $L/gpu.txt 2>&1
S=$(date +%s)
el() { echo "$(( $(date +%s) - S )) s $*" | tee -a $L/times.txt; }
Z=$W/Z; Y=$W/Y
el start
( timeout 230 $Z/fftconv_gpu_tests --gtest_filter='*Fused*' > $L/t-fused.txt 2>&1; echo "rc=$?" >> $L/t-fused.txt ) &
( timeout 230 $Z/fftconv_gpu_tests --gtest_filter='Backward.*:Direct.*' > $L/t-bwd.txt 2>&1; echo "rc=$?" >> $L/t-bwd.txt ) &
( FFTCONV_SEPARABLE_STRIP=whole timeout 230 $Z/fftconv_gpu_tests --gtest_filter='Separable*:Border*' > $L/t-sep-whole.txt 2>&1; echo "rc=$?" >> $L/t-sep-whole.txt ) &
( timeout 230 $Z/fftconv_gpu_tests --gtest_filter='Separable*:Border*' > $L/t-sep-def.txt 2>&1; echo "rc=$?" >> $L/t-sep-def.txt ) &
wait
el tests
for f in $L/t-*.txt; do echo "== $f"; grep -E "PASSED|FAILED|rc=|tests ran" $f | head -20; done
SEP="--desc n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32 --desc n32c68h96w96k68r45s45p22x22u1x1d1x1g68f32 --desc n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32 --desc n8c1h96w96k1r45s45p22x22u1x1d1x1g1f32 --desc n1c3h512w512k3r45s45p22x22u1x1d1x1g3f32 --desc n1c3h2048w2048k3r45s45p22x22u1x1d1x1g3f32"
for t in 1 2; do for form in segments whole; do
  FFTCONV_SEPARABLE_STRIP=$form timeout 60 $Z/fftconv-bench $SEP --algo separable --gaussian 7 --pass fwd,dgrad --dtypes f32,f16 --verify --no-cudnn --json $L/sep-$form-$t.json > $L/sep-$form-$t.txt 2>&1
done; done
timeout 60 $Z/fftconv-bench $SEP --gaussian 7 --pass fwd --dtypes f32,f16 --verify --json $L/sep-auto.json > $L/sep-auto.txt 2>&1
el sep
# fused wgrad: 16-bit staging factor (Auto vs forced) and Y's slak
for t in 1 2; do
  for a in fft_fused fft auto; do
    timeout 60 $Z/fftconv-bench --shapes data/shapes/suite.csv --filter landmark_batch64 --pass wgrad --algo $a --verify --no-cudnn --json $L/lb-$a-$t.json > $L/lb-$a-$t.txt 2>&1
  done
  for b in Z Y; do
    timeout 60 $W/$b/fftconv-bench --shapes data/shapes/suite.csv --filter dw --pass wgrad,fwd --verify --no-cudnn --json $L/dw-$b-$t.json > $L/dw-$b-$t.txt 2>&1
  done
done
el fused
for lay in taps rows; do
  for r in seed3_landmark_same odd_rect dilated2; do
  FFTCONV_DIRECT_WGRAD=$lay timeout 60 $Z/fftconv-bench --shapes data/shapes/suite.csv --filter $r --pass wgrad --algo direct --verify --no-cudnn --json $L/direct-$lay-$r.json > $L/direct-$lay-$r.txt 2>&1
  done
done
el direct
