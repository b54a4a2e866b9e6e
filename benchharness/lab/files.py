"""Files a loopback lab writes: each host's sshd_config, known_hosts, the MPI ssh agent, the inventory."""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SYSTEM_PYTHON = "/usr/bin/python3"
#: Horovod built by setup.sh against Debian's torch, in a venv of the system python (docs/frameworks.md).
HOROVOD_PYTHON = Path(__file__).resolve().parents[2] / ".venv-horovod" / "bin" / "python"
UNSHAPED_LINE_RATE_GBPS = 10  # what a veth reports to ethtool (10000Mb/s); it is not a real limit
_RATE_RE = re.compile(r"(\d+(?:\.\d+)?)(bit|kbit|mbit|gbit|tbit)")
_RATE_GBPS = {"bit": 1e-9, "kbit": 1e-6, "mbit": 1e-3, "gbit": 1.0, "tbit": 1e3}


def parse_rate_gbps(rate: str) -> float:
    """A tc rate in bits (``2gbit``, ``500mbit``) as 10^9 bit/s; ValueError otherwise."""
    match = _RATE_RE.fullmatch(rate.strip().lower())
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"bad rate {rate!r}: expected a number with bit, kbit, mbit, gbit or tbit")
    return float(match.group(1)) * _RATE_GBPS[match.group(2)]


def sshd_config(hd: Path, address: str, authorized_keys: Path) -> str:
    """The sshd_config of one lab host (pure)."""

    def q(path: Path) -> str:
        return f'"{path}"' if re.search(r"\s", str(path)) else str(path)

    return "\n".join([
        "# sshd of one bench lab host; started inside its network and UTS namespaces",
        "Port 22", f"ListenAddress {address}", f"HostKey {q(hd / 'ssh_host_ed25519_key')}",
        f"PidFile {q(hd / 'sshd.pid')}", f"AuthorizedKeysFile {q(authorized_keys)}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PubkeyAuthentication yes", "UsePAM no", "StrictModes no",
        "UseDNS no", "PrintMotd no", "X11Forwarding no", "MaxStartups 64:30:128", "MaxSessions 64",
        # A lab host is a clean host: bash then skips the machine's ~/.bashrc for ssh commands
        # (it sources it for sshd only at shell level 1), as a freshly installed node would.
        "SetEnv SHLVL=1",
        "Subsystem sftp internal-sftp", ""])


def _ini(value: object) -> str:
    text = str(value)
    return text if re.fullmatch(r"[\w./:@+,=-]+", text) else repr(text)


def render_inventory(state: Mapping[str, Any], python: str = sys.executable) -> str:
    """The Ansible INI inventory of a lab from its state (pure)."""
    d = Path(state["dir"])
    ssh_args = shlex.join(["-o", f"UserKnownHostsFile={d / 'known_hosts'}", "-o",
                           "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes"])
    lines = [f"# bench lab {state['name']}: {len(state['hosts'])} hosts in network namespaces on "
             f"bridge {state['bridge']} ({state['subnet']})"]
    lines += [f"# {r['name']}: bridge {r['bridge']} ({r['subnet']})" for r in state.get("rails") or []]
    lines.append("[lab]")
    for h in state["hosts"]:
        hvars = {"ansible_host": h["address"], "data_ip": h["address"], "netdev": "eth0",
                 "bench_netns": h["netns"]}
        if h.get("cgroup_seen"):  # the host's own CPU time (lab/cgroups.py), read by the sampler
            hvars["telemetry_cpu_cgroup"] = h["cgroup_seen"]
        if h.get("shape"):
            hvars |= {"nic_line_rate_gbps": f"{parse_rate_gbps(h['shape']):g}", "bench_shape": h["shape"]}
        rails = h.get("rails") or []
        if rails:  # one NIC per rail, parallel lists (rail i: the i-th item of each)
            hvars |= {"netdev": ",".join(r["netdev"] for r in rails),
                      "data_ip": ",".join(r["address"] for r in rails),
                      # veths have no serial number: a made-up one per rail, so findings name one
                      "nic_serial": ",".join(f"LAB-{h['name']}-{r['name']}" for r in rails)}
            if any(r.get("shape") for r in rails):
                hvars["nic_line_rate_gbps"] = ",".join(
                    f"{parse_rate_gbps(r['shape']) if r.get('shape') else UNSHAPED_LINE_RATE_GBPS:g}" for r in rails)
                hvars["bench_shape"] = h.get("shape") or ",".join(
                    f"{r['name']}:{r['shape']}" for r in rails if r.get("shape"))
        hvars |= h.get("rdma") or {}
        lines.append(" ".join([h["name"], *(f"{k}={_ini(v)}" for k, v in hvars.items())]))
    gvars = {"ansible_user": "root", "ansible_ssh_private_key_file": _ini(d / "id_ed25519"),
             "ansible_ssh_common_args": repr(ssh_args), "nic_model": "veth",
             "nic_line_rate_gbps": UNSHAPED_LINE_RATE_GBPS, "bench_python": _ini(python),
             # Ansible's interpreter discovery can pick a user's broken shim; the hosts share our disk
             "ansible_python_interpreter": _ini(SYSTEM_PYTHON if Path(SYSTEM_PYTHON).exists() else python),
             # Debian's python3-torch lives in the system python, not in the harness' venv
             "torch_python": _ini(SYSTEM_PYTHON if Path(SYSTEM_PYTHON).exists() else python),
             # jax/jaxlib and tensorflow-cpu from PyPI live in the harness' venv (setup.sh), which the hosts share
             "jax_python": _ini(python), "tf_python": _ini(python),
             # Horovod: setup.sh's .venv-horovod; without it the system python, which has none ("not installed")
             "horovod_python": _ini(HOROVOD_PYTHON if HOROVOD_PYTHON.exists() else SYSTEM_PYTHON),
             "mpi_rsh_agent": _ini(d / "mpi-ssh"), "bench_lab": state["name"],
             "bench_lab_subnet": state["subnet"]}
    lines += ["", "[lab:vars]", *(f"{k}={v}" for k, v in gvars.items()), ""]
    return "\n".join(lines)


def write_files(state: Mapping[str, Any]) -> None:
    """known_hosts, the Open MPI ssh agent and inventory.ini of a lab whose hosts have keys."""
    d = Path(state["dir"])
    keys = []
    for h in state["hosts"]:
        kind, blob = (d / "hosts" / h["name"] / "ssh_host_ed25519_key.pub").read_text().split()[:2]
        keys.append(f"{h['address']} {kind} {blob}\n")
    (d / "known_hosts").write_text("".join(keys))
    ssh = [shutil.which("ssh") or "ssh", "-i", str(d / "id_ed25519"), "-o",
           f"UserKnownHostsFile={d / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes", "-o",
           "IdentitiesOnly=yes", "-o", "BatchMode=yes"]
    agent = d / "mpi-ssh"
    agent.write_text(f"#!/bin/sh\n# ssh into bench lab {state['name']} (Open MPI plm_rsh_agent)\n"
                     f'exec {shlex.join(ssh)} "$@"\n')
    agent.chmod(0o755)
    (d / "inventory.ini").write_text(render_inventory(state))
