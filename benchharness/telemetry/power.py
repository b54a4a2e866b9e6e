"""Node power from each host's BMC during every step, read from the controller (``docs/power.md``).

A host whose inventory names a BMC (``telemetry/bmc.py``) gets one reader thread per step that
asks its BMC every ``power_interval`` seconds (IPMI DCMI or sensors, ``bmc_ipmi.py``; Redfish,
``bmc_redfish.py``). Stored: the readings with their time (``telemetry/power/<step>/<host>.jsonl``),
one ``kind: power`` sample per step and host (``node_power_w``, ``node_energy_j``,
``node_energy_wh`` ...) and each BMC's state (``telemetry/power/bmcs.json``). A BMC that refuses the
login or does not answer gets one line on stderr and in bmcs.json, and the run goes on without its
power figures. Nothing here may break a measurement, and no password is ever written.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from benchharness.core.model import Host, Step
from benchharness.core.naming import safe_name
from benchharness.telemetry.bmc import BmcError, target
from benchharness.telemetry.parsers.bmc_power import PowerReading


class Reader(Protocol):
    """What the observer uses of a BMC reader (``IpmiReader``, ``RedfishReader``)."""

    def read(self) -> PowerReading | None: ...


def reader_for(host: Host) -> tuple[str, Reader] | None:
    """(the BMC as messages name it, its reader) for ``host``; None when the inventory names no BMC.
    Raises BmcError (one line) when the BMC's settings or password cannot be used."""
    t = target(host)
    if t is None:
        return None
    if t.protocol == "redfish":
        from benchharness.telemetry.bmc_redfish import RedfishReader

        return t.describe(), RedfishReader(t)
    from benchharness.telemetry.bmc_ipmi import IpmiReader

    return t.describe(), IpmiReader(t)


def energy_j(points: Sequence[tuple[float, float]], start: float, end: float) -> float:
    """Joules over ``[start, end]`` from (time, watts) readings: the trapezoid rule between readings,
    the first and the last reading held to the window's edges."""
    pts = sorted((t, w) for t, w in points if start <= t <= end)
    if not pts or end <= start:
        return 0.0
    total = pts[0][1] * (pts[0][0] - start) + pts[-1][1] * (end - pts[-1][0])
    for (t0, w0), (t1, w1) in itertools.pairwise(pts):
        total += (w0 + w1) / 2 * (t1 - t0)
    return total


class _Poll:
    """One host's readings during one step, taken by a thread until stopped."""

    def __init__(self, reader: Reader, interval: float) -> None:
        self.reader, self.interval = reader, interval
        self.points: list[tuple[float, float, str]] = []
        self.error: BmcError | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bmc-power")

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while True:
            asked = time.time()
            try:
                reading = self.reader.read()
            except BmcError as exc:
                self.error = exc
                return
            if reading is not None:
                self.points.append(((asked + time.time()) / 2, reading.watts, reading.source))
            if self._stop.wait(max(0.0, self.interval - (time.time() - asked))):
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=15.0)


class PowerObserver:
    """Runner observer: a BMC power reader on every host of every step whose inventory names a BMC."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._readers: dict[str, tuple[str, Reader]] = {}
        self._state: dict[str, dict[str, Any]] = {}
        self._polls: dict[str, tuple[float, dict[str, _Poll]]] = {}
        self._lock = threading.Lock()

    def _give_up(self, runner: Any, host: str, bmc: str, exc: BmcError, status: str = "unavailable") -> None:
        message = str(exc)
        print(f"warning: power: {message}; the run goes on without {host}'s power figures", file=sys.stderr)
        with self._lock:
            self._readers.pop(host, None)
            self._state[host] = {"bmc": bmc, "status": status, "message": message}
            runner.run_dir.write_json("telemetry/power/bmcs.json", self._state)

    def _open(self, runner: Any, host: Host) -> None:
        """Find the host's BMC and take a first reading; a BMC that cannot be read is given up."""
        try:
            found = reader_for(host)
        except BmcError as exc:
            self._give_up(runner, host.name, "BMC", exc, "misconfigured")
            return
        if found is None:
            return
        bmc, reader = found
        try:
            first = reader.read()
        except BmcError as exc:
            self._give_up(runner, host.name, bmc, exc)
            return
        if first is None:
            self._give_up(runner, host.name, bmc, BmcError(
                f"{host.name}: {bmc} answered without a node power reading (not available on this BMC)"),
                "not available")
            return
        with self._lock:
            self._readers[host.name] = found
            self._state[host.name] = {"bmc": bmc, "status": "ok", "source": first.source}

    def start_run(self, runner: Any) -> None:
        if self.interval <= 0:
            return
        hosts = [h for h in runner.plan.hosts if h.name not in runner.down and h.var("bmc_address")]
        if not hosts:
            return
        # in parallel, bounded as the probe is: a BMC that does not answer costs its timeout once
        workers = min(int(getattr(runner, "max_connections", 32)), len(hosts))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda h: self._open(runner, h), hosts))
        runner.run_dir.write_json("telemetry/power/bmcs.json", self._state)

    def before_step(self, runner: Any, step: Step) -> None:
        polls: dict[str, _Poll] = {}
        for h in step.hosts:
            with self._lock:
                found = self._readers.get(h.name)
            if found is None or h.name in polls or h.name in runner.down:
                continue
            polls[h.name] = _Poll(found[1], self.interval)
            polls[h.name].start()
        if polls:
            self._polls[step.id] = (time.time(), polls)

    def after_step(self, runner: Any, step: Step) -> None:
        started, polls = self._polls.pop(step.id, (0.0, {}))
        if not polls:
            return
        for poll in polls.values():
            poll.stop()
        ended = time.time()
        records = []
        for host, poll in polls.items():
            if poll.error is not None:
                self._give_up(runner, host, self._readers.get(host, ("BMC",))[0], poll.error)
            if not poll.points:
                continue
            runner.run_dir.write_text(
                f"telemetry/power/{safe_name(step.id)}/{safe_name(host)}.jsonl",
                "".join(json.dumps({"ts": t, "host": host, "node_power_w": w, "source": s}) + "\n"
                        for t, w, s in poll.points))
            watts = [w for _, w, _ in poll.points]
            joules = energy_j([(t, w) for t, w, _ in poll.points], started, ended)
            records.append({**step.sample_labels(), "kind": "power", "host": host,
                            "node_power_w": joules / (ended - started) if ended > started else watts[0],
                            "node_power_w_max": max(watts), "node_power_w_min": min(watts),
                            "node_energy_j": joules, "node_energy_wh": joules / 3600.0,
                            "power_window_s": ended - started, "power_readings": len(watts),
                            "power_source": poll.points[-1][2]})
        if records:
            runner.run_dir.append_samples(records)

    def end_run(self, runner: Any) -> None:
        for _, polls in list(self._polls.values()):
            for poll in polls.values():
                poll.stop()
        self._polls.clear()
