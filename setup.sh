#!/usr/bin/env bash
# Set up benchharness on a Debian machine, as root: system packages, a virtual environment in
# .venv, and the package with its dependencies. Safe to run again: it only does what is missing.
# --tests: also what only the test suite's lab needs and takes minutes to build (Horovod).
set -euo pipefail
cd "$(dirname "$0")"

for_tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) for_tests=1 ;;
    *) echo "setup.sh: unknown argument '$arg' (usage: ./setup.sh [--tests])" >&2; exit 2 ;;
  esac
done

packages=(
  python3 python3-venv python3-dev gcc iproute2 procps util-linux openssh-server openssh-client
  iperf3 perftest ucx-utils sockperf openmpi-bin libopenmpi-dev numactl hwloc pciutils ethtool
  python3-torch  # the torch tool and training proxies in the lab: torch 1.13 CPU build, gloo, torchrun
  libtorch-dev pybind11-dev cmake g++  # building Horovod against Debian's torch (.venv-horovod below)
  rdma-core ibverbs-utils python3-pyverbs infiniband-diags lm-sensors slurm-wlm munge
  chromium chromium-driver
  # the soft-RoCE VM of the rdma_vm tests: qemu, and a kernel with rdma_rxe (Debian's has it as a module)
  qemu-system-x86 linux-image-amd64 cpio kmod
  nftables  # the fabric health tests drop packets with it (the kernel has no netem)
  openipmi ipmitool  # BMC node power: ipmitool reads it (bench run); ipmi_sim is the tests' IPMI BMC
  make      # the provisioning tests build a C project with the role that builds nccl-tests
  # part of every Debian system (priority required): named because the lab and the tests run them
  coreutils mount dash bash hostname libc-bin grep dpkg
)
# Each program the lab and the tests run, with its package: benchharness/lab/commands.py
# (tests/test_setup_packages.py checks that every package there is installed here).
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ]; then
    echo "setup.sh: run as root to install: ${missing[*]}" >&2
    exit 2
  fi
  echo "setup.sh: installing ${missing[*]}" >&2
  apt-get update -qq
  # apt's chatter goes to a log, shown (its end) only if the install fails: dpkg names the package there
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
       >/var/tmp/benchharness-setup-apt.log 2>&1; then
    tail -40 /var/tmp/benchharness-setup-apt.log >&2
    echo "setup.sh: apt-get install failed (log above, all of it in /var/tmp/benchharness-setup-apt.log)" >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/bench ] || [ pyproject.toml -nt .venv/.installed ]; then
  echo "setup.sh: creating .venv and installing benchharness" >&2
  python3 -m venv .venv
  # pip's and setuptools' chatter goes to a log, shown only if the install fails
  if ! { .venv/bin/python -m pip install -q --upgrade pip &&
         .venv/bin/python -m pip install -q -e '.[dev]'; } >.venv/install.log 2>&1; then
    cat .venv/install.log >&2
    echo "setup.sh: installing benchharness failed (log above, also in .venv/install.log)" >&2
    exit 1
  fi
  touch .venv/.installed
fi

# The jax and tensorflow tools on lab hosts, which run this venv's interpreter (lab inventory
# jax_python, tf_python): jax and jaxlib (CPU build, gloo; about 10 s, 350 MB) and tensorflow-cpu
# (1-2 min, 1.3 GB) from PyPI; measured in docs/frameworks.md.
if ! .venv/bin/python -c "import jax, jaxlib, tensorflow" 2>/dev/null; then
  echo "setup.sh: installing jax, jaxlib and tensorflow-cpu into .venv" >&2
  if ! .venv/bin/python -m pip install -q "jax>=0.4.35" "jaxlib>=0.4.35" "tensorflow-cpu>=2.16" \
       >>.venv/install.log 2>&1; then
    tail -20 .venv/install.log >&2
    echo "setup.sh: installing jax or tensorflow-cpu failed (log above, also in .venv/install.log)" >&2
    exit 1
  fi
fi

# With --tests, the horovod tool on lab hosts (lab inventory horovod_python): Horovod 0.28.1 from
# PyPI, built from source against Debian's torch 1.13 (python3-torch; headers from libtorch-dev and
# pybind11-dev) in a venv of the system python that sees its torch, with gloo only (the tool runs
# gloo; MPI would add to the build). Minutes on 2 cores, once: skipped while .venv-horovod's
# horovod has its torch extension (docs/frameworks.md, "Horovod"). No pip cache: a cached wheel of
# an earlier build without HOROVOD_WITH_PYTORCH (the build variables are not part of its key)
# installs a horovod whose torch extension is missing. Without --tests a frameworks run on this
# machine reports Horovod "not installed", as on any host without it.
horovod_ok() { .venv-horovod/bin/python -c "import horovod.torch as h; h.gloo_built()" >/dev/null 2>&1; }
if [ "$for_tests" = 1 ] && ! horovod_ok; then
  echo "setup.sh: building horovod into .venv-horovod for the tests (about 8 minutes)" >&2
  [ -x .venv-horovod/bin/python ] || /usr/bin/python3 -m venv --system-site-packages .venv-horovod
  .venv-horovod/bin/python -m pip uninstall -q -y horovod >/dev/null 2>&1 || true
  if ! HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 \
       HOROVOD_WITHOUT_MXNET=1 MAKEFLAGS=-j2 CPATH=/usr/include/torch/csrc/api/include \
       .venv-horovod/bin/python -m pip install -q --no-cache-dir --no-build-isolation "horovod==0.28.1" \
       >.venv-horovod/install.log 2>&1 || ! horovod_ok; then
    tail -30 .venv-horovod/install.log >&2
    echo "setup.sh: building horovod with its torch extension failed (log above, also in" \
         ".venv-horovod/install.log)" >&2
    exit 1
  fi
fi
