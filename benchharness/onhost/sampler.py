#!/usr/bin/env python3
"""benchharness in-step sampler: one JSON line per interval while a benchmark step runs.

Copied to each host and started in the background by the runner::

    python3 sampler.py --interval 1 --netdev eth0 [--netdev eth1] [--duration N | --count N]
    python3 sampler.py --snapshot --netdev eth0 [--rdma-dev mlx5_0] [--rdma-port 1]
    python3 sampler.py ... --gpu nvidia|amd [--path-prefix DIR]

A line holds per-core and total CPU busy % (from /proc/stat deltas), each core's seconds per
mode (user, system, irq, softirq, idle ... over the interval), a cgroup's CPU seconds
(``--cpu-cgroup DIR``), memory, per-NIC rates per
second (bytes, packets, errors, drops) and temperatures (hwmon, thermal zones). psutil is used
when it imports (``--no-psutil`` forces /proc and /sys). SIGTERM and SIGINT end it cleanly with
exit code 0. ``--snapshot`` prints one JSON document of raw counters (``ethtool -S``, netdev
statistics, RDMA ``counters`` and ``hw_counters``) for before/after deltas. ``--gpu VENDOR`` adds
the GPU tool's raw text: temperatures on every line (``gpu_raw``), clock throttle state in each
snapshot (``gpu``); the controller parses both (``benchharness.telemetry.gpu_step``). Standard
library only, Python 3.6+ (hence ``typing`` generics).
"""
# ruff: noqa: UP006, UP021, UP022, UP035, UP045

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional, Set

#: The per-core time modes a line reports (``/proc/stat`` columns, psutil ``cpu_times`` fields).
CPU_MODES = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"]
_IDLE_MODES = ("idle", "iowait")
NET_FIELDS = ["rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_errors", "tx_errors",
              "rx_dropped", "tx_dropped"]
_PSUTIL_NET = {"rx_bytes": "bytes_recv", "tx_bytes": "bytes_sent", "rx_packets": "packets_recv",
               "tx_packets": "packets_sent", "rx_errors": "errin", "tx_errors": "errout",
               "rx_dropped": "dropin", "tx_dropped": "dropout"}


class _Stop(Exception):
    pass


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


class Sources:
    """Raw readings from psutil or from /proc and /sys under ``root``."""

    def __init__(self, root: str = "/", use_psutil: bool = True) -> None:
        self.root = root
        self.psutil = None  # type: Any
        if use_psutil and os.path.abspath(root) == "/":
            try:
                import psutil

                self.psutil = psutil
            except ImportError:
                self.psutil = None

    @property
    def name(self) -> str:
        return "psutil" if self.psutil else "proc"

    def p(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def cpu_times(self) -> Dict[str, List[float]]:
        """cpu name -> seconds spent in each of ``CPU_MODES`` since boot (``cpu`` is all cores)."""
        out = {}  # type: Dict[str, List[float]]
        if self.psutil:
            per = self.psutil.cpu_times(percpu=True)
            for i, t in enumerate(per):
                out[f"cpu{i}"] = [float(getattr(t, m, 0.0)) for m in CPU_MODES]
            return out
        tick = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
        for line in (_read(self.p("/proc/stat")) or "").splitlines():
            m = re.match(r"^(cpu\d*)\s+(.*)$", line)
            if m:
                # user nice system idle iowait irq softirq steal (guest, guest_nice: already in user, nice)
                values = [int(v) for v in m.group(2).split()[:len(CPU_MODES)]]
                values += [0] * (len(CPU_MODES) - len(values))
                out[m.group(1)] = [v / tick for v in values]
        return out

    def cgroup_cpu(self, path: Optional[str]) -> Optional[Dict[str, Any]]:
        """CPU seconds of the processes in one cgroup (a container, a lab host), as the scheduler
        counts them: cgroup v1 ``cpuacct.usage_percpu`` (per core, nanoseconds) or v2 ``cpu.stat``
        ``usage_usec`` (all cores as ``cpu``). Not v1's ``cpuacct.usage_all``: its user/system
        split is sampled at the timer tick."""
        if not path:
            return None
        text = _read(os.path.join(path, "cpuacct.usage_percpu"))
        if text:
            return {"cores": {"cpu" + str(i): int(v) / 1e9 for i, v in enumerate(text.split()) if v.isdigit()}}
        text = _read(os.path.join(path, "cpu.stat"))
        usage = re.search(r"^usage_usec\s+(\d+)", text or "", re.MULTILINE)
        if usage:
            return {"cores": {"cpu": int(usage.group(1)) / 1e6}}
        return {"error": "no cpuacct.usage_percpu or cpu.stat under " + path}

    def memory(self) -> Dict[str, Any]:
        if self.psutil:
            vm = self.psutil.virtual_memory()
            return {"total_bytes": vm.total, "available_bytes": vm.available}
        text = _read(self.p("/proc/meminfo")) or ""
        values = {k: int(v) * 1024 for k, v in re.findall(r"^(\w+):\s+(\d+) kB", text, re.MULTILINE)}
        return {"total_bytes": values.get("MemTotal"), "available_bytes": values.get("MemAvailable")}

    def net(self, netdevs: List[str]) -> Dict[str, Dict[str, int]]:
        out = {}  # type: Dict[str, Dict[str, int]]
        if self.psutil:
            counters = self.psutil.net_io_counters(pernic=True)
            for nd in netdevs:
                if nd in counters:
                    out[nd] = {f: getattr(counters[nd], _PSUTIL_NET[f]) for f in NET_FIELDS}
            return out
        for nd in netdevs:
            stats = {}
            for f in NET_FIELDS:
                value = _int(_read(self.p(f"/sys/class/net/{nd}/statistics/{f}")))
                if value is not None:
                    stats[f] = value
            if stats:
                out[nd] = stats
        return out

    def temperatures(self) -> Dict[str, float]:
        out = {}  # type: Dict[str, float]
        base = self.p("/sys/class/hwmon")
        for mon in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            chip = _read(os.path.join(base, mon, "name")) or mon
            for entry in sorted(os.listdir(os.path.join(base, mon))):
                m = re.match(r"^(temp\d+)_input$", entry)
                value = _int(_read(os.path.join(base, mon, entry))) if m else None
                if m and value is not None:
                    label = _read(os.path.join(base, mon, m.group(1) + "_label")) or m.group(1)
                    out[f"hwmon/{mon}/{chip}/{label}"] = value / 1000.0
        base = self.p("/sys/class/thermal")
        for zone in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            value = _int(_read(os.path.join(base, zone, "temp")))
            if zone.startswith("thermal_zone") and value is not None:
                out["thermal/{}/{}".format(zone, _read(os.path.join(base, zone, "type")))] = value / 1000.0
        return out

    def powers(self) -> Dict[str, float]:
        """Watts of the hwmon power sensors (``power<N>_input``, else ``power<N>_average``, in
        microwatts: the kernel's hwmon sysfs ABI), by ``hwmon/<hwmonN>/<chip>/<label>``; a NIC or
        module driver that exposes its power shows here."""
        out = {}  # type: Dict[str, float]
        base = self.p("/sys/class/hwmon")
        for mon in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            chip = _read(os.path.join(base, mon, "name")) or mon
            entries = set(os.listdir(os.path.join(base, mon)))
            for n in sorted({m.group(1) for m in (re.match(r"^(power\d+)_(input|average)$", e) for e in entries) if m}):
                path = os.path.join(base, mon, n + ("_input" if n + "_input" in entries else "_average"))
                value = _int(_read(path))
                if value is not None:
                    label = _read(os.path.join(base, mon, n + "_label")) or n
                    out[f"hwmon/{mon}/{chip}/{label}"] = value / 1e6
        return out


def _rates(before: Dict[str, int], after: Dict[str, int], seconds: float) -> Dict[str, Any]:
    out = {}  # type: Dict[str, Any]
    for f in NET_FIELDS:
        if f in before and f in after:
            diff = after[f] - before[f]
            out[f + "_per_s"] = round(diff / seconds, 3) if diff >= 0 else None  # None: counter reset
    for d in ("rx", "tx"):
        bps = out.get(d + "_bytes_per_s")
        out[d + "_gbps"] = round(bps * 8 / 1e9, 6) if bps is not None else None
    return out


def _busy(modes: List[float]) -> float:
    return sum(v for m, v in zip(CPU_MODES, modes) if m not in _IDLE_MODES)  # noqa: B905 (Python 3.6)


def _cgroup_delta(prev: Optional[Dict[str, Any]], now: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The cgroup's CPU seconds spent over the interval, per core: ``{"cores": {cpuN: seconds}}``."""
    if now is None:
        return None
    if "error" in now or prev is None or "error" in prev:
        return {"error": now.get("error") or (prev or {}).get("error") or "no earlier reading"}
    return {"cores": {name: round(max(value - prev["cores"][name], 0.0), 6)
                      for name, value in now["cores"].items() if name in prev["cores"]}}


def sample_line(src: Sources, netdevs: List[str], prev: Dict[str, Any], now: Dict[str, Any]) -> Dict[str, Any]:
    """One output line from two raw readings ``prev`` and ``now``: ``cpu.modes_s`` holds each
    core's seconds per mode (``cpu.modes`` names them) over the interval, ``cpu.cgroup`` the
    cgroup's (``--cpu-cgroup``)."""
    seconds = max(now["t"] - prev["t"], 1e-6)
    per_core, total = [], None
    modes_s = {}  # type: Dict[str, List[float]]
    for name in sorted(now["cpu"], key=lambda n: -1 if n == "cpu" else int(n[3:])):
        if name not in prev["cpu"]:
            continue
        diff = [max(a - b, 0.0) for a, b in zip(now["cpu"][name], prev["cpu"][name])]  # noqa: B905
        span = sum(diff)
        pct = round(100.0 * _busy(diff) / span, 2) if span > 0 else 0.0
        if name == "cpu":
            total = pct
        else:
            per_core.append(pct)
            modes_s[name] = [round(v, 4) for v in diff]
    if total is None and per_core:
        total = round(sum(per_core) / len(per_core), 2)
    mem = now["mem"]
    used = None
    if mem.get("total_bytes") and mem.get("available_bytes") is not None:
        used = round(100.0 * (1 - mem["available_bytes"] / mem["total_bytes"]), 2)
    cpu = {"total_pct": total, "per_core_pct": per_core, "modes": CPU_MODES, "modes_s": modes_s}  # type: Dict[str, Any]
    cgroup = _cgroup_delta(prev.get("cgroup"), now.get("cgroup"))
    if cgroup is not None:
        cpu["cgroup"] = dict(cgroup, path=now.get("cgroup_path"))
    return {
        "ts": round(now["wall"], 3), "interval_s": round(seconds, 3), "source": src.name,
        "cpu": cpu,
        "mem": dict(mem, used_pct=used),
        "net": {nd: _rates(prev["net"][nd], now["net"][nd], seconds) for nd in netdevs
                if nd in prev["net"] and nd in now["net"]},
        "temps": now["temps"],
        **({"power_w": now["power_w"]} if now.get("power_w") else {}),
    }


def reading(src: Sources, netdevs: List[str], cgroup: Optional[str] = None) -> Dict[str, Any]:
    return {"t": time.monotonic(), "wall": time.time(), "cpu": src.cpu_times(), "mem": src.memory(),
            "net": src.net(netdevs), "temps": src.temperatures(), "power_w": src.powers(),
            "cgroup": src.cgroup_cpu(cgroup),
            "cgroup_path": cgroup}


def parse_rdma_statistic(text: str) -> Dict[str, int]:
    """Counters from ``rdma -j statistic show link DEV/PORT`` (flat, or under ``counters``)."""
    out = {}  # type: Dict[str, int]
    entries = json.loads(text or "[]")
    for entry in entries if isinstance(entries, list) else [entries]:
        fields = entry.get("counters") if isinstance(entry.get("counters"), dict) else entry
        for name, value in fields.items():
            if name not in ("ifindex", "ifname", "port") and isinstance(value, int) and not isinstance(value, bool):
                out[name] = value
    return out


def _rdma_statistic(dev: str, port: str, errors: List[str]) -> Dict[str, int]:
    exe = shutil.which("rdma")
    if not exe:
        return {}
    argv = [exe, "-j", "statistic", "show", "link", f"{dev}/{port}"]
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=5)
        if proc.returncode != 0:
            errors.append(f"rdma statistic show link {dev}/{port}: {proc.stderr.strip()[:200]}")
            return {}
        return parse_rdma_statistic(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError, AttributeError) as exc:
        errors.append(f"rdma statistic show link {dev}/{port}: {exc}")
        return {}


#: vendor -> (temperatures, read every interval; clock throttle state, read at the step's edges)
GPU_COMMANDS = {
    "nvidia": (["nvidia-smi", "--query-gpu=index,temperature.gpu,temperature.memory",
                "--format=csv,noheader,nounits"], ["nvidia-smi", "-q", "-d", "PERFORMANCE"]),
    "amd": (["rocm-smi", "--showtemp"], ["amd-smi", "metric", "--throttle"]),
}


def gpu_raw(vendor: str, which: int) -> Dict[str, Any]:
    """One GPU tool's raw output: ``{"cmd", "rc", "text"}``, or ``{"cmd", "error"}``."""
    argv = GPU_COMMANDS[vendor][which]
    exe = shutil.which(argv[0])
    if not exe:
        return {"cmd": " ".join(argv), "error": f"{argv[0]} not found on PATH"}
    try:
        proc = subprocess.run([exe, *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"cmd": " ".join(argv), "error": str(exc)[:200]}
    out = {"cmd": " ".join(argv), "rc": proc.returncode, "text": proc.stdout}  # type: Dict[str, Any]
    if proc.returncode != 0:
        out["error"] = (proc.stderr.strip() or proc.stdout.strip())[-200:] or f"exit {proc.returncode}"
    return out


def module_raw(root: str, netdevs: List[str], skip: Set[str]) -> Dict[str, Any]:
    """Each netdev's ``ethtool -m`` text (transceiver diagnostics: its temperature), ``{netdev: {"text"}}``
    or ``{netdev: {"error"}}``. A netdev that fails once (no module, a DAC without diagnostics, a
    veth) joins ``skip`` and is not asked again; another root than / has no transceivers to ask."""
    exe = shutil.which("ethtool") if os.path.abspath(root) == "/" else None
    out = {}  # type: Dict[str, Any]
    for nd in netdevs:
        if nd in skip or not exe:
            continue
        try:
            proc = subprocess.run([exe, "-m", nd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired) as exc:
            skip.add(nd)
            out[nd] = {"error": str(exc)[:200]}
            continue
        if proc.returncode != 0:
            skip.add(nd)
            out[nd] = {"error": (proc.stderr.strip() or proc.stdout.strip())[-200:] or f"exit {proc.returncode}"}
        else:
            out[nd] = {"text": proc.stdout}
    return out


TCP_FIELDS = ("RetransSegs", "OutSegs", "InSegs", "InErrs")


def tcp_counters(root: str) -> Dict[str, int]:
    """The TCP counters of this network namespace (``/proc/net/snmp``), as ``tcp:-:RetransSegs``."""
    lines = [ln.split() for ln in (_read(os.path.join(root, "proc/net/snmp")) or "").splitlines()
             if ln.startswith("Tcp:")]
    if len(lines) < 2:
        return {}
    values = dict(zip(lines[0][1:], lines[1][1:]))  # noqa: B905 (Python 3.6 on hosts)
    return {f"tcp:-:{k}": int(values[k]) for k in TCP_FIELDS if _int(values.get(k)) is not None}


def snapshot(root: str, netdevs: List[str], rdma_devs: List[str], port: Optional[int]) -> Dict[str, Any]:
    """Raw counters keyed ``source:object:name`` (see benchharness.telemetry.counters)."""
    counters = {}  # type: Dict[str, int]
    errors = []  # type: List[str]
    for nd in netdevs:
        exe = shutil.which("ethtool") if os.path.abspath(root) == "/" else None
        if exe:
            try:
                proc = subprocess.run([exe, "-S", nd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      universal_newlines=True, timeout=5)
                for name, value in re.findall(r"^\s+(\S.*?):\s+(-?\d+)\s*$", proc.stdout, re.MULTILINE):
                    counters[f"ethtool:{nd}:{name}"] = int(value)
                if proc.returncode != 0:
                    errors.append(f"ethtool -S {nd}: {proc.stderr.strip()[:200]}")
            except (OSError, subprocess.TimeoutExpired) as exc:
                errors.append(f"ethtool -S {nd}: {exc}")
        stats = os.path.join(root, "sys/class/net", nd, "statistics")
        for name in sorted(os.listdir(stats)) if os.path.isdir(stats) else []:
            value = _int(_read(os.path.join(stats, name)))
            if value is not None:
                counters[f"net:{nd}:{name}"] = value
        for name in ("carrier_changes", "carrier_up_count", "carrier_down_count"):  # link flaps
            value = _int(_read(os.path.join(root, "sys/class/net", nd, name)))
            if value is not None:
                counters[f"link:{nd}:{name}"] = value
    counters.update(tcp_counters(root))
    ib = os.path.join(root, "sys/class/infiniband")
    devs = rdma_devs or (sorted(os.listdir(ib)) if os.path.isdir(ib) else [])
    for name in devs:
        dev, _, own_port = name.partition("/")  # DEV/PORT: one rail's port; DEV: --rdma-port or all
        ports_dir = os.path.join(ib, dev, "ports")
        ports = [own_port] if own_port else [str(port)] if port else (
            sorted(os.listdir(ports_dir)) if os.path.isdir(ports_dir) else [])
        for p in ports:
            for sub, prefix in (("counters", "ib"), ("hw_counters", "ib_hw")):
                d = os.path.join(ports_dir, p, sub)
                for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                    value = _int(_read(os.path.join(d, name)))
                    if value is not None:
                        counters[f"{prefix}:{dev}/{p}:{name}"] = value
            if not os.path.isdir(os.path.join(ports_dir, p, "hw_counters")) and os.path.abspath(root) == "/":
                # a network namespace sees a shared-mode RDMA device without counter files in
                # sysfs; the netlink statistics (`rdma statistic`) still reach it
                for name, value in _rdma_statistic(dev, p, errors).items():
                    counters[f"ib_hw:{dev}/{p}:{name}"] = value
    return {"ts": time.time(), "hostname": socket.gethostname(), "counters": counters, "errors": errors}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Sample CPU, memory, NIC rates and temperatures.")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--netdev", action="append", default=[])
    parser.add_argument("--duration", type=float, default=None, help="stop after N seconds")
    parser.add_argument("--count", type=int, default=None, help="stop after N lines")
    parser.add_argument("--no-psutil", action="store_true", help="read /proc and /sys even if psutil imports")
    parser.add_argument("--root", default="/", help="read /proc and /sys under DIR")
    parser.add_argument("--snapshot", action="store_true", help="print one JSON snapshot of raw counters")
    parser.add_argument("--rdma-dev", action="append", default=[], help="DEV or DEV/PORT (one per rail)")
    parser.add_argument("--rdma-port", type=int, default=None)
    parser.add_argument("--edge-snapshots", action="store_true",
                        help="also print a counter snapshot line first and last (type: snapshot)")
    parser.add_argument("--counters-every", type=float, default=0.0,
                        help="with --edge-snapshots: also a snapshot line (phase: interval) every N seconds")
    parser.add_argument("--stop-on-eof", action="store_true",
                        help="stop cleanly when standard input closes (how the harness ends a step)")
    parser.add_argument("--gpu", choices=sorted(GPU_COMMANDS), default=None,
                        help="also read the GPUs' temperatures and clock throttle state with the vendor's tool")
    parser.add_argument("--module-every", type=float, default=0.0,
                        help="also read each netdev's transceiver (ethtool -m) every N seconds (0: never)")
    parser.add_argument("--cpu-cgroup", default=None,
                        help="also read the CPU time of this cgroup directory (the host's processes in a container or lab)")
    parser.add_argument("--path-prefix", action="append", default=[],
                        help="directory searched first for commands (stand-in nvidia-smi, amd-smi ...)")
    args = parser.parse_args(argv)
    if args.path_prefix:
        os.environ["PATH"] = os.pathsep.join([*args.path_prefix, os.environ.get("PATH", "")])
    if args.snapshot:
        snap = snapshot(args.root, args.netdev, args.rdma_dev, args.rdma_port)
        if args.gpu:
            snap["gpu"] = gpu_raw(args.gpu, 1)
        json.dump(snap, sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
        return 0

    state = {"stop": False, "sleeping": False}

    def on_signal(signum: int, frame: Any) -> None:
        state["stop"] = True
        if state["sleeping"]:
            raise _Stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.stop_on_eof:
        _stop_when_stdin_closes()
    if args.edge_snapshots:
        _emit_snapshot(args, "start")
    src = Sources(args.root, use_psutil=not args.no_psutil)
    started = time.monotonic()
    prev = reading(src, args.netdev, args.cpu_cgroup)
    lines = 0
    last_counters = prev["t"]
    modules = _module_reader(args) if args.module_every and os.path.abspath(args.root) == "/" else None
    try:
        while not state["stop"]:
            state["sleeping"] = True
            time.sleep(max(0.01, args.interval - (time.monotonic() - prev["t"])))
            state["sleeping"] = False
            now = reading(src, args.netdev, args.cpu_cgroup)
            line = sample_line(src, args.netdev, prev, now)
            if args.gpu:
                line["gpu_raw"] = gpu_raw(args.gpu, 0)
            if modules is not None:
                read = modules.take()
                if read:
                    line["module_raw"] = read
            sys.stdout.write(json.dumps(line, sort_keys=True) + "\n")
            sys.stdout.flush()
            prev, lines = now, lines + 1
            last_counters = _interval_snapshot(args, last_counters)
            if args.count is not None and lines >= args.count:
                break
            if args.duration is not None and time.monotonic() - started >= args.duration - 1e-3:
                break
    except _Stop:
        pass
    except BrokenPipeError:
        return 0
    if args.edge_snapshots:
        _emit_snapshot(args, "end")
    return 0


def _emit_snapshot(args: Any, phase: str) -> None:
    snap = snapshot(args.root, args.netdev, args.rdma_dev, args.rdma_port)
    snap.update({"type": "snapshot", "phase": phase})
    if args.gpu and phase != "interval":
        snap["gpu"] = gpu_raw(args.gpu, 1)
    sys.stdout.write(json.dumps(snap, sort_keys=True) + "\n")
    sys.stdout.flush()


def _interval_snapshot(args: Any, last: float) -> float:
    """A counter snapshot line (phase ``interval``) when ``--counters-every`` seconds have passed."""
    if not args.edge_snapshots or not args.counters_every or time.monotonic() - last < args.counters_every - 1e-3:
        return last
    _emit_snapshot(args, "interval")
    return time.monotonic()


class _ModuleReads:
    """The newest transceiver read not yet put in a sample line (filled by a reader thread)."""

    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.latest = {}  # type: Dict[str, Any]

    def put(self, read: Dict[str, Any]) -> None:
        with self.lock:
            self.latest = read

    def take(self) -> Dict[str, Any]:
        with self.lock:
            read, self.latest = self.latest, {}
        return read


def _module_reader(args: Any) -> _ModuleReads:
    """Read the transceivers every ``--module-every`` seconds in a thread of their own: a module's
    EEPROM answers over I2C, slowly on some NICs, and the sample lines must keep their pace."""
    import threading

    reads = _ModuleReads()
    skip = set()  # type: Set[str]

    def loop() -> None:
        while True:
            began = time.monotonic()
            read = module_raw(args.root, args.netdev, skip)
            if read:
                reads.put(read)
            if len(skip) >= len(args.netdev):
                return  # no port has a readable module: nothing more to ask
            time.sleep(max(0.0, args.module_every - (time.monotonic() - began)))

    threading.Thread(target=loop, daemon=True).start()
    return reads


def _stop_when_stdin_closes() -> None:
    import threading

    def watch() -> None:
        try:
            while sys.stdin.read(4096):
                pass
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
