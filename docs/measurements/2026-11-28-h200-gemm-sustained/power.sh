set -u
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 25 > $OUT/smi.csv &
SMI=$!
EX=./gemm_tensor_cores
mark() { echo "$(date +%H:%M:%S.%N | cut -c1-12) $*" | tee -a $OUT/marks.txt; }
python3 -c 'import torch; torch.zeros(1, device="cuda")'
for round in 1 2; do
  sleep 3; mark "ours 8192 reps 10"; $EX 8192 10 "" wgmma_direct | tail -1
  sleep 3; mark "cublas tf32 8192 reps 10 warm 3"; python3 cublas_series.py 8192 10 3 tf32
  sleep 3; mark "ours 8192 reps 600"; $EX 8192 600 "" wgmma_direct | tail -1
  sleep 3; mark "cublas tf32 8192 reps 600 warm 5"; python3 cublas_series.py 8192 600 5 tf32
  sleep 3; mark "ours 4096 reps 2000"; $EX 4096 2000 "" wgmma_direct | tail -1
  sleep 3; mark "cublas tf32 4096 reps 2000 warm 5"; python3 cublas_series.py 4096 2000 5 tf32
done
mark end
kill $SMI
