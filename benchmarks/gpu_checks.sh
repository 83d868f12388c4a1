#!/bin/bash
# One device session, in priority order, each step under its own time limit
# (a lent GPU comes with minutes, not hours; what a step leaves under $OUT,
# or under ./gpu_out without $OUT, is kept even when a later step stops):
#
#   bash benchmarks/gpu_checks.sh   # about 8 minutes on an H200 before the cap step (at most 4 more)
#
# 1. the GPU tests, verbose, every test under a 100 s timeout that prints
#    every thread's stack when it fires (a hang names its place);
# 2. the sampler and SpGEMM benchmarks with the host profile and the trace,
#    and the hops' table in both slot orders, cleared or kept between bulks;
# 3. UVA, the device feature cache, the pipeline and placements, the
#    device-memory cap, the training modes (BNS-GCN, P3, R-GCN) on the GPU;
# 4. GPU minibatches against the CPU's (slowest: the CPU references compile).
# Python packages missing on the device travel as wheels (see the device
# notes of the workplace); PYTHONPATH may point at them.  Wheels under .whl/
# (carried with the call; pyg-lib built for the device's torch, for PyG's
# row of the placements: benchmarks/README.md) are installed first.
#
# A step stopped by its time limit can leave pytest-xdist workers running;
# each step ends by stopping them, since a benchmark run beside them is
# slowed by up to 1.5x (seen on 2026-11-27).  The loader's, staging's and
# device cache's GPU tests take 40 s or more each on a fresh machine
# (compilation): they run in a second pytest beside the others.
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
t0=$(date +%s)
step() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  python3 -c "import torch, pyg_lib; print('pyg-lib', pyg_lib.__version__)" 2>&1 | tail -1
fi
settle() { pkill -f "python3 -m pytest" 2>/dev/null; sleep 1; }
SLOW="test_sampler_on_each_backend or test_device_cache or test_staging"
# The main job's placements train in the pipeline step below: not here too.
SLOW="$SLOW or test_job_each_placement_on_gpu"
step tests
timeout 150 python3 -m pytest -n 2 -v --timeout 100 --timeout-method thread -p no:cacheprovider \
  -o addopts= -W ignore -k "(cupy or gpu) and ($SLOW)" tests/sampling > "$OUT/tests_slow.txt" 2>&1 &
slow=$!
timeout 150 python3 -m pytest -n 6 -v --timeout 100 --timeout-method thread -p no:cacheprovider \
  -o addopts= -W ignore -k "(cupy or gpu) and not test_gpu_path and not ($SLOW)" tests/kernels \
  tests/spla tests/sampling tests/train > "$OUT/tests.txt" 2>&1
echo "rc=$?"; grep -E "FAILED|ERROR|Timeout|passed|failed" "$OUT/tests.txt" | grep -v PASSED | head -20
wait $slow; echo "slow tests rc=$?"
grep -E "FAILED|ERROR|Timeout|passed|failed" "$OUT/tests_slow.txt" | grep -v PASSED | head -10
settle
step samplers
timeout 200 python3 -W ignore benchmarks/bench_gpu.py --no-tests \
  --sections graphsage,layerwise,trace,spgemm --profile --no-unfused --repeats 3 --watchdog 195 \
  --out "$OUT/gpu.md" > "$OUT/gpu.log" 2>&1
echo "rc=$?"; grep -E "^GraphSAGE|^LADIES|^FastGCN|^trace|^A @ A|^Q @ A|Error" "$OUT/gpu.log" | cut -c1-300
step table
# The hops' occurrence table in group- and vertex-major slot order, cleared
# for every bulk or kept between bulks, timed alternately
# (kernels.cuda.hop_table.TABLE_ORDER, KEEP_SHARE; the blocks must be the same).
timeout 60 python3 -W ignore benchmarks/hop_table.py --gpu --out "$OUT/table.md" \
  > "$OUT/table.log" 2>&1
echo "rc=$?"; grep -E "^bulk|Error" "$OUT/table.log" | cut -c1-200
step uva
timeout 70 python3 -W ignore benchmarks/bench_gpu.py --no-tests --sections uva --repeats 3 \
  --out "$OUT/uva.md" > "$OUT/uva.log" 2>&1
echo "rc=$?"; grep -E "^GraphSAGE|Error" "$OUT/uva.log"
step cache
timeout 50 python3 -W ignore benchmarks/bench_gpu_cache.py --repeats 3 --out "$OUT/cache.md" \
  > "$OUT/cache.log" 2>&1
echo "rc=$?"; tail -4 "$OUT/cache.log" | cut -c1-300
step pipeline
timeout 130 python3 -W ignore benchmarks/bench_gpu_pipeline.py --epochs 1 --datasets cora \
  --out "$OUT/pipe.md" > "$OUT/pipe.log" 2>&1
echo "rc=$?"; grep -E "^\||Error" "$OUT/pipe.log" | cut -c1-300 | head -12
step cap
# Issue 37, target 2: the device-memory cap holds the allocators, so a graph
# "larger than the GPU" trains through UVA (rmat:18: graph 26 MB, features
# 67 MB); the header names the placement chosen, and a cap the run cannot
# fit in ends with the out-of-memory line that names the cap.
for run in "auto 2000000000" "auto 110000000" "auto 60000000" "cuda 60000000"; do
  set -- $run
  timeout 60 python3 -W ignore -m sampling.train --device cuda --dataset rmat:18 --epochs 2 \
    --sample-on "$1" --device-memory-limit "$2" --no-progress > "$OUT/cap_$1_$2.log" 2>&1
  echo "--sample-on $1, cap $2: rc=$?"
  grep -E "device cuda|test accuracy|^error" "$OUT/cap_$1_$2.log" | sed 's/.*\(device cuda.*\), threads.*/\1/' | cut -c1-200
done
step modes
# BNS-GCN, P3 and R-GCN with the model on the GPU (exchanges staged through
# host memory): each run beside its CPU run, accuracy and seconds.
for run in "--mode bns --dataset cora --epochs 50" "--features columns --epochs 5" \
           "--dataset mag:10 --epochs 5"; do
  for dev in cpu cuda; do
    timeout 60 python3 -W ignore -m sampling.train $run --device $dev --no-progress \
      > "$OUT/mode_$dev.log" 2>&1
    echo "$run --device $dev: rc=$? $(grep -E 'trained|test accuracy|^error' \
      "$OUT/mode_$dev.log" | tr '\n' ' ')"
  done
done
step equal
timeout 120 python3 -W ignore benchmarks/bench_gpu.py --no-tests --sections equal \
  --out "$OUT/equal.md" > "$OUT/equal.log" 2>&1
echo "rc=$?"; grep -E "GPU == CPU" "$OUT/equal.log"
step done
