"""Programs that run on the benchmark hosts, not inside the harness: the one room for them.

Each module here is a standalone script, copied to a host (or run in place on a local one) with
the host's own interpreter, and imports nothing of the harness:

- ``probe.py``: the host's facts as one JSON document (stdlib only, Python 3.6+); the tools'
  version commands arrive as ``--tools`` JSON from ``telemetry/requirements.py``.
- ``sampler.py``: NIC, RDMA, CPU and temperature samples during a step (stdlib only).
- ``mpi_allreduce.py``: the CPU collective benchmark under mpirun (mpi4py + NumPy), run as
  ``python mpi_allreduce.py`` or ``python -m benchharness.onhost.mpi_allreduce``.
- ``torch_dist.py`` / ``torch_train.py``: torch.distributed collectives and training-step proxies.
- ``iter_json.py``: nccl-tests' per-iteration JSON document, for the CPU and torch programs.

A program imports its siblings from the folder it runs in (``import iter_json`` on a host,
``benchharness.onhost.iter_json`` in the package); ``tools/common.onhost_uploads`` copies them
together. A new host program (another sampler) goes here too.
"""
