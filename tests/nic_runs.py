"""Three real lab runs that stand for three candidate NICs, made once per test session
(``nic_runs`` in conftest.py) and read by the comparison tests: test_scorecard_lab (the scorecard
against the shapes), test_scaling_lab (host counts kept apart, the MTU named) and
test_compare_browser (the page in Chromium).

Each run: 3 lab hosts (real sshd in namespaces), every link shaped to the run's rate (2, 1 and 0.5
Gbit/s: rates a loaded 2-core machine still reaches), iperf3 between every pair and the MPI CPU
all-reduce on 2 then 3 hosts (the shipped `scaling` suite's step), two repetitions. h1's BMC is an
OpenIPMI ``ipmi_sim`` reading 360, 380 and 400 W; every host has a NIC and optic price and power in
its inventory line; the third run sets MTU 1400 on every host; only the first also runs a sockperf
ping-pong, so the others have latency "not measured"."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bmc_emulators import ipmi_sim

BMC_USER, BMC_PASSWORD, BMC_PASSWORD_ENV = "benchbmc", "ipmi-Pw-4e90d2", "BENCH_TEST_BMC_PW_CB"
PROGRAMS = ("ipmi_sim", "ipmitool", "sdrcomp", "iperf3", "mpirun", "sockperf", "ip")

SUITE = """description: three candidate NICs (tests/nic_runs.py)
settings: {duration: 2, repeat: 2, base_port: 5631, timeout: 120, telemetry: "on", preflight: "off", power_interval: 1}
tests:
  - name: tcp-bw
    tool: iperf3
    pattern: all-pairs
    params: {protocol: tcp, length: 1M, streams: 1}
  - name: allreduce-scaling
    tool: collective
    pattern: scaling
    params: {op: all_reduce, minbytes: 64K, maxbytes: 4M, cpu_maxbytes: 4M, stepfactor: 4, iters: 5, warmup: 1}
"""
LATENCY = """  - name: ping-pong
    tool: sockperf
    pattern: pairs
    params: {mode: ping-pong, protocol: udp, size: 64}
"""


@dataclass(frozen=True)
class Candidate:
    """One run: its label (the link rate), h1's BMC watts, the MTU set on every host (None: 1500),
    the NIC's price in USD, and whether it also measures latency."""
    label: str
    watts: int
    mtu: str | None
    nic_price_usd: int
    latency: bool


CANDIDATES = (Candidate("2gbit", 360, None, 1500, True), Candidate("1gbit", 380, None, 1200, False),
              Candidate("500mbit", 400, "1400", 900, False))


def make_runs(base: Path, make_lab: Callable[..., AbstractContextManager[Any]],
              run_with_host_vars: Callable[..., tuple[Path, subprocess.CompletedProcess[str]]]) -> dict[str, Path]:
    """The three runs under ``base``, by label; a run that fails raises with bench's output."""
    os.environ[BMC_PASSWORD_ENV] = BMC_PASSWORD  # bench reads the password from the variable the inventory names
    runs = {}
    for c in CANDIDATES:
        suite = base / f"{c.label}.yaml"
        suite.write_text(SUITE + (LATENCY if c.latency else ""))
        with ipmi_sim(base / f"ipmi-{c.label}", BMC_USER, BMC_PASSWORD, c.watts) as bmc, \
                make_lab(f"cb{c.label[:2]}", 3, shape={h: c.label for h in ("h1", "h2", "h3")}) as info:
            if c.mtu:
                for host in info.hosts:
                    subprocess.run(["ip", "netns", "exec", host.netns, "ip", "link", "set", "dev", "eth0", "mtu", c.mtu],
                                   check=True, timeout=30)
            nic = f"nic_price_usd={c.nic_price_usd} nic_power_w=25 optic_price_usd=700 optic_power_w=12"
            host_vars = {"h1": f"bmc_address=127.0.0.1 bmc_port={bmc.port} bmc_user={BMC_USER} "
                               f"bmc_password_env={BMC_PASSWORD_ENV} bmc_cipher_suite=3 {nic}",
                         "h2": nic, "h3": nic}
            (base / c.label).mkdir()
            run, res = run_with_host_vars(info, base / c.label, suite, host_vars, timeout=420,
                                          args=(f"label={c.label}",))
        if res.returncode != 0:
            raise AssertionError(f"run {c.label} exited {res.returncode}:\n{res.stdout}\n{res.stderr}")
        runs[c.label] = run
    return runs
