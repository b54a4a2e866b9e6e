"""Pattern gpu-pairs: every (GPU i, GPU j) of every node pair once, no GPU twice in a round; the
nccl-tests line gives each of its two ranks its own GPU; the matrix is symmetric."""

from __future__ import annotations

import itertools
import subprocess

import pandas as pd
import pytest

from benchharness.analysis.gpu_pairs import gpu_pair_matrix
from benchharness.core.model import Host
from benchharness.planning.gpus import gpu_indices, gpu_of, gpu_pair_rounds
from benchharness.tools.nccl_tests import GPU_WRAPPER


def _hosts(n: int, gpus: object = 4) -> list[Host]:
    return [Host(f"n{i}", f"198.18.0.{i + 1}", vars={"gpus": gpus}) for i in range(n)]


@pytest.mark.parametrize(("nodes", "gpus"), [(2, 4), (3, 2), (4, 8)])
def test_every_gpu_pair_once_and_no_gpu_twice_in_a_round(nodes: int, gpus: int) -> None:
    rounds = gpu_pair_rounds(_hosts(nodes, gpus))
    seen = [(a.name, gpu_of(a), b.name, gpu_of(b)) for r in rounds for a, b in r]
    expected = {(a, i, b, j) for a, b in itertools.combinations([f"n{k}" for k in range(nodes)], 2)
                for i in range(gpus) for j in range(gpus)}
    assert len(seen) == len(set(seen))
    assert {(min((a, i), (b, j))[0], min((a, i), (b, j))[1], max((a, i), (b, j))[0], max((a, i), (b, j))[1])
            for a, i, b, j in seen} == expected
    for r in rounds:
        used = [(h.name, gpu_of(h)) for pair in r for h in pair]
        assert len(used) == len(set(used))


def test_gpu_lists_and_missing_gpus() -> None:
    assert gpu_indices(Host("a", "x", vars={"gpus": "0,2"})) == [0, 2]
    assert gpu_indices(Host("a", "x", vars={"gpus": [1, 3]})) == [1, 3]
    with pytest.raises(ValueError, match="needs the inventory var gpus"):
        gpu_pair_rounds(_hosts(2, 0))


def test_each_rank_sees_its_own_gpu() -> None:
    """The wrapper run by sh as mpirun would: rank 0 gets the first entry, rank 1 the second."""
    for rank, want in ((0, "3"), (1, "5")):
        out = subprocess.run(["sh", "-c", GPU_WRAPPER, "bench-gpu", "3,5", "CUDA_VISIBLE_DEVICES", "",
                              "sh", "-c", 'echo "$CUDA_VISIBLE_DEVICES"'],
                             env={"OMPI_COMM_WORLD_RANK": str(rank), "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True, check=True).stdout.strip()
        assert out == want


def test_matrix_is_symmetric_and_names_the_slow_node() -> None:
    rows = []
    for a, b in (("n0", "n1"), ("n0", "n2"), ("n1", "n2")):
        for i, j in itertools.product(range(2), range(2)):
            bw = 10.0 if "n2" in (a, b) else 40.0
            rows.append({"pattern": "gpu-pairs", "hosts": f"{a},{b}", "server_gpu": f"gpu{i}",
                         "client_gpu": f"gpu{j}", "busbw_GBps": bw, "size_bytes": 1 << 30})
    m = gpu_pair_matrix(pd.DataFrame(rows))
    assert m is not None and m.metric == "busbw_GBps"
    assert m.values[("n0.gpu1", "n2.gpu0")] == m.values[("n2.gpu0", "n0.gpu1")] == 10.0
    nodes = m.node_medians()
    assert min(nodes, key=nodes.__getitem__) == "n2" and nodes["n0"] == 25.0
