"""GPU pairs across nodes: GPU i of host A meets GPU j of host B, every (i, j), in rounds.

The ``gpu-pairs`` pattern runs host pairs in all-pairs rounds; each host round becomes G rounds
(G: the GPUs both hosts have), round k pairing GPU i of the first host with GPU (i + k) mod G of
the second, for every i at once. A round thus uses each GPU once per host, and every (i, j)
combination of every host pair is measured exactly once. A GPU view of a host
(:func:`on_gpu`) is the whole host with ``gpu_index`` set: the adapter makes that GPU the only
one its rank sees (``CUDA_VISIBLE_DEVICES``), and NCCL then takes the NIC nearest that GPU
among all of the host's rails, as it does in a training job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from benchharness.core.model import Host
from benchharness.planning import schedule

GPU_VAR = "gpu_index"
ENDPOINT_SEP = "."


def gpu_indices(host: Host) -> list[int]:
    """The host's GPUs: inventory var ``gpus`` as a count (8) or a list of indices ([0, 2])."""
    value = host.var("gpus", 0)
    if isinstance(value, str):
        value = [v for v in value.split(",") if v.strip()] if "," in value else value
    if isinstance(value, list | tuple):
        return [int(v) for v in value]
    return list(range(max(0, int(value or 0))))


def on_gpu(host: Host, index: int) -> Host:
    """``host`` as seen by a tool on one GPU: ``gpu_index`` set."""
    return dataclasses.replace(host, vars={**host.vars, GPU_VAR: index})


def gpu_of(host: Host) -> int | None:
    """The GPU a GPU view stands for, None for the whole host."""
    value = host.var(GPU_VAR)
    return int(value) if value is not None else None


def gpu_endpoint(host: Host) -> str:
    """``node3.gpu5``: one GPU of one host, as the gpu-pairs heatmap names its rows and columns."""
    index = gpu_of(host)
    return f"{host.name}{ENDPOINT_SEP}gpu{index}" if index is not None else host.name


def gpu_pair_rounds(hosts: Sequence[Host]) -> list[list[tuple[Host, Host]]]:
    """Rounds of (server GPU view, client GPU view) pairs; see the module docstring."""
    missing = [h.name for h in hosts if not gpu_indices(h)]
    if missing:
        raise ValueError(f"pattern gpu-pairs needs the inventory var gpus (a count or a list) on "
                         f"{', '.join(missing)}")
    rounds: list[list[tuple[Host, Host]]] = []
    for host_round in schedule.all_pairs_rounds(list(hosts)):
        shifts = max(min(len(gpu_indices(a)), len(gpu_indices(b))) for a, b in host_round)
        for k in range(shifts):
            this: list[tuple[Host, Host]] = []
            for a, b in host_round:
                ga, gb = gpu_indices(a), gpu_indices(b)
                g = min(len(ga), len(gb))
                if k < g:
                    this += [(on_gpu(a, ga[i]), on_gpu(b, gb[(i + k) % g])) for i in range(g)]
            rounds.append(this)
    return rounds


def gpu_labels(pair: Sequence[Host]) -> dict[str, str]:
    """Labels of a gpu-pairs step: each side's GPU and ``gpu_pair`` (``a.gpu0-b.gpu3``). Not
    ``endpoints``: those name rails (host.rail) wherever verdicts and JUnit roll results up."""
    labels = {"gpu_pair": "-".join(gpu_endpoint(h) for h in pair)}
    for side, host in zip(("server", "client"), pair, strict=True):
        labels[f"{side}_gpu"] = f"gpu{gpu_of(host)}"
    return labels
