"""Programs that run on benchmark hosts under mpirun (mpi4py + NumPy), not inside the harness.

Each module here is a standalone script (stdlib, NumPy and mpi4py only) so that it can be copied
to a host and run as ``python mpi_allreduce.py`` as well as ``python -m benchharness.collectives...``.
"""
