"""The GPU-pair matrix: GPU i of node A against GPU j of node B, for every pair of the run.

Steps of the ``gpu-pairs`` pattern (``planning/gpus.py``) carry ``hosts`` (``A,B``) and each
side's GPU (``server_gpu``, ``client_gpu``). The matrix is symmetric: the one measurement of
A.gpu_i with B.gpu_j fills both (A.gpu_i, B.gpu_j) and (B.gpu_j, A.gpu_i), so a slow node shows
as a light row *and* column, a slow GPU (or its NIC, PCIe switch) as one light row and column
of its own, and a slow path between two nodes as a light block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

#: Metrics the matrix is drawn on, first found wins (bus bandwidth of sendrecv, else a throughput).
METRICS = ("busbw_GBps", "algbw_GBps", "bw_avg_gbps", "throughput_gbps", "bw_peak_gbps")


@dataclass
class GpuMatrix:
    """Medians per GPU pair: ``values[(row, col)]``; ``endpoints`` sorted (``node.gpuN``)."""

    metric: str
    endpoints: list[str]
    values: dict[tuple[str, str], float] = field(default_factory=dict)
    size_bytes: int | None = None

    def endpoint_medians(self) -> dict[str, float]:
        """Median over each endpoint's row: what one GPU reaches against all the others."""
        out = {}
        for e in self.endpoints:
            row = [v for (r, _), v in self.values.items() if r == e]
            if row:
                out[e] = float(pd.Series(row).median())
        return out

    def node_medians(self) -> dict[str, float]:
        """Median over every cell a node's GPUs are in."""
        nodes: dict[str, list[float]] = {}
        for (r, _), v in self.values.items():
            nodes.setdefault(r.rsplit(".", 1)[0], []).append(v)
        return {n: float(pd.Series(v).median()) for n, v in nodes.items()}


def gpu_pair_matrix(df: pd.DataFrame) -> GpuMatrix | None:
    """The matrix of the ``gpu-pairs`` rows of ``df`` (summary rows), at the largest size."""
    if "pattern" not in df or not {"server_gpu", "client_gpu", "hosts"} <= set(df.columns):
        return None
    rows = df[df["pattern"] == "gpu-pairs"]
    metric = next((m for m in METRICS if m in rows and rows[m].notna().any()), None)
    if metric is None:
        return None
    rows = rows[rows[metric].notna()]
    size = None
    if "size_bytes" in rows and rows["size_bytes"].notna().any():
        size = int(rows["size_bytes"].max())
        rows = rows[rows["size_bytes"] == size]
    hosts = rows["hosts"].astype(str).str.split(",", n=1, expand=True)
    a = hosts[0] + "." + rows["server_gpu"].astype(str)
    b = hosts[1] + "." + rows["client_gpu"].astype(str)
    med = pd.DataFrame({"a": a, "b": b, "v": rows[metric].astype(float)}).groupby(["a", "b"])["v"].median()
    values: dict[tuple[str, str], float] = {}
    for (x, y), v in med.items():
        values[(str(x), str(y))] = float(v)
        values.setdefault((str(y), str(x)), float(v))
    endpoints = sorted({e for pair in values for e in pair}, key=_natural)
    return GpuMatrix(metric, endpoints, values, size)


def _natural(name: str) -> tuple[str, int]:
    node, _, gpu = name.rpartition(".gpu")
    return (node, int(gpu)) if gpu.isdigit() else (name, -1)
