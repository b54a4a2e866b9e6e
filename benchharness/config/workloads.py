"""Workloads (``workloads/*.yaml``, shipped in the package): what a training run is, as data.

A workload names a model and its run: parameters, dtype, GPUs, parallel degrees (data, tensor,
pipeline, expert), compute time per step, steps, overlap, GPU-hour price, node power and the
service life its NICs and optics are written off over (``nic_service_years``).
``analysis.projection`` turns a measured bus-bandwidth curve into its step time, days and cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchharness.core.errors import ConfigError

WORKLOAD_DIR = Path(__file__).resolve().parent.parent / "workloads"
DTYPE_BYTES = {"fp32": 4, "float32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "float16": 2, "fp8": 1}
_COUNT = {"K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
_KEYS = {"name", "description", "parameters", "dtype", "gpus", "gpus_per_node", "parallel",
         "compute_ms_per_step", "steps", "overlap", "bucket_mb", "algorithm", "pipeline", "expert",
         "gpu_hour_usd", "node_power_kw", "nics_per_node", "nic_service_years"}
#: Years a NIC and its optics are written off over when the projection charges a run its share of
#: their price: five, the servers' useful life Amazon (2022 10-K: four to five years) and Meta
#: (2022 10-K: to five years) state; a workload's ``nic_service_years`` replaces it.
NIC_SERVICE_YEARS = 5.0


@dataclass(frozen=True)
class Workload:
    """One training run to project (see the module docstring for the fields)."""

    name: str
    parameters: float
    dtype: str
    gpus: int
    gpus_per_node: int
    data: int
    tensor: int
    pipeline: int
    expert: int
    compute_ms: float
    steps: int
    overlap: float = 0.8
    bucket_mb: float = 25.0
    algorithm: str = "ring"
    microbatches: int = 0
    activation_mb: float = 0.0
    expert_layers: int = 0
    tokens_per_gpu: int = 0
    hidden: int = 0
    gpu_hour_usd: float = 0.0
    node_power_kw: float = 0.0
    #: Scale-out NICs per node (rail-aligned: GPU i's nearest NIC is rail i); default one per GPU.
    nics_per_node: int = 0
    #: Years the NICs and optics are written off over (the run is charged hours / this of their price).
    nic_service_years: float = NIC_SERVICE_YEARS
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def nodes(self) -> float:
        return self.gpus / self.gpus_per_node

    @property
    def nics(self) -> int:
        """Scale-out NICs per node (``nics_per_node``, else one per GPU)."""
        return self.nics_per_node or self.gpus_per_node

    @property
    def dp_ranks_per_node(self) -> int:
        """Ranks of one data-parallel group on one node. Ranks are placed tensor-parallel first
        (Megatron-LM's order: TP innermost, then DP, then PP), so a node of G GPUs holds G / TP
        ranks of each DP group: one with TP = G (each TP rank's group crosses the NICs through
        its own rail), G with TP = 1."""
        return max(1, min(self.data, self.gpus_per_node // self.tensor))


def parse_count(value: Any) -> float:
    """``70B`` -> 7e10; numbers pass through."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip().upper()
    if text[-1:] in _COUNT:
        return float(text[:-1]) * _COUNT[text[-1]]
    return float(text)


def workload_from(data: Any, where: str) -> Workload:
    """A validated Workload from one YAML mapping; ConfigError naming ``where`` and the key."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a workload must be a mapping")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}")
    cfg: dict[str, Any] = dict(data)
    try:
        par: dict[str, Any] = cfg.get("parallel") or {}
        pipe: dict[str, Any] = cfg.get("pipeline") or {}
        exp: dict[str, Any] = cfg.get("expert") or {}
        w = Workload(name=str(cfg["name"]), parameters=parse_count(cfg["parameters"]),
                     dtype=str(cfg.get("dtype", "bf16")).lower(), gpus=int(cfg["gpus"]),
                     gpus_per_node=int(cfg.get("gpus_per_node") or 8), data=int(par.get("data", cfg["gpus"])),
                     tensor=int(par.get("tensor", 1)), pipeline=int(par.get("pipeline", 1)),
                     expert=int(par.get("expert", 1)), compute_ms=float(cfg["compute_ms_per_step"]),
                     steps=int(cfg["steps"]), overlap=float(cfg.get("overlap", 0.8)),
                     bucket_mb=float(cfg.get("bucket_mb", 25)), algorithm=str(cfg.get("algorithm", "ring")),
                     microbatches=int(pipe.get("microbatches", 0)), activation_mb=float(pipe.get("activation_mb", 0)),
                     expert_layers=int(exp.get("layers", 0)), tokens_per_gpu=int(exp.get("tokens_per_gpu", 0)),
                     hidden=int(exp.get("hidden", 0)), gpu_hour_usd=float(cfg.get("gpu_hour_usd", 0)),
                     node_power_kw=float(cfg.get("node_power_kw", 0)), nics_per_node=int(cfg.get("nics_per_node", 0)),
                     nic_service_years=float(cfg.get("nic_service_years", NIC_SERVICE_YEARS)),
                     description=str(cfg.get("description", "")))
    except KeyError as exc:
        raise ConfigError(f"{where}: missing key {exc.args[0]}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if w.dtype not in DTYPE_BYTES:
        raise ConfigError(f"{where}: dtype {w.dtype!r} is not one of {', '.join(DTYPE_BYTES)}")
    if w.algorithm not in ("ring", "tree"):
        raise ConfigError(f"{where}: algorithm {w.algorithm!r} is not ring or tree")
    if w.data * w.tensor * w.pipeline != w.gpus:
        raise ConfigError(f"{where}: data x tensor x pipeline = {w.data * w.tensor * w.pipeline}, "
                          f"not gpus = {w.gpus}")
    if not 0.0 <= w.overlap <= 1.0 or min(w.gpus, w.steps, w.data, w.expert) < 1 or w.compute_ms < 0 \
            or not math.isfinite(w.parameters) or w.parameters <= 0 or not w.nic_service_years > 0:
        raise ConfigError(f"{where}: overlap must be 0..1, gpus, steps and degrees >= 1, parameters > 0, "
                          "nic_service_years > 0")
    return w


def load_workload(name_or_path: str | Path) -> Workload:
    """A workload by name (``llama-70b-1024``, shipped) or by path to a YAML file."""
    path = Path(name_or_path)
    if not path.suffix:
        path = WORKLOAD_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(f"workload {name_or_path}: no such file; shipped: {', '.join(list_workloads())}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return workload_from(data, str(path))


def list_workloads() -> list[str]:
    """Names of the shipped workloads."""
    return sorted(p.stem for p in WORKLOAD_DIR.glob("*.yaml"))
