"""Soft-RoCE (``rdma_rxe``) for the loopback lab, kept apart from the plain Ethernet lab.

Layout. Before about Linux 7.1, rxe opens its UDP/4791 receive socket in the initial network
namespace only, so an rxe device bound to a netdev inside a lab namespace can send but never
receives. The lab therefore picks one of two layouts from the kernel version:

* ``shared`` (kernels older than 7.1): one rxe device ``rxe<lab index>`` bound to the lab's
  bridge in the root namespace, with RDMA in the default *shared* netns mode so every lab
  namespace sees it. Every host gets that device as ``rdma_dev`` and the GID index of the
  bridge's IPv4 address (which ``gid_ip`` names, for preflight); perftest's out-of-band exchange
  still goes over the host's own address, and rxe carries the RDMA traffic over its loopback path. It exercises verbs, the tools and the
  harness end to end, but the bytes do not cross the hosts' veths, so shaping does not apply.
* ``per-host`` (7.1 and newer, where rxe is namespace aware): one rxe device ``rxe<index>_h<N>``
  per host, created inside the host's namespace on its ``eth0``, so RDMA traffic crosses the
  veth and the bridge like the TCP traffic does.

This path needs a kernel with ``CONFIG_RDMA_RXE``; the development machines have none, so it
is checked (``rxe_missing_reason``) before the lab creates anything.
"""

from __future__ import annotations

import gzip
import ipaddress
import platform
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchharness.core.errors import LabError

RXE_MODULE = "rdma_rxe"
NETNS_AWARE_KERNEL = (7, 1)
SYSFS_IB = Path("/sys/class/infiniband")

Runner = Callable[[str, list[str]], str]
"""``run(step, argv) -> stdout``; raises LabError naming the step on failure."""


def _config_value(config_text: str, key: str) -> str | None:
    match = re.search(rf"^{key}=(\S+)$", config_text, re.MULTILINE)
    return match.group(1) if match else None


def rxe_missing_reason(release: str, config_text: str | None, module_loaded: bool,
                       module_file: bool) -> str | None:
    """Why soft-RoCE cannot be created on this kernel, or None when it can (pure)."""
    if module_loaded:
        return None
    prefix = f"soft-RoCE needs kernel module {RXE_MODULE}, which kernel {release} does not have"
    hint = ("; it comes with Debian's linux-image-amd64 kernel, with Ubuntu's "
            f"linux-modules-extra-{release}, or any kernel built with CONFIG_RDMA_RXE")
    if config_text is None:
        return None if module_file else f"{prefix} (no {RXE_MODULE}.ko under /lib/modules/{release}){hint}"
    rxe = _config_value(config_text, "CONFIG_RDMA_RXE")
    if rxe == "y":
        return None
    if rxe == "m" and _config_value(config_text, "CONFIG_MODULES") == "y" and module_file:
        return None
    if _config_value(config_text, "CONFIG_INFINIBAND") is None:
        why = "CONFIG_INFINIBAND is not set"
    elif rxe is None:
        why = "CONFIG_RDMA_RXE is not set"
    elif _config_value(config_text, "CONFIG_MODULES") != "y":
        why = "CONFIG_RDMA_RXE=m but module loading is off"
    else:
        why = f"CONFIG_RDMA_RXE=m but no {RXE_MODULE}.ko under /lib/modules/{release}"
    return f"{prefix} ({why}){hint}"


def _kernel_config(release: str) -> str | None:
    proc = Path("/proc/config.gz")
    try:
        if proc.exists():
            return gzip.decompress(proc.read_bytes()).decode("utf-8", "replace")
        boot = Path(f"/boot/config-{release}")
        return boot.read_text() if boot.exists() else None
    except OSError:
        return None


def check_rxe() -> None:
    """Raise LabError (one line: module and kernel version) unless rdma_rxe can be used here."""
    release = platform.release()
    modules = Path("/lib/modules") / release
    module_file = modules.is_dir() and any(modules.rglob(f"{RXE_MODULE}.ko*"))
    reason = rxe_missing_reason(release, _kernel_config(release),
                                Path(f"/sys/module/{RXE_MODULE}").exists(), module_file)
    if reason:
        raise LabError(reason)


def rxe_layout(release: str) -> str:
    """``per-host`` on kernels where rxe works inside network namespaces, else ``shared``."""
    numbers = [int(n) for n in re.findall(r"\d+", release)[:2]]
    return "per-host" if tuple(numbers) >= NETNS_AWARE_KERNEL else "shared"


def mapped_gid(address: str) -> str:
    """The IPv4-mapped GID of ``address`` as sysfs prints it (``0000:...:ffff:c612:0001``)."""
    raw = ipaddress.IPv6Address(f"::ffff:{address}").packed.hex()
    return ":".join(raw[i:i + 4] for i in range(0, 32, 4))


def find_gid_index(dev: str, address: str, port: int = 1, timeout_s: float = 5.0,
                   sysfs: Path = SYSFS_IB) -> int:
    """Index of the RoCE v2 GID that carries ``address`` on ``dev``; waits for the GID table."""
    want = mapped_gid(address)
    gids = sysfs / dev / "ports" / str(port) / "gids"
    types = sysfs / dev / "ports" / str(port) / "gid_attrs" / "types"
    deadline = time.monotonic() + timeout_s
    while True:
        for entry in sorted(gids.glob("*"), key=lambda p: int(p.name) if p.name.isdigit() else -1):
            try:
                if entry.read_text().strip() != want:
                    continue
                kind = (types / entry.name).read_text().strip()
            except OSError:
                continue
            if kind.lower() == "roce v2":
                return int(entry.name)
        if time.monotonic() >= deadline:
            raise LabError(f"rdma device {dev} has no RoCE v2 GID for {address} after {timeout_s:.0f} s")
        time.sleep(0.1)


def setup_rxe(run: Runner, index: int, bridge: str, gateway: str,
              hosts: Sequence[tuple[str, str, str]], made: list[str]) -> dict[str, dict[str, object]]:
    """Create the lab's rxe devices; ``hosts`` is (name, netns, address).

    Appends each device to ``made`` as soon as it exists (so a failure half-way can be torn
    down) and returns per-host inventory vars ``rdma_dev`` / ``rdma_port`` / ``gid_index``.
    """
    layout = rxe_layout(platform.release())
    host_vars: dict[str, dict[str, object]] = {}
    if layout == "shared":
        if "netns shared" not in run("check RDMA netns mode", ["rdma", "system", "show"]):
            raise LabError("soft-RoCE lab needs RDMA netns mode 'shared' (rdma system set netns shared)")
        dev = f"rxe{index}"
        run(f"create rxe device {dev}", ["rdma", "link", "add", dev, "type", "rxe", "netdev", bridge])
        made.append(dev)
        gid = find_gid_index(dev, gateway)
        for name, _netns, _address in hosts:
            # gid_ip: the GID carries the bridge's address, not the host's (preflight checks it)
            host_vars[name] = {"rdma_dev": dev, "rdma_port": 1, "gid_index": gid, "gid_ip": gateway}
        return host_vars
    for name, netns, address in hosts:
        dev = f"rxe{index}_{name}"
        run(f"create rxe device {dev}", ["ip", "netns", "exec", netns, "rdma", "link", "add", dev,
                                         "type", "rxe", "netdev", "eth0"])
        made.append(dev)
        host_vars[name] = {"rdma_dev": dev, "rdma_port": 1, "gid_index": find_gid_index(dev, address)}
    return host_vars


def teardown_rxe(devices: Sequence[str]) -> list[str]:
    """Delete the lab's rxe devices; returns errors (a device already gone is not one)."""
    errors = []
    for dev in devices:
        if not (SYSFS_IB / dev).exists():
            continue
        proc = subprocess.run(["rdma", "link", "delete", dev], capture_output=True, text=True, check=False)
        if proc.returncode != 0 and (SYSFS_IB / dev).exists():
            errors.append(f"rdma link delete {dev}: {proc.stderr.strip()}")
    return errors
