"""Loopback lab: N hosts as network namespaces on one bridge, each with a real sshd and hostname.

Lab ``NAME`` with index I owns the I-th /24 of 198.18.0.0/15 (RFC 2544), e.g. 198.18.I.0/24.
Root namespace: bridge ``bh-NAME`` holding the gateway .254, so the harness reaches the hosts.
Host hN: namespace ``bh-NAME-hN`` with ``lo`` and ``eth0`` (.N/24, no default route: traffic
never leaves the lab), the other end of eth0 being the bridge port ``bhIhN``; an sshd started
under its own UTS namespace (hostname hN). Shaped hosts get a tbf qdisc on both ends of their
veth. With ``rails=R`` every host also has one interface per rail (``eth1`` .. ``ethR``), rail k
on a bridge ``bh<I>r<k>`` of its own and its own /24 of 198.18.0.0/15 (host hN is .N there too),
like the NICs of a GPU node; ``shape=h3.rail1:1gbit`` shapes one rail of one host, ``h3:2gbit``
every interface of h3. Files under ``<base>/NAME``: lab.json (state: exactly what was made), inventory.ini,
known_hosts, id_ed25519 (client key), mpi-ssh (Open MPI rsh agent), hosts/hN/ (host key,
sshd_config, sshd.pid, sshd.log). Functions print nothing; the CLI does.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchharness.core.errors import LabError
from benchharness.lab import cgroups as lab_cgroups
from benchharness.lab import commands as lab_commands
from benchharness.lab import jump as lab_jump
from benchharness.lab import rdma as lab_rdma
from benchharness.lab.files import (
    parse_rate_gbps,
    sshd_config,
    write_files,
)

DEFAULT_BASE = Path("/run/benchharness/labs")
LAB_NET = ipaddress.ip_network("198.18.0.0/15")
GATEWAY = 254
MAX_HOSTS = 200
MAX_RAILS = 8
SSHD = "/usr/sbin/sshd"
SSHD_WAIT_S = 15.0
NETNS_DIR = Path("/run/netns")
SYS_NET = Path("/sys/class/net")
_NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,11}")  # bh-NAME must fit IFNAMSIZ (15)
_NOT_ROOT = "bench lab needs root (network namespaces, veth, sshd); run as root"


@dataclass
class LabHost:
    """One lab host: a network namespace with its address, bridge port and sshd."""

    name: str
    netns: str
    address: str
    veth: str
    sshd_pid: int | None
    shape: str | None
    #: One entry per rail: name, netdev, address, veth, shape.
    rails: tuple[dict[str, Any], ...] = ()


@dataclass
class LabInfo:
    """A lab that is up: where its files are and what it is made of."""

    name: str
    dir: Path
    inventory: Path
    known_hosts: Path
    key: Path
    subnet: str
    bridge: str
    hosts: list[LabHost]


def parse_shape(spec: str, hosts: int | None = None, rails: int | None = None) -> dict[str, str]:
    """``"h2:2gbit,h3.rail1:5gbit"`` -> ``{"h2": "2gbit", "h3.rail1": "5gbit"}``; ValueError on a bad spec.

    ``hN`` shapes every interface of a host, ``hN.railK`` one rail of it. With ``hosts`` (and
    ``rails``), a host beyond h1..h<hosts> (a rail beyond rail<rails-1>) is an error too.
    """
    shapes: dict[str, str] = {}
    for part in spec.split(","):
        host, sep, rate = part.strip().partition(":")
        m = re.fullmatch(r"(h[1-9]\d*)(?:\.rail(\d+))?", host)
        if not sep or not m:
            raise ValueError(f"bad shape {part.strip()!r}: expected hN:RATE or hN.railK:RATE, e.g. h2:2gbit")
        parse_rate_gbps(rate)
        if hosts is not None and int(m.group(1)[1:]) > hosts:
            raise ValueError(f"shape names unknown host {m.group(1)}: the lab has h1..h{hosts}")
        if m.group(2) is not None and rails is not None and int(m.group(2)) >= rails:
            raise ValueError(f"shape names unknown rail {host}: the lab has "
                             + (f"rail0..rail{rails - 1}" if rails else "no rails (rails=N)"))
        if host in shapes:
            raise ValueError(f"shape names {host} twice")
        shapes[host] = rate.strip().lower()
    return shapes


def _run(step: str, argv: list[str], log: Path | None = None, timeout: float = 30.0) -> str:
    """Run argv; on failure raise LabError naming the step, the command and its stderr."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{step} failed: {shlex.join(argv)}: {exc}") from exc
    if proc.returncode != 0:
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        if log and log.exists():
            lines += [ln.strip() for ln in log.read_text(errors="replace").splitlines()[-3:]]
        why = "; ".join(lines[-3:]) or f"exit status {proc.returncode}"
        raise LabError(f"{step} failed: {shlex.join(argv)}: {why}")
    return proc.stdout


#: Held while a lab picks its /24 and makes its links: labs of other state directories (another
#: user, another checkout's tests) pick their subnet and interface names from the same machine.
MACHINE_LOCK = Path("/run/benchharness-labs.lock")


@contextlib.contextmanager
def _locked(base_dir: Path) -> Iterator[None]:
    base_dir.mkdir(parents=True, exist_ok=True)
    with open(MACHINE_LOCK, "a") as machine, open(base_dir / ".lock", "w") as lock:
        fcntl.flock(machine, fcntl.LOCK_EX)
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _save(state: Mapping[str, Any]) -> None:
    path = Path(state["dir"]) / "lab.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, path)


def _load(base_dir: Path, name: str) -> dict[str, Any] | None:
    try:
        state: dict[str, Any] = json.loads((base_dir / name / "lab.json").read_text())
    except (OSError, ValueError):
        return None
    return state


def list_labs(base_dir: Path = DEFAULT_BASE) -> list[str]:
    """Names of the labs that have state under ``base_dir``."""
    return sorted(p.parent.name for p in base_dir.glob("*/lab.json"))


def _info(state: Mapping[str, Any]) -> LabInfo:
    d = Path(state["dir"])
    hosts = [LabHost(h["name"], h["netns"], h["address"], h["veth"], h.get("sshd_pid"), h.get("shape"),
                     tuple(h.get("rails") or ())) for h in state["hosts"]]
    return LabInfo(state["name"], d, d / "inventory.ini", d / "known_hosts", d / "id_ed25519",
                   state["subnet"], state["bridge"], hosts)


def load_lab(name: str, base_dir: Path = DEFAULT_BASE) -> LabInfo:
    """The LabInfo of a lab that is up; LabError when there is none."""
    state = _load(base_dir, name)
    if state is None:
        raise LabError(f"no lab named {name!r} under {base_dir} (bench lab up)")
    return _info(state)


def _check_name(name: str) -> None:
    if not _NAME_RE.fullmatch(name):
        raise LabError(f"bad lab name {name!r}: 1-12 characters of a-z, 0-9 and '-'")


def _used_indexes(base_dir: Path) -> set[int]:
    states = [s for n in list_labs(base_dir) if (s := _load(base_dir, n))]
    used = {int(s["index"]) for s in states} | {i for s in states if (i := lab_jump.claimed_index(s)) is not None}
    used |= {int(r["index"]) for s in states for r in s.get("rails") or []}
    out = _run("list root-namespace addresses", ["ip", "-4", "-o", "addr", "show"])
    for text in re.findall(r"inet (\d+\.\d+\.\d+\.\d+)/", out):
        addr = ipaddress.ip_address(text)
        if addr in LAB_NET:
            used.add((int(addr) - int(LAB_NET.network_address)) // 256)
    return used


def _subnet(index: int) -> ipaddress.IPv4Network:
    return ipaddress.ip_network((int(LAB_NET.network_address) + 256 * index, 24))  # type: ignore[return-value]


def _plan(name: str, hosts: int, shapes: Mapping[str, str], base_dir: Path, rails: int = 0) -> dict[str, Any]:
    used = _used_indexes(base_dir)
    free = [i for i in range(LAB_NET.num_addresses // 256) if i not in used][:rails + 1]
    if len(free) < rails + 1:
        raise LabError(f"no {rails + 1} free /24s left in {LAB_NET} for lab {name}")
    index, rail_indexes = free[0], free[1:]
    subnet = _subnet(index)
    bridge = f"bh-{name}"
    rail_nets: list[dict[str, Any]] = [{"name": f"rail{k}", "index": j, "subnet": str(_subnet(j)), "bridge": f"bh{index}r{k}",
                  "gateway": str(_subnet(j)[GATEWAY])} for k, j in enumerate(rail_indexes)]
    host_list: list[dict[str, Any]] = [
        {"name": f"h{n}", "netns": f"bh-{name}-h{n}", "address": str(subnet[n]), "veth": f"bh{index}h{n}",
         "shape": shapes.get(f"h{n}"), "sshd_pid": None, "rdma": {},
         "rails": [{"name": r["name"], "netdev": f"eth{k + 1}", "address": str(_subnet(r["index"])[n]),
                    "veth": f"bh{index}h{n}r{k}", "bridge": r["bridge"],
                    "shape": shapes.get(f"h{n}.{r['name']}") or shapes.get(f"h{n}")}
                   for k, r in enumerate(rail_nets)]}
        for n in range(1, hosts + 1)]
    taken = [bridge] if (SYS_NET / bridge).exists() else []
    taken += [r["bridge"] for r in rail_nets if (SYS_NET / r["bridge"]).exists()]
    taken += [r["veth"] for h in host_list for r in h["rails"] if (SYS_NET / r["veth"]).exists()]
    taken += [h["netns"] for h in host_list if (NETNS_DIR / h["netns"]).exists()]
    taken += [h["veth"] for h in host_list if (SYS_NET / h["veth"]).exists()]
    if taken:
        raise LabError(f"lab {name}: {', '.join(taken)} already exist; another lab {name} is up "
                       f"(bench lab down {name})")
    return {"version": 1, "name": name, "index": index, "subnet": str(subnet),
            "gateway": str(subnet[GATEWAY]), "bridge": bridge, "dir": str(base_dir / name),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "rdma": None, "rdma_devices": [],
            "rails": rail_nets, "hosts": host_list}


def lab_up(hosts: int, name: str = "lab", shape: Mapping[str, str] | None = None,
           rdma: str | None = None, base_dir: Path = DEFAULT_BASE, jump: bool = False,
           rails: int = 0) -> LabInfo:
    """Create lab ``name`` with hosts h1..h<hosts>; on any failure remove what was made.

    ``jump``: the hosts sit behind a jump host, on a network the controller cannot reach (lab/jump.py).
    ``rails``: NICs per host besides the management one, each rail on its own bridge and /24.
    """
    if os.geteuid() != 0:
        raise LabError(_NOT_ROOT)
    _check_name(name)
    if not 1 <= hosts <= MAX_HOSTS:
        raise LabError(f"a lab has 1 to {MAX_HOSTS} hosts, not {hosts}")
    if not 0 <= rails <= MAX_RAILS:
        raise LabError(f"a lab host has 0 to {MAX_RAILS} rails, not {rails}")
    try:
        shapes = parse_shape(",".join(f"{h}:{r}" for h, r in shape.items()), hosts, rails) if shape else {}
    except ValueError as exc:
        raise LabError(f"lab {name}: {exc}") from exc
    if rails and (jump or rdma):
        raise LabError(f"lab {name}: rails= does not combine with jump= or rdma=")
    if rdma not in (None, "rxe"):
        raise LabError(f"unknown rdma kind {rdma!r}: the lab knows only 'rxe' (soft-RoCE)")
    if jump and (rdma or shapes):
        raise LabError(f"lab {name}: jump=true does not combine with rdma= or shape=")
    if rdma:
        lab_rdma.check_rxe()
    lacking = lab_commands.missing([*lab_commands.LAB_UP, *(["tc"] if shapes else [])])
    if lacking:
        raise LabError(f"bench lab needs {lab_commands.describe_missing(lacking)}, not installed")
    with _locked(base_dir):
        if (base_dir / name).exists():
            raise LabError(f"lab {name} is already up or left over (bench lab down {name})")
        state = _plan(name, hosts, shapes, base_dir, rails)
        if jump:
            lab_jump.plan(state, _used_indexes(base_dir), LAB_NET)
        try:
            _build(state, rdma)
        except BaseException as exc:
            errors = _teardown(state, base_dir / name)
            if isinstance(exc, LabError) and errors:
                raise LabError(f"{exc}; cleanup also failed: {errors[0]}") from exc
            if isinstance(exc, OSError):
                raise LabError(f"lab {name}: {exc}") from exc
            raise
    return _info(state)


def _build(state: dict[str, Any], rdma: str | None) -> None:
    d = Path(state["dir"])
    d.mkdir(mode=0o700)
    (d / "hosts").mkdir()
    _save(state)  # claims the index before anything is made
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation dir
    key = d / "id_ed25519"
    _run("generate client key", ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                                 f"bench-lab-{state['name']}", "-f", str(key)])
    (d / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
    br = state["bridge"]
    _run("create bridge", ["ip", "link", "add", br, "type", "bridge"])
    _run("address bridge", ["ip", "addr", "add", f"{state['gateway']}/24", "dev", br])
    _run("bring up bridge", ["ip", "link", "set", br, "up"])
    for rail in state.get("rails") or []:
        _run(f"{rail['name']}: create bridge", ["ip", "link", "add", rail["bridge"], "type", "bridge"])
        _run(f"{rail['name']}: address bridge", ["ip", "addr", "add", f"{rail['gateway']}/24", "dev", rail["bridge"]])
        _run(f"{rail['name']}: bring up bridge", ["ip", "link", "set", rail["bridge"], "up"])
    if state.get("jump"):
        lab_jump.build(state, _run, _start_sshd, _wait_sshd)
    else:
        for host in state["hosts"]:
            _make_host(br, host)
        cgroups = lab_cgroups.make(state["name"], d, [h["name"] for h in state["hosts"]])
        for host in state["hosts"]:  # all named before any sshd, so a failure removes them all
            if host["name"] in cgroups:
                host["cgroup"], host["cgroup_seen"] = cgroups[host["name"]]
        for host in state["hosts"]:
            _start_sshd(d, host)
        _wait_sshd(d, state["hosts"])
    if rdma:
        state["rdma"] = rdma
        host_vars = lab_rdma.setup_rxe(_run, state["index"], br, state["gateway"],
                                       [(h["name"], h["netns"], h["address"]) for h in state["hosts"]],
                                       state["rdma_devices"])
        for host in state["hosts"]:
            host["rdma"] = host_vars[host["name"]]
    write_files(state)
    if state.get("jump"):
        lab_jump.write_files(state)
    _save(state)


def _tbf(rate: str) -> list[str]:
    # burst: 1 ms at the rate, and at least two 64 KiB GSO packets so tbf need not split them
    burst = max(int(parse_rate_gbps(rate) * 1e9 / 8 / 1000), 131072)
    return ["tbf", "rate", rate, "burst", str(burst), "latency", "20ms"]


def _make_host(bridge: str, host: Mapping[str, Any]) -> None:
    h, ns, veth = host["name"], host["netns"], host["veth"]
    _run(f"{h}: create namespace", ["ip", "netns", "add", ns])
    _run(f"{h}: create veth", ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0",
                               "netns", ns])
    _run(f"{h}: attach veth to bridge", ["ip", "link", "set", veth, "master", bridge, "up"])
    _run(f"{h}: bring up lo", ["ip", "-n", ns, "link", "set", "lo", "up"])
    _run(f"{h}: address eth0", ["ip", "-n", ns, "addr", "add", f"{host['address']}/24", "dev", "eth0"])
    _run(f"{h}: bring up eth0", ["ip", "-n", ns, "link", "set", "eth0", "up"])
    if host["shape"]:
        _run(f"{h}: shape traffic to the host", ["tc", "qdisc", "replace", "dev", veth, "root",
                                                 *_tbf(host["shape"])])
        _run(f"{h}: shape traffic from the host", ["tc", "-n", ns, "qdisc", "replace", "dev", "eth0",
                                                   "root", *_tbf(host["shape"])])
    for rail in host.get("rails") or []:
        r, dev = f"{h}.{rail['name']}", rail["netdev"]
        _run(f"{r}: create veth", ["ip", "link", "add", rail["veth"], "type", "veth", "peer", "name", dev,
                                   "netns", ns])
        _run(f"{r}: attach veth to bridge", ["ip", "link", "set", rail["veth"], "master", rail["bridge"], "up"])
        _run(f"{r}: address {dev}", ["ip", "-n", ns, "addr", "add", f"{rail['address']}/24", "dev", dev])
        _run(f"{r}: bring up {dev}", ["ip", "-n", ns, "link", "set", dev, "up"])
        if rail.get("shape"):
            _run(f"{r}: shape traffic to the rail", ["tc", "qdisc", "replace", "dev", rail["veth"], "root",
                                                     *_tbf(rail["shape"])])
            _run(f"{r}: shape traffic from the rail", ["tc", "-n", ns, "qdisc", "replace", "dev", dev,
                                                       "root", *_tbf(rail["shape"])])


def _start_sshd(d: Path, host: Mapping[str, Any]) -> None:
    h = host["name"]
    hd = d / "hosts" / h
    hd.mkdir()
    _run(f"{h}: generate host key", ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C",
                                     f"{h}.bench-lab", "-f", str(hd / "ssh_host_ed25519_key")])
    cfg = hd / "sshd_config"
    cfg.write_text(sshd_config(hd, host["address"], d / "authorized_keys"))
    log = hd / "sshd.log"
    # the host's own CPU cgroup (lab/cgroups.py), entered by its bind-mounted path (the namespace's
    # fresh /sys has no cgroup file systems): sshd and all it starts are in it. sh sets the hostname
    # in the fresh UTS namespace, then becomes sshd (which daemonizes)
    _run(f"{h}: start sshd", ["ip", "netns", "exec", host["netns"], "unshare", "--uts", "--", "sh", "-c",
                              'if [ -n "$5" ]; then echo $$ > "$5/cgroup.procs" || exit 1; fi; '
                              'hostname "$1" && exec "$2" -f "$3" -E "$4"', "sh", h, SSHD, str(cfg),
                              str(log), str(host.get("cgroup_seen") or "")], log=log)


def _ssh_banner(address: str, timeout: float) -> bool:
    try:
        with socket.create_connection((address, 22), timeout=timeout) as sock:
            return sock.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _wait_sshd(d: Path, hosts: list[dict[str, Any]]) -> None:
    deadline = time.monotonic() + SSHD_WAIT_S
    pending = list(hosts)
    while pending:
        for host in list(pending):
            pid = _read_pid(d / "hosts" / host["name"] / "sshd.pid")
            if pid and _ssh_banner(host["address"], 0.5):
                host["sshd_pid"] = pid
                pending.remove(host)
        if pending and time.monotonic() > deadline:
            host = pending[0]
            log = d / "hosts" / host["name"] / "sshd.log"
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            raise LabError(f"{host['name']}: wait for sshd failed: nothing accepted ssh on "
                           f"{host['address']}:22 within {SSHD_WAIT_S:.0f} s; {log}: {''.join(tail)}")
        time.sleep(0.02 if pending else 0)


def netns_pids(netns: str) -> list[int]:
    """Pids of the processes in network namespace ``netns`` (``ip netns pids``); [] if it is gone."""
    if not (NETNS_DIR / netns).exists():
        return []
    proc = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True, check=False)
    return [int(p) for p in proc.stdout.split() if p.isdigit()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _kill_netns(netns: str) -> list[str]:
    for sig, wait_s in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 2.0)):
        pids = netns_pids(netns)
        if not pids:
            return []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while netns_pids(netns) and time.monotonic() < deadline:
            time.sleep(0.05)
    left = netns_pids(netns)
    return [f"processes {left} in {netns} survived SIGKILL"] if left else []


def _teardown(state: Mapping[str, Any], lab_dir: Path) -> list[str]:
    """Remove everything ``state`` names (only bh-* objects); returns what could not be removed."""
    errors = lab_rdma.teardown_rxe(state.get("rdma_devices") or [])
    hosts = [h for h in [*state.get("hosts", []), *lab_jump.extra_hosts(state)]
             if str(h.get("netns", "")).startswith("bh-")]
    for h in hosts:
        errors += _kill_netns(h["netns"])
    lab_cgroups.remove(lab_dir, [str(h["cgroup"]) for h in hosts if h.get("cgroup")])
    steps = [(SYS_NET / h["veth"], ["ip", "link", "del", h["veth"]]) for h in hosts
             if str(h.get("veth", "")).startswith("bh")]
    steps += [(SYS_NET / r["veth"], ["ip", "link", "del", r["veth"]]) for h in hosts
              for r in h.get("rails") or [] if str(r.get("veth", "")).startswith("bh")]
    steps += [(NETNS_DIR / h["netns"], ["ip", "netns", "del", h["netns"]]) for h in hosts]
    if str(state.get("bridge", "")).startswith("bh-"):
        steps.append((SYS_NET / state["bridge"], ["ip", "link", "del", state["bridge"]]))
    steps += [(SYS_NET / r["bridge"], ["ip", "link", "del", r["bridge"]]) for r in state.get("rails") or []
              if re.fullmatch(r"bh\d+r\d+", str(r.get("bridge", "")))]
    for path, argv in steps:
        if path.exists():
            try:
                _run("teardown", argv)
            except LabError as exc:
                if path.exists():
                    errors.append(str(exc))
    shutil.rmtree(lab_dir, ignore_errors=True)
    return errors


def _root_peer(netns: str) -> str:
    """Root-namespace end of the veth whose other end is ``eth0`` in ``netns`` ('' if none)."""
    out = subprocess.run(["ip", "-n", netns, "-o", "link", "show", "eth0"], capture_output=True,
                         text=True, check=False).stdout
    match = re.search(r"eth0@if(\d+)", out)
    if not match:
        return ""
    for link in SYS_NET.glob("bh*"):
        with contextlib.suppress(OSError):
            if (link / "ifindex").read_text().strip() == match.group(1):
                return link.name
    return ""


def _orphan_state(name: str) -> dict[str, Any]:
    """What a lab without readable state may have left: its namespaces, veths and bridge."""
    found = [p.name for p in NETNS_DIR.glob(f"bh-{name}-h*") if re.fullmatch(rf"bh-{name}-h\d+", p.name)]
    return {"name": name, "bridge": f"bh-{name}",
            "hosts": [{"netns": ns, "veth": _root_peer(ns)} for ns in found]}


def lab_down(name: str | None = None, base_dir: Path = DEFAULT_BASE) -> list[str]:
    """Remove lab ``name`` (None: every lab under ``base_dir``); returns the names removed."""
    if os.geteuid() != 0:
        raise LabError(_NOT_ROOT)
    removed = []
    for lab in list_labs(base_dir) if name is None else [name]:
        _check_name(lab)
        with _locked(base_dir):
            state = _load(base_dir, lab) or _orphan_state(lab)
            lab_dir = base_dir / lab
            present = [lab_dir, SYS_NET / str(state.get("bridge")),
                       *(NETNS_DIR / h["netns"] for h in state.get("hosts", []))]
            if not any(p.exists() for p in present):
                continue
            errors = _teardown(state, lab_dir)
        if errors:
            raise LabError(f"lab {lab}: teardown incomplete: {'; '.join(errors)}")
        removed.append(lab)
    return removed


def _sshd_alive(pid: int | None, netns: str) -> bool:
    if not pid:
        return False
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return False
    return comm == "sshd" and pid in netns_pids(netns)


def lab_status(name: str | None = None, base_dir: Path = DEFAULT_BASE) -> list[dict[str, Any]]:
    """One row per host of each lab (or of lab ``name``): does it exist, is sshd up and reachable."""
    rows = []
    for lab in list_labs(base_dir) if name is None else [name]:
        info = load_lab(lab, base_dir)
        for h in info.hosts:
            ns_exists = (NETNS_DIR / h.netns).exists()
            rows.append({"lab": lab, "host": h.name, "netns": h.netns, "address": h.address,
                         "ns_exists": ns_exists, "sshd_alive": ns_exists and _sshd_alive(h.sshd_pid, h.netns),
                         "ssh_port_open": ns_exists and _ssh_banner(h.address, 0.5), "shape": h.shape,
                         **({"rails": ",".join(f"{r['name']}={r['netdev']}/{r['address']}"
                                               + (f"@{r['shape']}" if r.get("shape") else "") for r in h.rails)}
                            if h.rails else {})})
    return rows


def lab_processes(name: str, pattern: str, base_dir: Path = DEFAULT_BASE) -> dict[str, list[str]]:
    """Host -> command lines of the processes in its namespace that match regex ``pattern``."""
    rx = re.compile(pattern)
    return {h.name: [cmd for pid in netns_pids(h.netns) if (cmd := _cmdline(pid)) and rx.search(cmd)]
            for h in load_lab(name, base_dir).hosts}
