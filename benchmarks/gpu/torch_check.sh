#!/usr/bin/env bash
# GPU check of the torch tool: on a machine with NVIDIA (or ROCm) GPUs and a CUDA/ROCm build of
# torch, run `bench run suite=torch` (nccl backend, torchrun with one rank per GPU) and the DDP
# proxy of suite=training on the local host, and keep the run directories.
#
#   benchmarks/gpu/torch_check.sh [OUT_DIR]      (default: ./torch-check-<date>)
#
# Needs: nvidia-smi (or rocm-smi), TORCH_PYTHON (default python3) whose torch sees the GPUs and
# has NCCL, python3 with benchharness importable (BENCH, default "python3 -m benchharness").
# With one host, all ranks share the node: NCCL uses NVLink/PCIe, not the NIC; the check proves
# the launch, the nccl backend, the versions and the parser, not the fabric.
set -euo pipefail

OUT=${1:-"$PWD/torch-check-$(date -u +%Y%m%dT%H%M%SZ)"}
BENCH=${BENCH:-"python3 -m benchharness"}
TORCH_PYTHON=${TORCH_PYTHON:-python3}
mkdir -p "$OUT"
log() { printf '%s\n' "$*" | tee -a "$OUT/check.log" >&2; }

if command -v nvidia-smi >/dev/null; then
  GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l); VENDOR=nvidia
elif command -v rocm-smi >/dev/null; then
  GPUS=$(rocm-smi --showid --csv | grep -c '^card'); VENDOR=amd
else
  log "no nvidia-smi or rocm-smi: not a GPU machine"; exit 2
fi
[ "$GPUS" -ge 1 ] || { log "no GPU listed"; exit 2; }
"$TORCH_PYTHON" - <<'PY' 2>&1 | tee -a "$OUT/check.log"
import torch, torch.distributed as d
assert torch.cuda.is_available(), "torch sees no GPU"
assert d.is_nccl_available(), "this torch has no NCCL"
print("torch", torch.__version__, "cuda", torch.version.cuda, "hip", getattr(torch.version, "hip", None),
      "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())
PY
log "$VENDOR, $GPUS GPU(s)"

cat >"$OUT/inventory.ini" <<INV
[gpu]
localhost ansible_connection=local gpus=$GPUS gpu_vendor=$VENDOR torch_python=$TORCH_PYTHON netdev=lo
INV

rc=0
log "bench run suite=torch"
$BENCH run suite=torch hosts="$OUT/inventory.ini" maxbytes="${MAXBYTES:-1G}" iters=20 warmup=5 \
  telemetry=off out="$OUT/torch" >"$OUT/torch.txt" 2>&1 || rc=$?
log "suite=torch exited $rc; run directory $OUT/torch"
rc2=0
log "bench run suite=training (DDP 1B parameters, width 8192)"
$BENCH run suite=training hosts="$OUT/inventory.ini" model_params=1B width=8192 batch=32 tokens=65536 \
  maxbytes="${MAXBYTES:-1G}" telemetry=off out="$OUT/training" >"$OUT/training.txt" 2>&1 || rc2=$?
log "suite=training exited $rc2; run directory $OUT/training"
grep -h "benchharness torch_dist\|^proxy=" "$OUT"/torch/raw/*/torchrun-*.stdout "$OUT"/training/raw/*/torchrun-*.stdout \
  2>/dev/null | sort -u | tee -a "$OUT/check.log" || true
[ "$rc" = 0 ] && [ "$rc2" = 0 ]
