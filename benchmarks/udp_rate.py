#!/usr/bin/env python3
"""UDP 64 B packet rate: `bench` against the same senders run by hand, on the same lab link.

`bench run` of benchmarks/suites/udp-rate.yaml (4 iperf3 processes at once, each its own port,
UDP, 64-byte datagrams, unpaced) alternates with the same 4 server/client pairs started by hand
(`ip netns exec`), so that drift of the machine hits both alike. Each sender is paced at
``--bitrate`` (default 8 Mbit/s, 15,625 packets/s of 64 B): the 2-core lab machine, shared with
other work, cannot sustain 8 unpaced iperf3 processes without its receivers dropping most
packets at random, which would measure the machine's noise, not bench's fidelity. Each side's figure is the
received packet rate summed over the senders: (packets - lost_packets) / seconds of each
receiver's UDP summary (iperf3 -J ``end.sum``). The ratio is min(b/h, h/b) of the medians: within
5% is >= 0.95. Drops and the senders' CPU are kept beside it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import threading
from pathlib import Path

from _common import ROOT, bench, lab_up, median, netns_argv, result

GOAL = 0.95
SENDERS = 4
SUITE = ROOT / "benchmarks" / "suites" / "udp-rate.yaml"


def by_hand(info, duration: int, base_port: int, bitrate: str) -> tuple[float, int, list[float]]:
    """(received Mpps, lost packets, each sender's CPU %) of SENDERS pairs h2 -> h1 started at once."""
    h1 = info.hosts[0]
    ports = [base_port + i for i in range(SENDERS)]
    servers = [subprocess.Popen(netns_argv(info, 1, ["iperf3", "-s", "-1", "-p", str(p), "-B", h1.address,
                                                     "--forceflush"]), stdout=subprocess.PIPE, text=True)
               for p in ports]
    try:
        for server in servers:
            assert server.stdout is not None
            for line in server.stdout:
                if "Server listening" in line:
                    break
            # keep reading its reports: a full pipe would stall the receiver and count as drops
            threading.Thread(target=server.stdout.read, daemon=True).start()
        clients = [subprocess.Popen(netns_argv(info, 2, ["iperf3", "-c", h1.address, "-p", str(p), "-J", "-t",
                                                         str(duration), "-u", "-l", "64", "-b", bitrate]),
                                    stdout=subprocess.PIPE, text=True) for p in ports]
        outs = [c.communicate(timeout=duration + 30)[0] for c in clients]
    finally:
        for server in servers:
            server.wait(10)
    mpps, lost, cpu = 0.0, 0, []
    for out in outs:
        doc = json.loads(out)
        s = doc["end"]["sum"]
        mpps += (s["packets"] - s["lost_packets"]) / s["seconds"] / 1e6
        lost += s["lost_packets"]
        cpu.append(doc["end"]["cpu_utilization_percent"]["host_total"])
    return mpps, lost, cpu


def via_bench(info, duration: int, out: Path, bitrate: str, extra: list[str]) -> tuple[float, int, bool]:
    """(received Mpps, lost packets, sender_cpu_bound) of the flow's summary sample."""
    bench("run", f"suite={SUITE}", f"hosts={info.inventory}", f"duration={duration}", f"bitrate={bitrate}",
          f"out={out}", *extra)
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    (row,) = [r for r in rows if r.get("kind") == "summary"]
    assert row["processes"] == SENDERS, row
    return float(row["msg_rate_mpps"]), int(row["lost_packets"]), bool(row.get("sender_cpu_bound"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--bitrate", default="8M", help="iperf3 -b per sender (0: unpaced)")
    ap.add_argument("bench_args", nargs="*", help="extra key=value for bench run (e.g. telemetry=off)")
    a = ap.parse_args()
    bench_mpps, hand_mpps, bench_lost, hand_lost, hand_cpu, bound = [], [], [], [], [], []
    with lab_up("bmudp", 2) as info, tempfile.TemporaryDirectory() as tmp:
        for rep in range(a.reps):
            mpps, lost, cpu_bound = via_bench(info, a.duration, Path(tmp) / f"run{rep}", a.bitrate, a.bench_args)
            bench_mpps.append(mpps)
            bench_lost.append(lost)
            bound.append(cpu_bound)
            mpps, lost, cpu = by_hand(info, a.duration, 5990 + 10 * rep, a.bitrate)
            hand_mpps.append(mpps)
            hand_lost.append(lost)
            hand_cpu.append([round(c, 1) for c in cpu])
    b, h = median(bench_mpps), median(hand_mpps)
    result("udp_rate", min(b / h, h / b), GOAL, "higher",
           {"bench_mpps": [round(x, 4) for x in bench_mpps], "by_hand_mpps": [round(x, 4) for x in hand_mpps],
            "bench_lost_packets": bench_lost, "by_hand_lost_packets": hand_lost,
            "by_hand_sender_cpu_pct": hand_cpu, "bench_sender_cpu_bound": bound,
            "senders": SENDERS, "duration_s": a.duration, "bitrate_per_sender": a.bitrate},
           [f"bench run suite=benchmarks/suites/udp-rate.yaml hosts=<2-host lab> duration={a.duration} "
            f"bitrate={a.bitrate} "
            + " ".join(a.bench_args),
            f"{SENDERS}x: ip netns exec <h1> iperf3 -s -1 -p P -B <h1>; ip netns exec <h2> iperf3 -c <h1> -p P "
            f"-J -t {a.duration} -u -l 64 -b {a.bitrate} (all {SENDERS} clients at once)"])


if __name__ == "__main__":
    main()
