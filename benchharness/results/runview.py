"""Read-side helpers over a run directory: inventory snapshot, host facts and telemetry.

Everything here tolerates missing or partial files: a report must render any old or broken run.
Telemetry formats are read loosely (nested dicts are flattened, unknown keys shown as they are).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from benchharness.core.model import Host, Rail
from benchharness.core.values import as_list
from benchharness.results.store import RunDir
from benchharness.telemetry import host_checks, temperature_checks
from benchharness.telemetry.parsers.sampler import SamplerOutput, read_sampler_file
from benchharness.telemetry.rail_facts import Finding
from benchharness.telemetry.summary import is_probe_facts, pcie_text

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


def telemetry_warnings(run: RunDir, info: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Things in telemetry that may explain a result, as the one judge of host facts found them
    (``telemetry.host_checks``): the failed and warned preflight findings (per rail: PCIe link,
    NUMA node, link state and speed, GID, temperatures ...), and temperatures the samplers read
    during the run at or above their sensor's limit. A run without ``preflight.json`` (older runs)
    has its stored facts judged now, against the rails of its inventory snapshot."""
    info = info if info is not None else run.run_info()
    records = read_preflight(run)
    if not records:
        records = [f.record() for f in judge_stored_facts(run, info)]
    warnings: list[dict[str, Any]] = []
    for v in records:
        if str(v.get("status", "")).lower() in ("fail", "warn", "failed", "warning"):
            warnings.append({"host": v.get("host"), "kind": v.get("check", "preflight"),
                             "message": str(v.get("message", "")), "rail": v.get("rail"), "nic": v.get("nic")})
    for host, sensors in sensor_peaks(run).items():
        for name, peak in sensors.items():
            finding = temperature_checks.judge_sensor(host, name, peak)
            if finding.status in ("fail", "warn"):
                warnings.append({"host": host, "kind": "thermal", "message": finding.message})
    seen_keys: set[tuple[Any, ...]] = set()
    unique = []
    for w in warnings:
        key = (w["host"], w["kind"], w["message"])
        if key not in seen_keys:
            seen_keys.add(key)
            unique.append(w)
    return unique


def stored_hosts(run: RunDir, info: Mapping[str, Any]) -> list[tuple[Host, Mapping[str, Any]]]:
    """(host, probe facts) of every probed host, its rails rebuilt from the inventory snapshot."""
    inv = inventory_hosts(info)
    out: list[tuple[Host, Mapping[str, Any]]] = []
    for name, hf in read_facts(run).items():
        if not is_probe_facts(hf) or not isinstance(hf.get("nics"), Mapping):
            continue  # another tool's format: shown flattened, not judged
        hvars = {k: v for k, v in inv.get(name, {}).items() if k != "rails"}
        rails = tuple(Rail(index=i, netdev=r.get("netdev"), rdma_dev=r.get("rdma_dev"),
                           rdma_port=int(r.get("rdma_port") or 1), data_ip=r.get("data_ip"),
                           numa_node=_int(r.get("numa_node")), line_rate_gbps=_as_float(r.get("line_rate_gbps")),
                           nearest_gpus=tuple(int(g) for g in as_list(r.get("nearest_gpus"))),
                           serial=r.get("serial"), gid_index=_int(r.get("gid_index")),
                           link_layer=r.get("link_layer"))
                      for i, r in enumerate(inventory_rails(inv.get(name, {}))))
        out.append((Host(name, str(hvars.get("ansible_host") or name), vars=hvars, rails=rails), hf))
    return out


def judge_stored_facts(run: RunDir, info: Mapping[str, Any]) -> list[Finding]:
    """Findings over the run's stored probe facts, hosts and rails rebuilt from its inventory snapshot."""
    return [f for host, hf in stored_hosts(run, info)
            for f in host_checks.judge(host, hf, required_tools=()) if f.check != "cpu_governor"]


_STATUS_RANK = {"fail": 3, "warn": 2, "info": 1, "pass": 0}
RAIL_COLUMNS = ("rail", "RDMA dev", "netdev", "serial", "PCIe", "NUMA", "link", "MTU", "temperature", "findings")


def rail_rows(run: RunDir, info: Mapping[str, Any] | None = None) -> dict[str, list[dict[str, str]]]:
    """Host -> one row per rail (``RAIL_COLUMNS``, plus ``status``): what the probe saw of the rail's
    NIC and how the preflight findings judged it (``status`` the worst, ``findings`` the checks that
    failed or warned; the hottest temperature a finding reported). Findings come from
    ``preflight.json``, else are judged now (``host_checks``, the one judge)."""

    info = info if info is not None else run.run_info()
    records = read_preflight(run) or [f.record() for f in judge_stored_facts(run, info)]
    out: dict[str, list[dict[str, str]]] = {}
    for host, hf in stored_hosts(run, info):
        judged = host_checks.HostJudge(host, hf)
        rows = []
        for rf in judged.rails:
            r, nic, port = rf.rail, rf.nic or {}, rf.port or {}
            mine = [v for v in records if v.get("host") == host.name and (
                v.get("rail") == r.name if v.get("rail") else v.get("nic") == rf.label)]
            worst = max((str(v.get("status", "")).lower() for v in mine), key=lambda st: _STATUS_RANK.get(st, -1),
                        default="")
            bad = sorted({str(v.get("check", "")).removeprefix("preflight.") for v in mine
                          if str(v.get("status", "")).lower() in ("fail", "warn")})
            temps = [t for v in mine if str(v.get("check", "")).endswith("temperature")
                     and (t := _as_float(v.get("observed"))) is not None]
            if port:
                link = " ".join(str(x) for x in (port.get("state"), port.get("link_layer"), port.get("rate")) if x)
            else:
                speed = nic.get("speed_mbps")
                link = " ".join(x for x in (str(nic.get("operstate") or ""),
                                            f"{speed / 1000:g} Gb/s" if isinstance(speed, int | float) and speed > 0
                                            else "") if x)
            numa = nic.get("numa_node") if nic else (rf.rdma or {}).get("numa_node")
            rows.append({
                "rail": r.name, "RDMA dev": str(r.rdma_dev or ""), "netdev": str(r.netdev or nic.get("netdev") or ""),
                "serial": str(r.serial or nic.get("serial") or ""),
                "PCIe": pcie_text(nic.get("pcie") if nic else (rf.rdma or {}).get("pcie")),
                "NUMA": "" if numa in (None, -1) else str(numa), "link": link, "MTU": str(nic.get("mtu") or ""),
                "temperature": f"{max(temps):g} °C" if temps else "",
                "findings": ", ".join(bad) or ("none failed or warned" if worst else "not judged"),
                "status": worst,
            })
        out[host.name] = rows
    return out


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None and str(value) != "" else None
    except (TypeError, ValueError):
        return None


def sensor_peaks(run: RunDir) -> dict[str, dict[str, float]]:
    """Host -> sensor -> hottest reading in the samplers (``temps`` of each line)."""
    out: dict[str, dict[str, float]] = {}
    for _, host, sampled in sampler_files(run):
        for line in sampled.lines:
            for name, v in line.temps.items():
                peaks = out.setdefault(host, {})
                peaks[name] = max(v, peaks.get(name, -math.inf))
    return out


def read_preflight(run: RunDir) -> list[dict[str, Any]]:
    """Preflight verdicts (``telemetry/preflight.json``: a list, or ``{"verdicts": [...]}``)."""
    try:
        data = run.read_json("telemetry/preflight.json", [])
    except (OSError, json.JSONDecodeError):
        return []
    if isinstance(data, Mapping):
        data = data.get("verdicts", [])
    return [dict(v) for v in data if isinstance(v, Mapping)] if isinstance(data, list) else []


def sampler_files(run: RunDir) -> Iterator[tuple[str, str, SamplerOutput]]:
    """(safe step name, host, what its sampler printed) for every ``telemetry/samples/<step>/<host>.jsonl``,
    read by the one sampler reader (``telemetry/parsers/sampler.py``)."""
    root = run.path / "telemetry" / "samples"
    for path in sorted(root.glob("*/*.jsonl")) if root.is_dir() else []:
        yield path.parent.name, path.stem, read_sampler_file(path)


def sampler_series(run: RunDir) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """Per measure (``cpu_pct`` mean of cores, ``temp_c`` hottest sensor, ``mem_used_pct``,
    ``net_gbps`` rx+tx of the sampled netdevs) -> host -> [(wall seconds, value)], time-sorted."""
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for _, host, sampled in sampler_files(run):
        for line in sampled.lines:
            net = [v for r in line.net.values() for v in (r.rx_gbps, r.tx_gbps) if v is not None]
            values = {"cpu_pct": line.cpu_total_pct, "mem_used_pct": line.mem_used_pct,
                      "temp_c": max(line.temps.values()) if line.temps else None,
                      "net_gbps": sum(net) if net else None}
            for measure, value in values.items():
                if value is not None:
                    out.setdefault(measure, {}).setdefault(host, []).append((line.ts, value))
    for per_host in out.values():
        for points in per_host.values():
            points.sort()
    return out


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
