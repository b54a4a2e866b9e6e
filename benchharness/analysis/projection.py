"""From a measured bus-bandwidth curve to a training run's step time, days, energy and dollars.

Sources of the formulas:

- Bus bandwidth (nccl-tests, doc/PERFORMANCE.md): ``algbw = S / t`` and ``busbw = algbw * 2(n-1)/n``
  for all-reduce, ``(n-1)/n`` for all-to-all, 1 for send/recv; busbw is what each rank's link
  carries and does not depend on n for a bandwidth-bound ring. Hence the time of an all-reduce of
  ``S`` bytes over ``N`` ranks: ``t = S * 2(N-1)/N / busbw(S)``.
- Ring all-reduce (Patarasuk & Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
  workstations", JPDC 2009; Thakur, Rabenseifner & Gropp, "Optimization of collective
  communication operations in MPICH", IJHPCA 2005): ``2(N-1) alpha + 2(N-1)/N * S / B``. Tree
  (NCCL's double binary tree, Sanders, Speck & Traeff, Parallel Computing 2009): ``2 log2(N)
  alpha + 2 S / B`` for pipelined trees. The curve's own figures hold the latency at the measured
  n; projecting to N adds ``alpha * (hops(N) - hops(n))``, alpha from the smallest measured size.
- DDP (Li et al., "PyTorch Distributed", VLDB 2020): gradients are all-reduced in buckets of
  ``bucket_mb`` while backward runs; the last bucket cannot overlap. Backward is 2/3 of a step's
  compute (``C = 6N`` per token: 2N forward, 4N backward; Kaplan et al., "Scaling laws for neural
  language models", 2020). Exposed = ``max(t(last bucket), comm - overlap * backward)``.
- Expert all-to-all (dispatch and combine, forward and backward: 4 per MoE layer) and pipeline
  send/recv (each micro-batch's activation forward and its gradient back) are on the critical
  path and count in full; their bandwidth is taken from the run's all-to-all and send/recv curves
  (busbw factors (n-1)/n and 1) when every compared run measured them (suite ``torch``), else
  from the all-reduce curve, and the comparison's notes say which.
- What each group crosses (``dp_bandwidth_factor``): ranks are placed tensor-parallel first
  (Megatron-LM), so a data-parallel group has ``gpus_per_node / TP`` ranks per node and drives
  that many GPUs' share of the node's rail-aligned NICs; its all-reduce moves at the measured
  curve's busbw times (NICs the group drives / NICs the curve's ranks drove). A run's curves are
  taken at the ranks per node nearest the group's (``curves_from_cells``), so with TP 8 a
  one-rank-per-node curve is used as measured and a node-wide 8-rank curve is divided by its 8
  rails; with TP 1 the 8-rank curve applies. All-to-all and send/recv busbw are per-rank figures,
  and on rail-aligned nodes each rank has its own GPU's share of the NICs whatever the group's
  shape, so they are used as measured.
- NICs and optics (``NicCost``): each of the ``nodes x nics_per_node`` NICs, with its optics, adds
  its power to the node's for the run's hours (``nic_mwh``), and the run is charged its hours'
  share of their price over ``nic_service_years`` (straight-line depreciation, ``nic_usd``, at
  most the price); the
  whole purchase is ``nic_capex_usd``. A figure enters only where every compared run has it
  (``nic_terms``), so that a run whose NIC is not priced does not look cheaper.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from benchharness.config.workloads import Workload

MIB = 1 << 20
HOURS_PER_YEAR = 24 * 365.25


@dataclass(frozen=True)
class NicCost:
    """One scale-out NIC with its optics, as every NIC of every node counts in the projection: its
    price (USD) and power (W), None where not known, and where each figure came from."""

    price_usd: float | None = None
    power_w: float | None = None
    price_source: str = ""
    power_source: str = ""


@dataclass(frozen=True)
class Curve:
    """Bus bandwidth (GB/s = 1e9 B/s) by message size (bytes), measured over ``nranks`` ranks."""

    sizes: tuple[float, ...]
    busbw: tuple[float, ...]
    nranks: int
    #: Ranks per node when it was measured (nranks / hosts): 1 is one NIC's curve, 8 a node's.
    ranks_per_node: int = 1

    def at(self, size: float) -> float:
        """busbw at ``size``: log-log interpolation, flat beyond the measured ends."""
        xs, ys = self.sizes, self.busbw
        if size <= xs[0]:
            return ys[0]
        if size >= xs[-1]:
            return ys[-1]
        i = bisect.bisect_right(xs, size)
        x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
        f = math.log(size / x0) / math.log(x1 / x0)
        return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))

    def scaled(self, factors: Sequence[float]) -> Curve:
        """This curve with each point's busbw multiplied by a factor (a ratio or its CI bound)."""
        return replace(self, busbw=tuple(b * f for b, f in zip(self.busbw, factors, strict=True)))


def hops(n: int, algorithm: str) -> float:
    """Latency steps of an all-reduce over ``n`` ranks: ring ``2(n-1)``, tree ``2 log2 n``."""
    return 2.0 * (n - 1) if algorithm == "ring" else 2.0 * math.ceil(math.log2(max(n, 2)))


def allreduce_s(curve: Curve, size: float, n: int, algorithm: str = "ring") -> float:
    """Seconds for an all-reduce of ``size`` bytes over ``n`` ranks, from the measured curve."""
    if n <= 1 or size <= 0:
        return 0.0
    bandwidth = size * 2.0 * (n - 1) / n / (curve.at(size) * 1e9)
    small = curve.sizes[0]
    alpha = small * 2.0 * (curve.nranks - 1) / curve.nranks / (curve.busbw[0] * 1e9) / hops(curve.nranks, algorithm)
    return max(bandwidth + alpha * (hops(n, algorithm) - hops(curve.nranks, algorithm)), 0.0)


def buckets(total: float, bucket: float) -> list[float]:
    """DDP's buckets of ``bucket`` bytes over ``total`` gradient bytes (the last one the rest)."""
    full = int(total // bucket)
    rest = total - full * bucket
    return [bucket] * full + ([rest] if rest > 0 else [])


@dataclass(frozen=True)
class Projection:
    """One workload on one curve: per-step milliseconds and the whole run."""

    comm_ms: float
    exposed_ms: float
    a2a_ms: float
    p2p_ms: float
    step_ms: float
    days: float
    gpu_hours: float
    usd: float
    mwh: float
    #: The NICs' and optics' part of ``usd`` (their price's share over the run) and of ``mwh``.
    nic_usd: float = 0.0
    nic_mwh: float = 0.0
    #: What the run's NICs and optics cost to buy (``nodes x nics x price``).
    nic_capex_usd: float = 0.0


def ddp_exposed_ms(curve: Curve, grad_bytes: float, bucket_bytes: float, n: int, backward_ms: float,
                   overlap: float, algorithm: str = "ring") -> tuple[float, float]:
    """(all-reduce ms of all buckets, exposed ms) for DDP's bucketed gradient all-reduce."""
    times = [allreduce_s(curve, b, n, algorithm) * 1e3 for b in buckets(grad_bytes, bucket_bytes)]
    comm = sum(times)
    return comm, max(times[-1] if times else 0.0, comm - overlap * backward_ms)


def nics_driven(w: Workload, ranks_per_node: int) -> float:
    """NICs that ``ranks_per_node`` ranks of one group drive on a node, rail-aligned: each rank
    its own GPU's share of the node's NICs (``nics / gpus_per_node``), at most all of them."""
    return min(ranks_per_node, w.gpus_per_node) * w.nics / w.gpus_per_node


def dp_bandwidth_factor(w: Workload, curve: Curve) -> float:
    """What the data-parallel group's busbw is, as a share of ``curve``'s: the NICs one DP group
    drives on a node over the NICs the curve's ranks drove. A ring's busbw across nodes is set by
    the NICs each node's ranks use, not by the rank count (nccl-tests doc/PERFORMANCE.md: busbw is
    the per-rank link figure; with one rank per node that link is one NIC). So with TP 8 on
    8-GPU nodes a node-wide curve (8 ranks, 8 rails) is divided by 8: the group moves at one
    rail's rate; with TP 1 the node curve applies as measured."""
    return nics_driven(w, w.dp_ranks_per_node) / nics_driven(w, curve.ranks_per_node)


def needs(w: Workload) -> dict[str, bool]:
    """Which critical-path terms the workload has: expert all-to-all, pipeline send/recv."""
    return {"alltoall": bool(w.expert > 1 and w.expert_layers and w.tokens_per_gpu and w.hidden),
            "sendrecv": bool(w.pipeline > 1 and w.microbatches and w.activation_mb)}


def project(w: Workload, curve: Curve, parameters: float | None = None, alltoall: Curve | None = None,
            sendrecv: Curve | None = None, nic: NicCost | None = None) -> Projection:
    """The workload ``w`` (optionally at another parameter count, compute scaled with it) on ``curve``
    (all-reduce); the expert all-to-all and pipeline send/recv terms on their own measured curves
    when given, else on the all-reduce curve; ``nic``'s price and power on each of the run's NICs."""
    params = parameters or w.parameters
    compute = w.compute_ms * params / w.parameters
    grad = params * w.dtype_bytes / (w.tensor * w.pipeline)  # one GPU's share of the gradients
    factor = dp_bandwidth_factor(w, curve)
    dp_curve = curve if factor == 1 else curve.scaled([factor] * len(curve.busbw))
    comm, exposed = ddp_exposed_ms(dp_curve, grad, w.bucket_mb * MIB, w.data, compute * 2 / 3, w.overlap, w.algorithm)
    term = needs(w)
    a2a = 0.0
    if term["alltoall"]:
        tokens = float(w.tokens_per_gpu * w.hidden * w.dtype_bytes)
        per = tokens * (w.expert - 1) / w.expert / ((alltoall or curve).at(tokens) * 1e9)  # busbw factor (n-1)/n
        a2a = 4 * w.expert_layers * per * 1e3
    p2p = 0.0
    if term["sendrecv"]:
        size = w.activation_mb * MIB
        p2p = 2 * w.microbatches * size / ((sendrecv or curve).at(size) * 1e9) * 1e3  # busbw factor 1
    step = compute + exposed + a2a + p2p
    hours = w.steps * step / 3.6e6
    fleet = w.nodes * w.nics
    capex = fleet * nic.price_usd if nic and nic.price_usd is not None else 0.0
    nic_usd = capex * min(hours / (w.nic_service_years * HOURS_PER_YEAR), 1.0)  # at most the purchase
    nic_mwh = hours * fleet * nic.power_w / 1e6 if nic and nic.power_w is not None else 0.0
    return Projection(comm_ms=comm, exposed_ms=exposed, a2a_ms=a2a, p2p_ms=p2p, step_ms=step, days=hours / 24,
                      gpu_hours=hours * w.gpus, usd=hours * w.gpus * w.gpu_hour_usd + nic_usd,
                      mwh=hours * w.nodes * w.node_power_kw / 1000 + nic_mwh, nic_usd=nic_usd, nic_mwh=nic_mwh,
                      nic_capex_usd=capex)


def curves_from_cells(cells: Any, labels: Sequence[str], ranks_per_node: int = 1) -> dict[str, dict[str, Any]]:
    """Per run: the all-reduce ``busbw_GBps`` curve (median), and per size the ratio to the
    baseline with its 95% interval (``stats.ratio_test`` in the comparison's cells); under
    ``"terms"`` the same for the all-to-all and send/recv curves where the run measured them.

    The test with the most sizes wins; out-of-place rows are preferred where a tool prints both;
    of a run's host and rank counts, the one whose ranks per node is nearest ``ranks_per_node``
    (the workload's data-parallel group), then the most hosts.
    """
    out = collective_curves(cells, labels, "all_reduce", ranks_per_node)
    for term in TERMS:
        for lab, entry in collective_curves(cells, labels, term, ranks_per_node).items():
            if lab in out:
                out[lab].setdefault("terms", {})[term] = entry
    return out


#: The critical-path terms with a curve of their own: collective name (as the torch tool and
#: nccl-tests label it) -> what it stands for in the step.
TERMS = {"alltoall": "expert all-to-all", "sendrecv": "pipeline send/recv"}


def _shape(rows: Any) -> tuple[int, int]:
    """(ranks, hosts) of cell rows; unknown counts as 2 ranks on as many hosts."""
    def first(col: str) -> int | None:
        return int(rows[col].dropna().iloc[0]) if col in rows and rows[col].notna().any() else None

    nhosts, nranks = first("nhosts"), first("nranks")
    nranks = nranks or nhosts or 2
    return max(nranks, 2), max(nhosts or nranks, 1)


def _pick_shape(mine: Any, ranks_per_node: int) -> Any:
    """The rows of one (ranks, hosts) shape: ranks per node nearest ``ranks_per_node``, then most hosts."""
    keys = [c for c in ("nranks", "nhosts") if c in mine and mine[c].notna().any()]
    if not keys:
        return mine
    groups = [g for _, g in mine.groupby(keys, dropna=False)]

    def rank(g: Any) -> tuple[float, int]:
        nranks, nhosts = _shape(g)
        return abs(math.log(max(nranks // nhosts, 1) / ranks_per_node)), -nhosts

    return min(groups, key=rank)


def collective_curves(cells: Any, labels: Sequence[str], collective: str,
                      ranks_per_node: int = 1) -> dict[str, dict[str, Any]]:
    """Per run: the ``collective``'s busbw curve and its per-size ratios (see ``curves_from_cells``)."""
    if cells is None or cells.empty or "collective" not in cells or "size_bytes" not in cells:
        return {}
    sub = cells[(cells["metric"] == "busbw_GBps") & (cells["collective"] == collective)]
    if "placement" in sub and (sub["placement"] == "out-of-place").any():
        sub = sub[sub["placement"] == "out-of-place"]
    if "nccl_algo" in sub and sub["nccl_algo"].notna().any():
        # one curve per run: the NIC curve (NCCL_ALGO=Ring) where every run measured it, else the
        # algorithm every run shares (docs/collectives.md "The NIC curve"); no label: as deployed
        sub = sub.assign(nccl_algo=sub["nccl_algo"].fillna("default"))
        shared = set.intersection(*(set(g["nccl_algo"]) for _, g in sub.groupby("run")))
        pick = "Ring" if "Ring" in shared else (sorted(shared)[0] if shared else None)
        sub = sub[sub["nccl_algo"] == pick] if pick else sub.iloc[0:0]
    if sub.empty:
        return {}
    test = sub.groupby("test")["size_bytes"].nunique().idxmax() if "test" in sub else None
    if test is not None:
        sub = sub[sub["test"] == test]
    out: dict[str, dict[str, Any]] = {}
    for lab in labels:
        mine = sub[(sub["run"] == lab) & (sub["median"] > 0)]
        if mine.empty:
            continue
        mine = _pick_shape(mine, ranks_per_node).sort_values("size_bytes")
        if len(mine) < 2:
            continue
        nranks, nhosts = _shape(mine)
        curve = Curve(tuple(float(s) for s in mine["size_bytes"]), tuple(float(v) for v in mine["median"]),
                      nranks, ranks_per_node=max(nranks // nhosts, 1))
        out[lab] = {"curve": curve, "test": test, "sizes": list(curve.sizes),
                    "ratio": [float(r) for r in mine["ratio"]], "ratio_low": [float(r) for r in mine["ratio_ci_low"]],
                    "ratio_high": [float(r) for r in mine["ratio_ci_high"]],
                    "n": [int(n) for n in mine["n"]] if "n" in mine else []}
    return out


def term_curves(w: Workload, curves: Mapping[str, Mapping[str, Any]], labels: Sequence[str]
                ) -> tuple[list[str], list[str]]:
    """(terms measured by every run, notes): a term of the workload uses its own curve only when
    every compared run measured it (else the runs would be judged on different collectives); the
    note says which curve each term was projected from."""
    used, notes = [], []
    present = [lab for lab in labels if lab in curves]
    for term, what in TERMS.items():
        if not needs(w)[term]:
            continue
        missing = [lab for lab in present if term not in (curves[lab].get("terms") or {})]
        if missing:
            notes.append(f"{what}: projected from the all-reduce curve (no {term} curve in "
                         f"{', '.join(missing)}; run suite torch to measure it)")
        else:
            used.append(term)
            notes.append(f"{what}: projected from each run's {term} curve")
    return used, notes


def dp_notes(w: Workload, curves: Mapping[str, Mapping[str, Any]], labels: Sequence[str]) -> list[str]:
    """What curve the gradient all-reduce was projected from, per run, in the reader's words."""
    notes = []
    for lab in labels:
        if lab not in curves:
            continue
        c: Curve = curves[lab]["curve"]
        f = dp_bandwidth_factor(w, c)
        where = (f"{c.nranks} ranks, {c.ranks_per_node} per node")
        if f == 1:
            notes.append(f"gradient all-reduce in {lab}: the {where} curve as measured (a DP group of "
                         f"{w.dp_ranks_per_node} rank(s) per node with TP {w.tensor})")
        else:
            notes.append(f"gradient all-reduce in {lab}: the {where} curve x {f:.3g} (a DP group of "
                         f"{w.dp_ranks_per_node} rank(s) per node with TP {w.tensor} drives "
                         f"{nics_driven(w, w.dp_ranks_per_node):.3g} of the node's {w.nics} NICs)")
    return notes


def nic_terms(nics: Mapping[str, NicCost], labels: Sequence[str]) -> tuple[dict[str, NicCost], list[str]]:
    """(per run the NIC figures the projection uses, notes): a price or a power enters only when
    every compared run has one (else a run without it would look cheaper); the notes say which
    figures entered, per run with their sources, and which were left out and why."""
    def lacking(attr: str) -> list[str]:
        return [lab for lab in labels if getattr(nics.get(lab) or NicCost(), attr) is None]

    no_price, no_power = lacking("price_usd"), lacking("power_w")
    used: dict[str, NicCost] = {}
    notes = []
    for lab in labels:
        got = nics.get(lab) or NicCost()
        used[lab] = NicCost(None if no_price else got.price_usd, None if no_power else got.power_w,
                            got.price_source, got.power_source)
        parts = ([f"${_num(got.price_usd or 0.0)} per NIC ({got.price_source})"] if not no_price else []) + \
            ([f"{_num(got.power_w or 0.0)} W per NIC ({got.power_source})"] if not no_power else [])
        if parts:
            notes.append(f"NICs and optics in {lab}: {' and '.join(parts)}")
    for what, missing, var in (("price", no_price, "nic_price_usd / optic_price_usd"),
                               ("power", no_power, "nic_power_w / optic_power_w, or measured NIC power")):
        if missing and len(missing) < len(labels):
            notes.append(f"NIC and optics {what} left out of every run's projection: none for "
                         f"{', '.join(missing)} (inventory {var})")
        elif missing:
            notes.append(f"NIC and optics {what} not in the projection: no run has it (inventory {var})")
    return used, notes


def _project_run(w: Workload, entry: Mapping[str, Any], used: Sequence[str], parameters: float | None = None,
                 factors: Mapping[str, Sequence[float]] | None = None, nic: NicCost | None = None) -> Projection:
    """``project`` on one run's curves (``used`` terms on their own), optionally scaled per collective."""
    def curve(key: str) -> Curve:
        c: Curve = entry["curve"] if key == "all_reduce" else entry["terms"][key]["curve"]
        return c.scaled(factors[key]) if factors else c

    return project(w, curve("all_reduce"), parameters,
                   alltoall=curve("alltoall") if "alltoall" in used else None,
                   sendrecv=curve("sendrecv") if "sendrecv" in used else None, nic=nic)


def _nic_fields(nic: NicCost | None) -> dict[str, Any]:
    if nic is None:
        return {}
    return {"nic_price_usd": nic.price_usd, "nic_power_w": nic.power_w,
            "nic_price_source": nic.price_source if nic.price_usd is not None else "",
            "nic_power_source": nic.power_source if nic.power_w is not None else ""}


def compare_projection(w: Workload, curves: Mapping[str, Mapping[str, Any]], labels: Sequence[str],
                       used: Sequence[str] = (), nics: Mapping[str, NicCost] | None = None) -> list[dict[str, Any]]:
    """Per run against the baseline (``labels[0]``): the projection, the difference in days, dollars
    and MWh, and its interval from the per-size ratio CIs applied to the baseline's curves (the
    all-reduce's, and each ``used`` term's). ``nics``: each run's NIC and optics figures (as
    ``nic_terms`` leaves them), in its USD and MWh."""
    if not labels or labels[0] not in curves:
        return []
    nics = nics or {}
    base = curves[labels[0]]
    a = _project_run(w, base, used, nic=nics.get(labels[0]))
    rows = [{"run": labels[0], "baseline": True, **a.__dict__, **_nic_fields(nics.get(labels[0]))}]
    for lab in labels[1:]:
        if lab not in curves:
            continue
        other = curves[lab]
        b = _project_run(w, other, used, nic=nics.get(lab))
        row: dict[str, Any] = {"run": lab, "baseline": False, **b.__dict__, "delta_days": b.days - a.days,
                               "delta_usd": b.usd - a.usd, "delta_mwh": b.mwh - a.mwh,
                               "delta_step_ms": b.step_ms - a.step_ms, **_nic_fields(nics.get(lab))}
        reps = [n for c in (base, other) for n in c.get("n") or []]
        if reps:
            row["repeats"] = min(reps)
        pairs = [(base, other), *((base["terms"][t], other["terms"][t]) for t in used)]
        aligned = [_aligned(x, y) for x, y in pairs]
        if all(aligned):
            bounds = dict(zip(["all_reduce", *used], aligned, strict=True))
            low_bw, high_bw = (_project_run(w, base, used, factors={k: f[i] for k, f in bounds.items() if f})
                               for i in (0, 1))
            # the lower bound of the bandwidth ratio is the upper bound of the time
            row["delta_days_low"], row["delta_days_high"] = high_bw.days - a.days, low_bw.days - a.days
        else:
            x, y = pairs[aligned.index(None)]
            row["no_interval"] = no_interval_reason(x, y, labels[0], lab)
        rows.append(row)
    return rows


def no_interval_reason(base: Mapping[str, Any], other: Mapping[str, Any], base_label: str, label: str) -> str:
    """Why two curves give no interval: a run with one repetition (no spread to measure), or
    sweeps over different sizes (no ratio at some of the baseline's sizes)."""
    single = [lab for lab, c in ((base_label, base), (label, other)) if c.get("n") and max(c["n"]) < 2]
    if len(single) == 2:
        return "one repetition per run"
    if single:
        return f"one repetition in {single[0]}"
    return "the runs measured different message sizes"


def _aligned(base: Mapping[str, Any], other: Mapping[str, Any]) -> tuple[list[float], list[float]] | None:
    """(low, high) ratio factors per baseline size, when the other run has a finite CI at each."""
    by_size = dict(zip(other["sizes"], zip(other["ratio_low"], other["ratio_high"], strict=True), strict=True))
    pairs = [by_size.get(s) for s in base["sizes"]]
    if any(p is None or not all(math.isfinite(v) and v > 0 for v in p) for p in pairs):
        return None
    return [p[0] for p in pairs if p], [p[1] for p in pairs if p]


WIDE_FACTOR = 3.0
"""An interval of the difference whose far bound is more than this many times its near bound, or
that does not exclude no difference, is reported as too wide to decide rather than as figures."""


def too_wide(lo: float, hi: float) -> bool:
    """Whether a (low, high) interval of a difference in days decides nothing."""
    return lo <= 0 or hi / lo > WIDE_FACTOR


def too_wide_advice(row: Mapping[str, Any]) -> str:
    """"repeat=12 would narrow it": a t-interval narrows about as 1/sqrt(n), so four times the
    repetitions halve it."""
    reps = int(row.get("repeats") or 0)
    return f"repeat={max(4 * reps, 3)} would narrow it" if reps else "more repetitions would narrow it"


def _num(value: float) -> str:
    """3 significant digits, thousands separated: 2,760 / 3.1 / 0.0421."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _count(value: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if value >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:,.0f}"


def nic_clause(row: Mapping[str, Any], base: Mapping[str, Any] | None, baseline: str) -> str:
    """"; NICs and optics included: $2,200 and 37 W per NIC in B, $1,800 and 30 W in A" (the
    figures that entered the USD and MWh; the notes say where each came from), or ""."""
    def figures(r: Mapping[str, Any]) -> str:
        return " and ".join(([f"${_num(float(r['nic_price_usd']))}"] if r.get("nic_price_usd") is not None else [])
                            + ([f"{_num(float(r['nic_power_w']))} W"] if r.get("nic_power_w") is not None else []))

    mine = figures(row)
    if not mine:
        return ""
    theirs = f", {figures(base)} in {baseline}" if base is not None and figures(base) else ""
    return f"; NICs and optics included: {mine} per NIC in {row['run']}{theirs}"


def projection_sentence(w: Workload, row: Mapping[str, Any], baseline: str,
                        base: Mapping[str, Any] | None = None) -> str:
    """"With B, a 70B-parameter run on 1,024 GPUs takes 3.1 days longer (2.8–3.4) than with A, about
    $X and Y MWh more (workload llama-70b-1024: ...; NICs and optics included: ...)"; ``base``:
    the baseline's row, whose NIC figures the sentence names beside this run's."""
    delta = float(row["delta_days"])
    longer = delta >= 0
    if "delta_days_low" in row:
        lo, hi = sorted(float(row[k]) * (1 if longer else -1) for k in ("delta_days_low", "delta_days_high"))
        if too_wide(lo, hi):  # bounds printed as figures would invite doubt of the whole page
            interval = f" (interval too wide to decide: {too_wide_advice(row)})"
        else:
            interval = f" (95% CI {_num(lo)} to {_num(hi)})"
    else:  # said, not left out: a reader must not take the number for a certain one
        interval = f" (no interval: {row.get('no_interval') or 'no ratio intervals'})"
    usd, mwh = abs(float(row["delta_usd"])), abs(float(row["delta_mwh"]))
    return (f"With {row['run']}, a {_count(w.parameters)}-parameter run on {w.gpus:,} GPUs takes "
            f"{_num(abs(delta))} days {'longer' if longer else 'less'}{interval} than with {baseline}, "
            f"about ${_count(usd)} and {_num(mwh)} MWh {'more' if longer else 'less'} "
            f"(workload {w.name}: step {_num(row['step_ms'] / 1e3)} s, {w.steps:,} steps, "
            f"exposed all-reduce {_num(row['exposed_ms'])} ms per step{nic_clause(row, base, baseline)}).")


def step_series(w: Workload, curves: Mapping[str, Mapping[str, Any]], used: Sequence[str] = (), sizes: Sequence[float] = (
        1e9, 7e9, 13e9, 34e9, 70e9, 175e9, 405e9)) -> dict[str, list[tuple[float, float]]]:
    """Per run: (parameters, projected step seconds) for the workload at other model sizes."""
    return {lab: [(p, _project_run(w, c, used, p).step_ms / 1e3) for p in sizes] for lab, c in curves.items()}


def comparison_projection(cells: Any, labels: Sequence[str], w: Workload,
                          nics: Mapping[str, NicCost] | None = None) -> dict[str, Any]:
    """What ``bench compare`` shows: rows per run, the sentences, the notes, the step-time series.
    ``nics``: each run's NIC and optics price and power (``analysis/nic_cost.run_nic_cost``)."""
    curves = curves_from_cells(cells, labels, w.dp_ranks_per_node)
    used, notes = term_curves(w, curves, labels)
    notes += dp_notes(w, curves, labels)
    present = [lab for lab in labels if lab in curves]
    nic_used, nic_notes = nic_terms(nics or {}, present)
    rows = compare_projection(w, curves, labels, used, nic_used)
    if len(rows) < 2:
        return {}
    priced, powered = any(r["nic_capex_usd"] for r in rows), any(r["nic_mwh"] for r in rows)
    if priced or powered:
        def part(r: Mapping[str, Any]) -> str:
            bits = ([f"${_count(r['nic_capex_usd'])} to buy, ${_count(r['nic_usd'])} of it over this run"]
                    if priced else []) + ([f"{_num(r['nic_mwh'])} MWh"] if powered else [])
            return f"{r['run']} " + ", ".join(bits)
        life = f", a {w.nic_service_years:g}-year service life" if priced else ""
        nic_notes.append(f"{_count(w.nodes * w.nics)} NICs with their optics ({w.nics} per node{life}): "
                         + "; ".join(part(r) for r in rows))
    notes += nic_notes
    statements = [{"test": next(iter(curves.values()))["test"], "band": "", "metric": "busbw_GBps",
                   "run": r["run"], "decision": "projection", "text": projection_sentence(w, r, labels[0], rows[0])}
                  for r in rows if not r["baseline"]]
    return {"workload": w.name, "description": w.description, "rows": rows, "statements": statements,
            "notes": notes, "series": step_series(w, curves, used)}
