"""A stored run with fabric health data, written the way the runner and the telemetry observer
write it: steps with times, a soak step's interval samples, per-step counter deltas with their
context, counter series (``counters_interval``) and sampler lines with temperatures.

Counter names are mlx5's (``rx_bytes_phy``, ``rx_prio3_pause_duration``, ``rx_discards_phy``;
kernel doc networking/device_drivers/ethernet/mellanox/mlx5/counters.rst); the values are made up
to a known truth: rail1 of h1 loses 20% of its bandwidth in the last third and pauses 10% of
the time, h1's NIC warms 3 °C per minute.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from benchharness.results.store import RunDir
from tests.sampler_lines import HostTree, real_lines

T0 = 1_767_000_000.0  # wall clock of the step's start
SECONDS = 180
STEP = "soak-bidir-r0"
RAILS = {"rail0": {"objects": ["eth1", "mlx5_0/1"], "netdev": "eth1", "rdma_dev": "mlx5_0", "serial": "MT0001"},
         "rail1": {"objects": ["eth2", "mlx5_1/1"], "netdev": "eth2", "rdma_dev": "mlx5_1", "serial": "MT0002"}}
HEALTH = {"degradation": 0.05, "sustained_s": 60.0, "temp_peak_c": 90.0, "temp_slope_c_per_min": 2.0,
          "pause_share": 0.05}


def rail_gbps(host: str, rail: str, t: float) -> float:
    """The known truth: 100 Gbit/s a rail, h1.rail1 drops to 80 in the last third of the step."""
    return 80.0 if (host, rail) == ("h1", "rail1") and t >= SECONDS * 2 / 3 else 100.0


def _interval_counters(host: str, rail: str, t: float, dt: float) -> dict[str, int]:
    nd = RAILS[rail]["netdev"]
    nbytes = int(rail_gbps(host, rail, t) * 1e9 / 8 * dt)
    out = {f"ethtool:{nd}:rx_bytes_phy": nbytes // 2, f"ethtool:{nd}:tx_bytes_phy": nbytes // 2,
           f"ethtool:{nd}:rx_packets_phy": nbytes // 4096, f"ethtool:{nd}:tx_packets_phy": nbytes // 4096}
    if (host, rail) == ("h1", "rail1"):
        out[f"ethtool:{nd}:rx_prio3_pause_duration"] = int(0.10 * dt * 1e6)  # 10% of the time, in us
        out[f"ethtool:{nd}:rx_prio3_pause"] = 1200
        out[f"ethtool:{nd}:rx_discards_phy"] = 7
    return out


def build(root: Path, *, interval_samples: bool = True, series_every: float = 10.0,
          evil: bool = False) -> RunDir:
    """Write the run under ``root/run``; ``evil``: host and sensor names carrying markup."""
    run = RunDir(root / "run")
    run.path.mkdir(parents=True)
    hosts = ["h1", "<b>h2</b>"] if evil else ["h1", "h2"]
    suite = {"name": "soak", "settings": {"counters_interval": series_every},
             "tests": [{"name": "soak-bidir", "tool": "perftest", "health": HEALTH}]}
    run.write_run_info({"run_id": "r-soak", "hosts": hosts, "suite": suite, "state": "finished", "exit_code": 0,
                        "started": T0 - 5, "ended": T0 + SECONDS + 5})
    with open(run.path / "steps.jsonl", "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"step": STEP, "test": "soak-bidir", "status": "ok", "hosts": hosts,
                             "started": T0, "ended": T0 + SECONDS}) + "\n")
    samples: list[dict[str, Any]] = []
    for rail in RAILS:
        labels = {"test": "soak-bidir", "tool": "perftest", "step": STEP, "rep": 0, "round": 0,
                  "pattern": "pairs", "server": hosts[1], "client": "h1", "client_rail": rail,
                  "server_rail": rail, "pair": f"h1<->{hosts[1]}", "size_bytes": 65536}
        samples.append({**labels, "kind": "summary", "bw_avg_gbps": 95.0})
        if interval_samples:
            samples += [{**labels, "kind": "interval", "t_start_s": float(t), "t_end_s": float(t + 1),
                         "bw_avg_gbps": rail_gbps("h1", rail, t)} for t in range(SECONDS)]
    with open(run.path / "samples.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(s) + "\n" for s in samples)
    counters: dict[str, Any] = {}
    for host in hosts:
        ctx = {"test": "soak-bidir", "seconds": float(SECONDS), "rails": RAILS, "step_rails": list(RAILS)}
        total: dict[str, int] = {}
        rows = []
        t = 0.0
        while t < SECONDS:
            dt = min(series_every or SECONDS, SECONDS - t)
            per = {k: v for rail in RAILS for k, v in _interval_counters(host, rail, t, dt).items()}
            rows.append({"t0": T0 + t, "t1": T0 + t + dt, "counters": per})
            for k, v in per.items():
                total[k] = total.get(k, 0) + v
            t += dt
        # eth1 (rail0) exposes no pause or discard counters at all: "not exposed", never zero
        counters[host] = {"counters": total, "context": ctx}
        if series_every:
            run.write_text(f"telemetry/series/{STEP}/{_safe(host)}.jsonl",
                           "".join(json.dumps(r) + "\n" for r in rows))
        # the real sampler's lines (tests/sampler_lines.py): the NIC chip warms 3 °C/min on h1
        chip = "mlx5" if not evil else "<i>mlx5</i>"
        slope = 3.0 if host == "h1" else 0.5
        with tempfile.TemporaryDirectory() as tmp:
            tree = HostTree(Path(tmp), netdev="eth1", temps={chip: 60.0, "coretemp": 50.0})
            lines = real_lines(tree, T0, 2.0, [{"busy": [0.1], "gbps": 0.01,
                                                "temps": {chip: 60.0 + slope * s / 60.0}}
                                               for s in range(2, SECONDS + 1, 2)])
        run.write_text(f"telemetry/samples/{STEP}/{_safe(host)}.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    run.write_json(f"telemetry/counters/{STEP}.json", counters)
    return run


def _safe(name: str) -> str:
    from benchharness.core.naming import safe_name

    return safe_name(name)
