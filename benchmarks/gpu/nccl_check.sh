#!/usr/bin/env bash
# GPU check: on a machine with an NVIDIA GPU and nvcc, build nccl-tests against the machine's NCCL
# (or PyPI's nvidia-nccl-cu12 / -cu13, which carry nccl.h and libnccl.so.2), then run
# `bench run suite=allreduce` and `bench doctor` on the local host and keep the run directory.
#
#   benchmarks/gpu/nccl_check.sh [OUT_DIR]      (default: ./gpu-check-<date>)
#
# Needs: nvidia-smi, nvcc, git (or NCCL_TESTS_SRC pointing at an nccl-tests checkout), Open MPI's
# mpirun, python3 with benchharness importable (BENCH, default "python3 -m benchharness").
set -euo pipefail

OUT=${1:-"$PWD/gpu-check-$(date -u +%Y%m%dT%H%M%SZ)"}
BENCH=${BENCH:-"python3 -m benchharness"}
WORK=${WORK:-"$OUT/build"}
mkdir -p "$OUT" "$WORK"
log() { printf '%s\n' "$*" | tee -a "$OUT/check.log" >&2; }

command -v nvidia-smi >/dev/null || { log "no nvidia-smi: not a GPU machine"; exit 2; }
command -v nvcc >/dev/null || { log "no nvcc on PATH (install the CUDA toolkit)"; exit 2; }
GPUS=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
[ "$GPUS" -ge 1 ] || { log "nvidia-smi lists no GPU"; exit 2; }
nvidia-smi -L | tee -a "$OUT/check.log"
CUDA_MAJOR=$(nvcc --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
log "CUDA $CUDA_MAJOR, $GPUS GPU(s)"

# NCCL: the machine's (nccl.h under NCCL_HOME or /usr), else PyPI's wheel for this CUDA major.
NCCL_HOME=${NCCL_HOME:-}
if [ -z "$NCCL_HOME" ]; then
  for d in /usr /usr/local /usr/local/cuda; do
    if [ -f "$d/include/nccl.h" ]; then NCCL_HOME=$d; break; fi
  done
fi
if [ -z "$NCCL_HOME" ]; then
  python3 -m pip install --target "$WORK/pynccl" "nvidia-nccl-cu${CUDA_MAJOR}" | tail -1
  NCCL_HOME="$WORK/pynccl/nvidia/nccl"
  # the wheel ships libnccl.so.2 only; nccl-tests links -lnccl
  [ -e "$NCCL_HOME/lib/libnccl.so" ] || ln -s libnccl.so.2 "$NCCL_HOME/lib/libnccl.so"
fi
[ -f "$NCCL_HOME/include/nccl.h" ] || { log "no nccl.h under $NCCL_HOME"; exit 2; }
export LD_LIBRARY_PATH="$NCCL_HOME/lib:${LD_LIBRARY_PATH:-}"
log "NCCL from $NCCL_HOME ($(grep -m1 -E '#define NCCL_(MAJOR|VERSION_CODE)' "$NCCL_HOME/include/nccl.h" || true))"

# nccl-tests with MPI, so that the harness's mpirun line starts one rank per GPU.
SRC=${NCCL_TESTS_SRC:-"$WORK/nccl-tests"}
[ -d "$SRC" ] || git clone --depth 1 https://github.com/NVIDIA/nccl-tests.git "$SRC"
MPI_HOME=${MPI_HOME:-$(dirname "$(dirname "$(command -v mpicc)")")}
make -C "$SRC" -j"$(nproc)" MPI=1 MPI_HOME="$MPI_HOME" NCCL_HOME="$NCCL_HOME" \
     CUDA_HOME="$(dirname "$(dirname "$(command -v nvcc)")")" >"$OUT/build.log" 2>&1 \
  || { log "nccl-tests build failed, see $OUT/build.log"; exit 1; }

# A one-host inventory: the local machine, all its GPUs, nccl-tests just built.
cat >"$OUT/inventory.ini" <<INV
[gpu]
localhost ansible_connection=local gpus=$GPUS nccl_tests_dir=$SRC/build mpi_bind_to=none mpi_pml=tcp
INV
log "bench doctor"
$BENCH doctor hosts="$OUT/inventory.ini" >"$OUT/doctor.txt" 2>&1 || log "bench doctor exited $? (see doctor.txt)"
log "bench run suite=allreduce"
rc=0
$BENCH run suite=allreduce hosts="$OUT/inventory.ini" maxbytes="${MAXBYTES:-1G}" nccl_debug=true \
  out="$OUT/run" >"$OUT/run.txt" 2>&1 || rc=$?
log "bench run exited $rc; run directory $OUT/run"
exit "$rc"
