"""Small helpers that several tool adapters share (not an adapter: the registry skips it)."""

from __future__ import annotations

import importlib.util
import posixpath
from collections.abc import Mapping
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Host
from benchharness.tools.base import ToolFacts

#: numactl pins the tools to the NIC's NUMA node (perftest, iperf3).
NUMACTL = ToolFacts("numactl", apt=("numactl",), dnf=("numactl",))
#: Printed on stderr by the NUMA wrapper: ``BENCH_NUMA=<node>`` or ``BENCH_NUMA=none (why)``.
NUMA_MARKER = "BENCH_NUMA="
# One line (``;``, no newline), so that ``bench plan`` prints each command on one line.
_NUMA_SCRIPT = (
    'p="$1"; shift; n=$(cat "$p" 2>/dev/null); '
    'case "$n" in ""|*[!0-9]*) echo "' + NUMA_MARKER + 'none ($p: ${n:-unreadable})" >&2; '
    'exec "$@";; esac; '
    'if command -v numactl >/dev/null 2>&1; then echo "' + NUMA_MARKER + '$n" >&2; '
    'exec numactl --cpunodebind="$n" --membind="$n" "$@"; fi; '
    'echo "' + NUMA_MARKER + 'none (numactl missing)" >&2; exec "$@"')


#: Where the harness' own host programs (``benchharness/onhost``) are copied on every host.
ONHOST_DIR = "/tmp/benchharness"


def onhost_uploads(remote_dir: str, *modules: str) -> tuple[tuple[str, str], ...]:
    """``Command.uploads`` for ``modules`` of ``benchharness.onhost``: each file into ``remote_dir``
    (host programs import their siblings from the folder they run in)."""
    out = []
    for module in modules:
        spec = importlib.util.find_spec(f"benchharness.onhost.{module}")
        if spec is None or spec.origin is None:
            raise ToolFailure("tool_missing", f"benchharness.onhost.{module} is not installed")
        out.append((spec.origin, posixpath.join(remote_dir, f"{module}.py")))
    return tuple(out)


def numa_prefix(host: Host, enabled: bool = True) -> list[str]:
    """argv prefix that runs a tool on the NUMA node of ``host``'s NIC (a rail view: its rail's).

    The inventory's ``numa_node`` pins with ``numactl --cpunodebind=N --membind=N``. Otherwise a
    small fixed ``sh`` script reads the node from sysfs (``/sys/class/net/<netdev>/device/numa_node``,
    or ``/sys/class/infiniband/<rdma_dev>/device/...``) and pins when the kernel knows one;
    ``numactl --cpunodebind=netdev:DEV`` itself fails outright on hosts whose NIC has no node
    (single-socket machines, VMs). The script reports the node it used on stderr (``NUMA_MARKER``).
    Empty when ``enabled`` is false or the host names no NIC.
    """
    if not enabled:
        return []
    node = host.var("numa_node")
    if node is not None:
        return ["numactl", f"--cpunodebind={node}", f"--membind={node}"]
    if host.var("netdev"):
        path = f"/sys/class/net/{host.var('netdev')}/device/numa_node"
    elif host.var("rdma_dev"):
        path = f"/sys/class/infiniband/{host.var('rdma_dev')}/device/numa_node"
    else:
        return []
    return ["sh", "-c", _NUMA_SCRIPT, "bench-numa", path]


def reject_unknown(tool: str, params: Mapping[str, Any], known: Mapping[str, Any]) -> None:
    """ValueError naming the parameters ``tool`` does not have, their values and the known ones."""
    unknown = sorted(set(params) - set(known))
    if unknown:
        given = ", ".join(f"{k}={params[k]!r}" for k in unknown)
        raise ValueError(f"{tool}: unknown parameter(s) {given}; known: {', '.join(sorted(known))}")
