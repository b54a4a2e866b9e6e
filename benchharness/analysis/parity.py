"""Parity of set-up: were the compared runs set up alike?

For each run, what the probe read on its hosts (``telemetry/facts/<host>.json``) and what the
inventory told the tools: NIC firmware and driver, kernel, MTU, PFC and ECN, GID index and
traffic class per rail, and every program version the probe found (NCCL/RCCL included, as the
probe's ``tools`` section reports them). Each run's value is counted over its hosts
("28.39 on 3 of 4 hosts, 28.40 on 1"); a fact whose values differ between runs is named in a
sentence ("A's MTU 9000 vs B's 1500", "B ran firmware 28.39 on 3 of 4 hosts (28.40 on 1)").
A fact a host cannot give reads "not available on <driver>", never a value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchharness.core.model import Host
from benchharness.results import runview
from benchharness.results.store import RunDir
from benchharness.telemetry.fabric_checks import nic_qos
from benchharness.telemetry.rail_facts import RailFacts, available, rail_facts
from benchharness.telemetry.summary import is_probe_facts

#: Facts per rail or host, in the order the table shows them: key -> title.
FACTS = {"firmware": "firmware", "driver": "driver", "kernel": "kernel", "mtu": "MTU", "pfc": "PFC",
         "ecn": "ECN", "gid_index": "GID index", "traffic_class": "traffic class"}
NOT_PROBED = "not probed"
TOOL_PREFIX = "tool:"


@dataclass(frozen=True)
class ParityRow:
    """One fact across runs: each run's text (label -> text), whether runs differ, and the sentence."""

    fact: str
    title: str
    values: dict[str, str]
    differs: bool
    sentence: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"fact": self.fact, "title": self.title, "values": dict(self.values),
                "differs": self.differs, "sentence": self.sentence}


@dataclass(frozen=True)
class Parity:
    """The set-up of each compared run, fact by fact."""

    labels: list[str]
    rows: list[ParityRow]

    @property
    def sentences(self) -> list[str]:
        """The differences, one sentence per fact that differs."""
        return [r.sentence for r in self.rows if r.differs]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: runs, rows and the sentences of the differences."""
        return {"runs": list(self.labels), "rows": [r.to_dict() for r in self.rows],
                "differences": self.sentences}


def _joined(per_rail: Sequence[tuple[str, str]]) -> str:
    """One host's value over its rails: the value, or ``9000 on rail0-rail6, 1500 on rail7``."""
    values = list(dict.fromkeys(v for _, v in per_rail))
    if len(values) <= 1:
        return values[0] if values else ""
    return ", ".join(f"{v} on {'+'.join(r for r, w in per_rail if w == v)}" for v in values)


def _missing(rf: RailFacts) -> str:
    driver = (rf.nic or {}).get("driver")
    return f"not available on {driver}" if driver else "not read"


def _firmware(rf: RailFacts) -> str:
    fw = (rf.nic or {}).get("firmware")
    if isinstance(fw, str) and fw:
        return fw
    fw = (rf.rdma or {}).get("fw_ver")
    return str(fw) if fw else _missing(rf)


def _driver(rf: RailFacts) -> str:
    nic = rf.nic or {}
    if not nic.get("driver"):
        return "not read"
    return " ".join(str(x) for x in (nic.get("driver"), nic.get("driver_version")) if x)


def _qos(rf: RailFacts, facts: Mapping[str, Any]) -> tuple[str, str]:
    """PFC and ECN of a rail's netdev from the probe's fabric section."""
    fabric = facts.get("fabric") or {}
    entry = ((fabric.get("qos") or {}) if available(fabric) else {}).get(rf.rail.netdev or "")
    if not isinstance(entry, Mapping):
        return _missing(rf), _missing(rf)
    found = nic_qos(entry)
    pfc = found["pfc_enabled"]
    pfc_text = _missing(rf) if pfc is None else (f"priorities {','.join(map(str, pfc))}" if pfc else "off")
    if found.get("trust"):
        pfc_text += f", trust {found['trust']}"
    ecn = found["ecn"]
    if not entry.get("ecn"):
        ecn_text = _missing(rf)
    else:
        ecn_text = (f"notification {','.join(map(str, ecn['np'])) or 'off'}, "
                    f"reaction {','.join(map(str, ecn['rp'])) or 'off'}")
    return pfc_text, ecn_text


def _gid(rf: RailFacts) -> str:
    index = rf.rail.gid_index
    if index is None:
        return "not set"
    gid = next((g for g in (rf.port or {}).get("gids") or [] if isinstance(g, Mapping) and g.get("index") == index),
               None)
    return f"{index} ({gid.get('type')})" if gid and gid.get("type") else str(index)


def host_setup(host: Host, facts: Mapping[str, Any]) -> dict[str, str]:
    """Fact -> text of one host: its rails' NIC facts (``rail_facts``), kernel and tool versions."""
    rails = [rf for rf in rail_facts(host, facts) if rf.rail.netdev or rf.rail.rdma_dev]
    per: dict[str, list[tuple[str, str]]] = {k: [] for k in FACTS}
    for rf in rails:
        name = rf.rail.name
        if rf.nic is None and rf.rdma is None:
            for key in ("firmware", "driver", "mtu", "pfc", "ecn"):
                per[key].append((name, f"{rf.rail.netdev or rf.rail.rdma_dev} not found by the probe"))
        else:
            pfc, ecn = _qos(rf, facts)
            mtu = (rf.nic or {}).get("mtu")
            per["firmware"].append((name, _firmware(rf)))
            per["driver"].append((name, _driver(rf)))
            per["mtu"].append((name, str(mtu) if mtu else _missing(rf)))
            per["pfc"].append((name, pfc))
            per["ecn"].append((name, ecn))
        per["gid_index"].append((name, _gid(rf)))
        tc = rf.rail.traffic_class
        per["traffic_class"].append((name, str(tc) if tc is not None else "not set"))
    out = {k: _joined(v) for k, v in per.items() if v}
    kernel = (facts.get("host") or {}).get("kernel")
    out["kernel"] = str(kernel) if kernel else "not read"
    for name, tool in sorted((facts.get("tools") or {}).items()):
        if not isinstance(tool, Mapping):
            continue
        if tool.get("version"):
            out[f"{TOOL_PREFIX}{name}"] = str(tool["version"])
        elif tool.get("available") is False:
            out[f"{TOOL_PREFIX}{name}"] = "not found"
        for key, value in tool.items():  # a library the tool was found with (nccl_version)
            if key.endswith("_version") and value:
                out[f"{TOOL_PREFIX}{key[:-len('_version')]}"] = str(value)
    return out


def run_setup(run: RunDir) -> dict[str, dict[str, str]]:
    """Host -> fact -> text for every host of a run (``not probed`` where the probe left nothing)."""
    info = run.run_info()
    probed = {host.name: host_setup(host, hf) for host, hf in runview.stored_hosts(run, info)}
    facts = runview.read_facts(run)
    names = list(dict.fromkeys([*runview.run_host_names(info), *probed]))
    return {h: probed.get(h) or {"probe": NOT_PROBED if not is_probe_facts(facts.get(h)) else "unreadable"}
            for h in names}


def _title(fact: str) -> str:
    return fact[len(TOOL_PREFIX):] if fact.startswith(TOOL_PREFIX) else FACTS.get(fact, fact)


def _counts(setup: Mapping[str, Mapping[str, str]], fact: str) -> Counter[str]:
    """How many hosts of a run had each value of a fact (unprobed hosts count as ``not probed``)."""
    def value(values: Mapping[str, str]) -> str:
        if fact == "probe":
            return values.get("probe", "probed")
        if "probe" in values:
            return values["probe"]
        return values.get(fact) or ("not found" if fact.startswith(TOOL_PREFIX) else "not read")

    return Counter(value(v) for v in setup.values())


def _text(counts: Counter[str]) -> str:
    if len(counts) == 1:
        return next(iter(counts))
    total = sum(counts.values())
    (top, n), *rest = counts.most_common()
    return f"{top} on {n} of {total} hosts, " + ", ".join(f"{v} on {k}" for v, k in rest)


def _sentence(title: str, labels: Sequence[str], counts: Sequence[Counter[str]]) -> str:
    if all(len(c) == 1 for c in counts):
        return " vs ".join(f"{lab}'s {title + ' ' if i == 0 else ''}{next(iter(c))}"
                           for i, (lab, c) in enumerate(zip(labels, counts, strict=True)))
    parts = []
    for lab, c in zip(labels, counts, strict=True):
        total = sum(c.values())
        (top, n), *rest = c.most_common()
        if not rest:
            parts.append(f"{lab} ran {title} {top} on all {total} host{'s' if total != 1 else ''}")
        else:
            others = ", ".join(f"{v} on {k}" for v, k in rest)
            parts.append(f"{lab} ran {title} {top} on {n} of {total} hosts ({others})")
    return "; ".join(parts)


def compare_setups(setups: Sequence[Mapping[str, Mapping[str, str]]], labels: Sequence[str]) -> Parity:
    """Parity of runs' set-ups (``run_setup`` each), labelled as the comparison labels them."""
    facts = [f for f in FACTS if any(f in v for s in setups for v in s.values())]
    tools = sorted({f for s in setups for v in s.values() for f in v if f.startswith(TOOL_PREFIX)})
    if any("probe" in v for s in setups for v in s.values()):
        facts.insert(0, "probe")
    rows = []
    for fact in [*facts, *tools]:
        counts = [_counts(s, fact) for s in setups]
        # the same one value on every host of each run is parity, whatever the host counts
        differs = len({frozenset(c) for c in counts}) > 1 or any(len(c) > 1 for c in counts)
        title = _title(fact)
        rows.append(ParityRow(fact, title, {lab: _text(c) for lab, c in zip(labels, counts, strict=True)},
                              differs, _sentence(title, labels, counts) if differs else ""))
    return Parity(list(labels), rows)


def parity(runs: Sequence[RunDir], labels: Sequence[str]) -> Parity:
    """Parity of set-up of stored runs (the first is the baseline)."""
    return compare_setups([run_setup(r) for r in runs], labels)
