"""Read-side helpers over a run directory: inventory snapshot, host facts and telemetry.

Everything here tolerates missing or partial files: a report must render any old or broken run.
Telemetry formats are read loosely (nested dicts are flattened, unknown keys shown as they are).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from benchharness.results.store import RunDir

THERMAL_LIMIT_C = 85.0
_SPEED_KEYS_GBPS = ("speed_gbps", "link_speed_gbps", "rate_gbps", "line_rate_gbps", "nic_line_rate_gbps")
_SPEED_KEYS_MBPS = ("speed_mbps", "speed", "link_speed_mbps")
_SPLIT_HOSTS = re.compile(r"\s*(?:<->|<-|->|,|\||\s)\s*")


def flatten(data: Any, prefix: str = "", limit: int = 200) -> dict[str, Any]:
    """Nested dicts/lists to ``{"a.b": scalar}``; lists of scalars become one joined string."""
    out: dict[str, Any] = {}

    def walk(value: Any, key: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, f"{key}.{k}" if key else str(k))
        elif isinstance(value, list | tuple):
            if all(not isinstance(v, Mapping | list | tuple) for v in value):
                out[key] = ", ".join(str(v) for v in value)
            else:
                for i, v in enumerate(value):
                    walk(v, f"{key}[{i}]")
        else:
            out[key] = value

    walk(data, prefix)
    return out


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    m = re.match(r"^\s*(\d+(?:\.\d+)?)", str(value))
    return float(m.group(1)) if m else None


def inventory_hosts(info: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Host name -> vars (plus ``groups``) from the run's inventory snapshot and host list."""
    found: dict[str, dict[str, Any]] = {}

    def add(name: Any, entry: Any) -> None:
        if not name:
            return
        merged = found.setdefault(str(name), {})
        if isinstance(entry, Mapping):
            merged.update({k: v for k, v in entry.items() if k != "vars"})
            if isinstance(entry.get("vars"), Mapping):
                merged.update(entry["vars"])

    for source in (info.get("hosts"), (info.get("inventory") or {}).get("hosts")
                   if isinstance(info.get("inventory"), Mapping) else info.get("inventory")):
        if isinstance(source, Mapping):
            for name, entry in source.items():
                add(name, entry)
        elif isinstance(source, list):
            for entry in source:
                if isinstance(entry, Mapping):
                    add(entry.get("name"), entry)
                else:
                    add(entry, None)
    return found


def run_host_names(info: Mapping[str, Any]) -> list[str]:
    """Names of the hosts this run used (falls back to every inventory host)."""
    hosts = info.get("hosts")
    if isinstance(hosts, list) and hosts:
        return [str(h.get("name")) if isinstance(h, Mapping) else str(h) for h in hosts]
    if isinstance(hosts, Mapping) and hosts:
        return [str(h) for h in hosts]
    return list(inventory_hosts(info))


def split_hosts(value: Any, known: Iterable[str] = ()) -> list[str]:
    """Host names in a label value (``a<->b``, ``a,b``, a list), matched against known names."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    text = str(value)
    known_set = set(known)
    if text in known_set:
        return [text]
    parts = [p for p in _SPLIT_HOSTS.split(text) if p]
    if known_set and not all(p in known_set for p in parts):
        # e.g. "gpu-01-gpu-02": find known names inside, longest first
        hits, rest = [], text
        for name in sorted(known_set, key=len, reverse=True):
            if name in rest:
                hits.append(name)
                rest = rest.replace(name, " ")
        return hits or parts
    return parts


def read_facts(run: RunDir) -> dict[str, Any]:
    """Host -> facts dict from ``telemetry/facts/<host>.json``."""
    folder = run.path / "telemetry" / "facts"
    facts: dict[str, Any] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            facts[path.stem] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            facts[path.stem] = {"error": f"unreadable {path.name}"}
    return facts


def nic_entries(host_facts: Any) -> list[dict[str, Any]]:
    """The NIC records in one host's facts (``nics`` as list or name-keyed dict)."""
    if not isinstance(host_facts, Mapping):
        return []
    nics = host_facts.get("nics") or host_facts.get("nic") or []
    if isinstance(nics, Mapping) and isinstance(nics.get("devices"), list):
        nics = nics["devices"]  # the probe's shape: {"devices": [...], "skipped": [...]}
    if isinstance(nics, Mapping):
        return [{"name": k, **v} if isinstance(v, Mapping) else {"name": k, "value": v}
                for k, v in nics.items()]
    out = [dict(n) for n in nics if isinstance(n, Mapping)] if isinstance(nics, list) else []
    for nic in out:
        nic.setdefault("name", nic.get("netdev"))
    return out


def nic_speed_gbps(nic: Mapping[str, Any]) -> float | None:
    """Link speed of one NIC record in Gbit/s (keys in Gbit/s, or ethtool's Mb/s)."""
    flat = flatten(nic)
    for key in _SPEED_KEYS_GBPS:
        for k, v in flat.items():
            if k.split(".")[-1] == key and (speed := _as_float(v)):
                return speed
    for key in _SPEED_KEYS_MBPS:
        for k, v in flat.items():
            if k.split(".")[-1] == key and (speed := _as_float(v)) and speed > 0:
                return speed / 1000.0
    return None


def detected_line_rate(host_facts: Any, netdev: str | None = None) -> float | None:
    """Detected link speed of a host: its benchmark netdev when named, else its fastest NIC."""
    speeds: list[float] = []
    for nic in nic_entries(host_facts):
        speed = nic_speed_gbps(nic)
        if speed is None:
            continue
        names = {str(nic.get(k)) for k in ("name", "netdev", "ifname", "rdma_dev", "device")}
        if netdev and netdev in names:
            return speed
        speeds.append(speed)
    return max(speeds) if speeds else None


def line_rates(info: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, float]:
    """Host -> line rate (Gbit/s): inventory ``nic_line_rate_gbps``, else detected link speed."""
    rates: dict[str, float] = {}
    inv = inventory_hosts(info)
    for name in set(inv) | set(facts):
        rate = _as_float(inv.get(name, {}).get("nic_line_rate_gbps"))
        if not rate:
            netdev = inv.get(name, {}).get("netdev") or inv.get(name, {}).get("rdma_dev")
            rate = detected_line_rate(facts.get(name), netdev)
        if rate:
            rates[name] = rate
        for rail in inventory_rails(inv.get(name, {})):
            own = _as_float(rail.get("line_rate_gbps")) or detected_line_rate(facts.get(name), rail.get("netdev"))
            if own or rate:
                rates[f"{name}.{rail['name']}"] = own or rate  # type: ignore[assignment]
    return rates


def inventory_rails(host: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rails of one host of the inventory snapshot (``inventory_hosts`` entry), each with ``name``."""
    rails = host.get("rails")
    if not isinstance(rails, list):
        return []
    return [dict(r) for r in rails if isinstance(r, Mapping) and r.get("name")]


def _pcie_downgrades(host: str, nic: Mapping[str, Any]) -> list[dict[str, Any]]:
    """PCIe link running below its capability (``x_width`` vs ``x_max_width`` style keys)."""
    flat = flatten(nic)
    found = []
    for key, value in flat.items():
        leaf = key.split(".")[-1]
        if "max" in leaf or not re.search(r"(width|speed)", leaf) or "pcie" not in key.lower():
            continue
        prefix = key[: -len(leaf)]
        for cap_leaf in (f"max_{leaf}", leaf.replace("link_", "max_link_"), f"{leaf}_max",
                         leaf.replace("current", "max"), leaf.replace("cur_", "max_")):
            cap = flat.get(prefix + cap_leaf)
            if cap_leaf == leaf or cap is None:
                continue
            now, best = _as_float(value), _as_float(cap)
            if now and best and now < best:
                name = nic.get("name") or nic.get("netdev") or "NIC"
                found.append({"host": host, "kind": "pcie_downgraded",
                              "message": f"{name}: PCIe {leaf} {value} below capability {cap}"})
            break
    return found


def telemetry_warnings(run: RunDir, info: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Things in telemetry that may explain a result: failed/warned preflight checks, PCIe links
    below capability, NIC NUMA node differing from the benchmark's NUMA binding, link speed below
    the inventory line rate, and temperatures at or above ``THERMAL_LIMIT_C``."""
    info = info if info is not None else run.run_info()
    warnings: list[dict[str, Any]] = []
    for v in read_preflight(run):
        if str(v.get("status", "")).lower() in ("fail", "warn", "failed", "warning"):
            warnings.append({"host": v.get("host"), "kind": v.get("check", "preflight"),
                             "message": str(v.get("message", ""))})
    inv = inventory_hosts(info)
    for host, hf in read_facts(run).items():
        hvars = inv.get(host, {})
        want_numa = hvars.get("numa_node", hvars.get("numa"))
        for nic in nic_entries(hf):
            warnings.extend(_pcie_downgrades(host, nic))
            node = nic.get("numa_node")
            if want_numa is not None and node is not None and str(node) != str(want_numa) \
                    and str(node) != "-1":
                warnings.append({"host": host, "kind": "numa_mismatch",
                                 "message": f"{nic.get('name', 'NIC')} on NUMA node {node}, "
                                            f"benchmark bound to node {want_numa}"})
        rate = _as_float(hvars.get("nic_line_rate_gbps"))
        seen = detected_line_rate(hf, hvars.get("netdev") or hvars.get("rdma_dev"))
        if rate and seen and seen < rate:
            warnings.append({"host": host, "kind": "link_speed",
                             "message": f"link at {seen:g} Gbit/s, inventory says {rate:g}"})
    for host, peak in max_temperatures(run).items():
        if peak >= THERMAL_LIMIT_C:
            warnings.append({"host": host, "kind": "thermal",
                             "message": f"temperature reached {peak:.0f} °C"})
    seen_keys: set[tuple[Any, ...]] = set()
    unique = []
    for w in warnings:
        key = (w["host"], w["kind"], w["message"])
        if key not in seen_keys:
            seen_keys.add(key)
            unique.append(w)
    return unique


def read_preflight(run: RunDir) -> list[dict[str, Any]]:
    """Preflight verdicts (``telemetry/preflight.json``: a list, or ``{"verdicts": [...]}``)."""
    try:
        data = run.read_json("telemetry/preflight.json", [])
    except (OSError, json.JSONDecodeError):
        return []
    if isinstance(data, Mapping):
        data = data.get("verdicts", [])
    return [dict(v) for v in data if isinstance(v, Mapping)] if isinstance(data, list) else []


def sampler_series(run: RunDir) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """Per measure (``cpu_pct`` mean of cores, ``temp_c`` hottest sensor, other numeric fields)
    -> host -> [(t, value)] from ``telemetry/samples/<step>/<host>.jsonl``, time-sorted."""
    root = run.path / "telemetry" / "samples"
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for path in sorted(root.glob("*/*.jsonl")) if root.is_dir() else []:
        host = path.stem
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                t = _as_float(rec.get("t")) if isinstance(rec, Mapping) else None
                if t is None:
                    continue
                for measure, value in _sampler_values(rec).items():
                    out.setdefault(measure, {}).setdefault(host, []).append((t, value))
    for per_host in out.values():
        for points in per_host.values():
            points.sort()
    return out


def _sampler_values(rec: Mapping[str, Any]) -> dict[str, float]:
    values: dict[str, float] = {}
    for key, val in rec.items():
        if key == "t":
            continue
        lowered = key.lower()
        nums: list[float] = []
        if isinstance(val, Mapping):
            nums = [f for v in val.values() if (f := _as_float(v)) is not None]
        elif isinstance(val, list):
            nums = [f for v in val if (f := _as_float(v)) is not None]
        elif (f := _as_float(val)) is not None and not isinstance(val, str):
            nums = [f]
        if not nums:
            continue
        if "temp" in lowered:
            values["temp_c"] = max(max(nums), values.get("temp_c", -math.inf))
        elif lowered.startswith("cpu"):
            values["cpu_pct"] = sum(nums) / len(nums)
        elif len(nums) == 1:
            values[key] = nums[0]
    return values


def max_temperatures(run: RunDir) -> dict[str, float]:
    """Hottest temperature seen per host in the samplers."""
    temps = sampler_series(run).get("temp_c", {})
    return {host: max(v for _, v in pts) for host, pts in temps.items() if pts}


_INTERESTING = re.compile(r"err|drop|discard|retrans|pause|ecn|cnp|timeout|out_of_seq|nak|"
                          r"retry|symbol|link_down|overflow|congest", re.IGNORECASE)


def counter_rows(run: RunDir, limit: int = 300) -> tuple[list[dict[str, Any]], int]:
    """Non-zero counter deltas ``(step, host, counter, delta)``; error-like counters first.

    Returns the rows (at most ``limit``) and how many there were in all.
    """
    root = run.path / "telemetry" / "counters"
    rows: list[dict[str, Any]] = []
    for path in sorted(root.glob("*.json")) if root.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        hosts = data.get("hosts", data) if isinstance(data, Mapping) else {}
        for host, counters in hosts.items() if isinstance(hosts, Mapping) else []:
            for name, delta in flatten(counters, limit=5000).items():
                value = _as_float(delta) if not isinstance(delta, str) else None
                if value:
                    rows.append({"step": path.stem, "host": host, "counter": name, "delta": value,
                                 "notable": bool(_INTERESTING.search(name))})
    rows.sort(key=lambda r: (not r["notable"], r["step"], r["host"], r["counter"]))
    return rows[:limit], len(rows)
