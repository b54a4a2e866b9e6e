"""The programs the hosts need, from one place: each tool adapter's ``requirements`` (its
``ToolFacts`` in ``tools/<tool>.py``) plus the telemetry's own, below.

The probe asks their versions (``probe_tools``, handed to it as JSON: it imports nothing of the
harness), preflight and ``bench doctor`` judge them (``min_versions``, ``required_tools``), the
host summary shows them (``shown``) and ``bench provision`` installs their packages
(``apt_packages``).
"""

from __future__ import annotations

import json

from benchharness.tools import tool_facts
from benchharness.tools.base import ToolFacts

#: What the probe and the sampler read NICs, PCIe, sensors and RDMA devices with.
TELEMETRY: tuple[ToolFacts, ...] = (
    ToolFacts("ethtool", ("ethtool", "--version"), r"ethtool version\s+(\d+(?:\.\d+)*)",
              apt=("ethtool",), dnf=("ethtool",)),
    ToolFacts("pciutils", apt=("pciutils",), dnf=("pciutils",)),
    ToolFacts("lm-sensors", apt=("lm-sensors",), dnf=("lm_sensors",)),
    ToolFacts("pyverbs", apt=("python3-pyverbs",), dnf=("python3-pyverbs",)),
    ToolFacts("infiniband-diags", apt=("infiniband-diags",), dnf=("infiniband-diags",)),
)
#: Found by the probe itself (not a version command): shown in the host summary after the tools.
PROBED_ELSEWHERE = ("nccl-tests", "rccl", "python")


def all_facts() -> dict[str, ToolFacts]:
    """Every program the hosts need, by name: the adapters' first, then the telemetry's."""
    found = dict(tool_facts())
    for facts in TELEMETRY:
        found.setdefault(facts.name, facts)
    return found


def probe_tools() -> dict[str, dict[str, object]]:
    """Name -> ``{"argv", "pattern"}`` of every program with a version command (the probe's ``--tools``)."""
    return {name: f.probe_entry() for name, f in all_facts().items() if f.version_argv}


def probe_tools_arg() -> str:
    """``probe_tools()`` as the one JSON argument of ``probe.py --tools``."""
    return json.dumps(probe_tools(), sort_keys=True, separators=(",", ":"))


def min_versions() -> dict[str, str]:
    """Oldest versions the harness's command lines and parsers rely on."""
    return {name: f.min_version for name, f in all_facts().items() if f.min_version}


def required_tools() -> tuple[str, ...]:
    """Programs preflight fails a host for lacking (the pair tools every suite may use)."""
    return tuple(name for name, f in all_facts().items() if f.required)


def shown() -> tuple[str, ...]:
    """Programs whose versions the host summary shows: the required ones, the adapters' other
    versioned programs, then those the probe finds itself."""
    facts = tool_facts()
    versioned = sorted((not f.required, name) for name, f in facts.items() if f.version_argv)
    return tuple(dict.fromkeys([*(name for _, name in versioned), *PROBED_ELSEWHERE]))


def apt_packages() -> list[str]:
    """Debian/Ubuntu packages of every program the hosts need (``bench provision``), each once."""
    return list(dict.fromkeys(p for f in all_facts().values() for p in f.apt))


def install_hint(name: str) -> str:
    """How to install ``name`` (``apt-get install iperf3 / dnf install iperf3``), or empty."""
    facts = all_facts().get(name)
    return facts.install_hint() if facts else ""
