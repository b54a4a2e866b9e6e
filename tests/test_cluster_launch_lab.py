"""The cluster launch path on the loopback lab: mpirun reaches the hosts with the inventory's own ssh
settings (``plm_rsh_args``: user, the launch node's ``launch_ssh_key`` and ``launch_known_hosts``;
the lab's launch node is this machine, so the lab's own files serve) and the management netdev,
no lab agent script."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab


def test_allreduce_with_ssh_settings_from_the_inventory(lab3: LabInfo, tmp_path: Path) -> None:
    lines = Path(lab3.inventory).read_text().splitlines()
    kept = [ln for ln in lines if not ln.startswith(("mpi_rsh_agent=", "bench_lab_subnet="))]
    assert len(kept) == len(lines) - 2  # the lab's agent and subnet really are gone
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("\n".join([*kept, "mgmt_netdev=eth0", f"launch_ssh_key={lab3.key}",
                                     f"launch_known_hosts={lab3.known_hosts}", ""]))
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "benchharness", "run", "suite=allreduce", f"hosts={inventory}",
                          "maxbytes=64K", "repeat=1", "nccl_algo=default", f"out={out}"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    meta = next((out / "raw").rglob("mpirun-h1.json")).read_text()
    assert "plm_rsh_args" in meta and "UserKnownHostsFile=" in meta and "mpi-ssh" not in meta
    assert '"oob_tcp_if_include",\n    "eth0"' in meta
    rows = [s for s in RunDir(out).samples() if s.get("kind", "summary") == "summary"]
    assert {r["size_bytes"] for r in rows} == {8 << i for i in range(14)} and all(r["wrong"] == 0 for r in rows)
    footer = [s for s in RunDir(out).samples() if s.get("kind") == "footer"]
    assert {r["host"] for r in footer[0]["ranks"]} == {"h1", "h2", "h3"}
