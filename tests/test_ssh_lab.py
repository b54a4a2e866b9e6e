"""Real sshd: hosts behind a jump host (ProxyJump, ProxyCommand, ssh_config alias, the DeepOps
inventory shape), a fleet of connections against a low MaxStartups, a cut link under keep-alive."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import lab_name
from test_ssh_view import _deepops_filled

from benchharness.config.inventory import load_inventory
from benchharness.lab import control as lab
from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir
from benchharness.transport.ssh import SSHTransport

pytestmark = pytest.mark.lab


JUMP_LAB = lab_name("tjump")


def bench(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def jump_lab(lab_base: Path) -> Iterator[LabInfo]:
    if os.geteuid() != 0:
        pytest.skip("the loopback lab needs root")
    info = lab.lab_up(3, name=JUMP_LAB, jump=True, base_dir=lab_base)
    try:
        yield info
    finally:
        lab.lab_down(JUMP_LAB, base_dir=lab_base)


def _state(info: LabInfo) -> dict:
    return json.loads((info.dir / "lab.json").read_text())


def test_jump_lab_hosts_are_out_of_the_controllers_reach(jump_lab: LabInfo) -> None:
    hidden = ipaddress.ip_network(_state(jump_lab)["jump"]["subnet"])
    root = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    assert not [a for a in re.findall(r"inet (\S+)/", root) if ipaddress.ip_address(a) in hidden]
    assert all(ipaddress.ip_address(h.address) in hidden for h in jump_lab.hosts)
    # no lab bridge routes there (this machine's default route leads outside, never to the lab)
    route = subprocess.run(["ip", "route", "get", jump_lab.hosts[0].address], capture_output=True, text=True).stdout
    assert " bh-" not in route


@pytest.mark.parametrize(("inventory", "via"), [
    ("inventory.ini", "ProxyJump root@"),
    ("inventory-proxycommand.ini", "ProxyCommand ssh -i"),
    ("inventory-alias.ini", f"(alias {JUMP_LAB}-h1)"),
], ids=["proxyjump", "proxycommand", "alias"])  # no lab name in ids: every xdist worker has its own
def test_same_suite_runs_through_the_jump_host(jump_lab: LabInfo, tmp_path: Path, inventory: str,
                                               via: str) -> None:
    inv = jump_lab.dir / inventory
    ping = bench("doctor", f"hosts={inv}", "ping=true")
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert ping.stdout.count("| SUCCESS") == 3 and via in ping.stdout
    out = tmp_path / "run"
    res = bench("run", "suite=quick", f"hosts={inv}", "length=128K", "duration=1", f"out={out}")
    assert res.returncode == 0, res.stdout + res.stderr
    run = RunDir(out)
    assert run.run_info()["state"] == "complete"
    pairs = {frozenset((s["server"], s["client"])) for s in run.samples() if s.get("kind", "summary") == "summary"}
    assert pairs == {frozenset(p) for p in (("h1", "h2"), ("h2", "h3"), ("h1", "h3"))}


def test_deepops_inventory_shape_runs_through_its_proxycommand(jump_lab: LabInfo, tmp_path: Path) -> None:
    d, jump = jump_lab.dir, _state(jump_lab)["jump"]
    hop = (f"ssh -i {d / 'id_ed25519'} -o UserKnownHostsFile={d / 'known_hosts'} -o StrictHostKeyChecking=yes "
           f"-o BatchMode=yes -W %h:%p -q root@{jump['address']}")
    inv = _deepops_filled(tmp_path, {"gpu01": jump_lab.hosts[0].address, "gpu02": jump_lab.hosts[1].address},
                          hop, user="root")
    text = inv.read_text()
    inv.write_text(text.replace("[all:vars]\n", "[all:vars]\nansible_ssh_private_key_file="
                                f"{d / 'id_ed25519'}\nansible_ssh_extra_args='-o UserKnownHostsFile="
                                f"{d / 'known_hosts'}'\n"))
    out = tmp_path / "run"
    res = bench("run", "suite=quick", f"hosts={inv}", "length=128K", "duration=1", f"out={out}")
    assert res.returncode == 0, res.stdout + res.stderr
    info = RunDir(out).run_info()
    assert info["hosts"] == ["gpu01", "gpu02"] and info["state"] == "complete"
    assert all(h["proxy_command"].startswith("ssh -i ") for h in info["inventory"]["hosts"])


def _restart_sshd_with(info: LabInfo, option: str) -> None:
    """Rewrite each host's MaxStartups and SIGHUP its sshd (it re-executes with the new config)."""
    for h in info.hosts:
        cfg = info.dir / "hosts" / h.name / "sshd_config"
        cfg.write_text(re.sub(r"MaxStartups .*", option, cfg.read_text()))
        assert h.sshd_pid
        os.kill(h.sshd_pid, signal.SIGHUP)
    time.sleep(1.0)


def test_32_connections_at_once_reach_every_host_despite_maxstartups(lab_maker, lab_base: Path) -> None:
    with lab_maker("tmaxst", 2) as info:
        _restart_sshd_with(info, "MaxStartups 2:100:2")
        hosts = load_inventory(info.inventory).hosts
        transports = [SSHTransport(hosts[i % len(hosts)]) for i in range(32)]

        def reach(t: SSHTransport) -> str:
            try:
                rc, out, _, _ = t.run(["hostname"], timeout=60)
                return out.strip() if rc == 0 else f"rc {rc}"
            finally:
                t.close()

        with ThreadPoolExecutor(max_workers=32) as pool:
            names = list(pool.map(reach, transports))
        log = (info.dir / "hosts" / "h1" / "sshd.log").read_text()
    assert sorted(names) == ["h1"] * 16 + ["h2"] * 16
    assert sum(t.retries for t in transports) > 0  # sshd did drop some: the retries are counted
    assert "drop connection" in log or "beginning MaxStartups throttling" in log


def test_cut_link_is_unreachable_within_the_keepalive_time(lab_maker, tmp_path: Path) -> None:
    interval, count = 1, 2
    with lab_maker("tcut", 2) as info:
        inv = tmp_path / "inv.ini"
        inv.write_text(info.inventory.read_text().replace(
            "[lab:vars]\n", f"[lab:vars]\nansible_ssh_extra_args='-o ServerAliveInterval={interval} "
                            f"-o ServerAliveCountMax={count}'\n"))
        host = load_inventory(inv).host("h1")
        assert (host.ssh["keepalive_s"], host.ssh["keepalive_count"]) == (interval, count)
        transport = SSHTransport(replace(host))
        proc = transport.start(["sleep", "60"])
        time.sleep(0.5)
        subprocess.run(["ip", "link", "set", info.hosts[0].veth, "down"], check=True)
        cut = time.monotonic()
        rc = proc.wait(30)
        noticed = time.monotonic() - cut
        transport.close()
    assert rc == -1 and transport.lost is not None and transport.lost.kind == "unreachable"
    assert "keep-alive" in transport.lost.message
    assert noticed < 3 * interval * count, noticed
