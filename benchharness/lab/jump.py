"""A lab behind a jump host: the hosts sit on a /24 the controller has no address or route in.

Jump namespace ``bh-NAME-j``: ``eth0`` on the lab's own (reachable) /24 at .253, bridged to the
root namespace's ``bh-NAME``; bridge ``br0`` holding .254 of a second, hidden /24 of
198.18.0.0/15; its own sshd on .253. Each host's ``eth0`` is on the hidden /24, its veth peer on
``br0`` inside the jump namespace; the jump namespace does not forward. The lab writes
``inventory.ini`` (ProxyJump), ``inventory-proxycommand.ini`` (``ssh -W %h:%p`` with the lab key
and known_hosts), ``ssh_config`` (Host aliases NAME-jump, NAME-hN and the hidden /24 behind
NAME-jump) with ``inventory-alias.ini`` that reaches the hosts only through it.
"""

from __future__ import annotations

import ipaddress
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchharness.core.errors import LabError
from benchharness.lab.files import render_inventory

JUMP_ADDRESS = 253
HIDDEN_GATEWAY = 254
Run = Callable[..., str]


def claimed_index(state: Mapping[str, Any]) -> int | None:
    """The /24 index the hidden network of a jump lab holds (None: not a jump lab)."""
    jump = state.get("jump")
    return int(jump["index"]) if jump else None


def plan(state: dict[str, Any], used: set[int], lab_net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> None:
    """Pick the hidden /24 and re-address the hosts onto it; describe the jump host in ``state``."""
    used = used | {int(state["index"])}
    index = next((i for i in range(lab_net.num_addresses // 256) if i not in used), None)
    if index is None:
        raise LabError(f"lab {state['name']}: no free /24 left in {lab_net} for the hidden network")
    hidden = ipaddress.ip_network((int(lab_net.network_address) + 256 * index, 24))
    for n, host in enumerate(state["hosts"], start=1):
        host["address"] = str(hidden[n])
    subnet = ipaddress.ip_network(state["subnet"])
    state["jump"] = {"name": "jump", "netns": f"bh-{state['name']}-j", "veth": f"bh{state['index']}j",
                     "address": str(subnet[JUMP_ADDRESS]), "index": index, "subnet": str(hidden),
                     "gateway": str(hidden[HIDDEN_GATEWAY]), "shape": None, "sshd_pid": None}


def extra_hosts(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Namespaces besides the hosts' that teardown must empty and remove."""
    return [dict(state["jump"])] if state.get("jump") else []


def build(state: dict[str, Any], run: Run, start_sshd: Callable[[Path, Mapping[str, Any]], None],
          wait_sshd: Callable[[Path, list[dict[str, Any]]], None]) -> None:
    """Make the jump namespace and the hidden hosts, start every sshd and wait for them."""
    d, jump, br = Path(state["dir"]), state["jump"], state["bridge"]
    jns = jump["netns"]
    run("jump: create namespace", ["ip", "netns", "add", jns])
    run("jump: create veth", ["ip", "link", "add", jump["veth"], "type", "veth", "peer", "name", "eth0",
                              "netns", jns])
    run("jump: attach veth to bridge", ["ip", "link", "set", jump["veth"], "master", br, "up"])
    for step, argv in [("bring up lo", ["link", "set", "lo", "up"]),
                       ("address eth0", ["addr", "add", f"{jump['address']}/24", "dev", "eth0"]),
                       ("bring up eth0", ["link", "set", "eth0", "up"]),
                       ("create hidden bridge", ["link", "add", "br0", "type", "bridge"]),
                       ("address hidden bridge", ["addr", "add", f"{jump['gateway']}/24", "dev", "br0"]),
                       ("bring up hidden bridge", ["link", "set", "br0", "up"])]:
        run(f"jump: {step}", ["ip", "-n", jns, *argv])
    for host in state["hosts"]:
        h, ns, veth = host["name"], host["netns"], host["veth"]
        run(f"{h}: create namespace", ["ip", "netns", "add", ns])
        run(f"{h}: create veth", ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
        run(f"{h}: move veth behind the jump host", ["ip", "link", "set", veth, "netns", jns])
        run(f"{h}: attach veth to hidden bridge", ["ip", "-n", jns, "link", "set", veth, "master", "br0", "up"])
        run(f"{h}: bring up lo", ["ip", "-n", ns, "link", "set", "lo", "up"])
        run(f"{h}: address eth0", ["ip", "-n", ns, "addr", "add", f"{host['address']}/24", "dev", "eth0"])
        run(f"{h}: bring up eth0", ["ip", "-n", ns, "link", "set", "eth0", "up"])
    for host in [jump, *state["hosts"]]:
        start_sshd(d, host)
    wait_sshd(d, [jump])
    _wait_hidden(d, jns, state["hosts"])


_BANNER = ("import socket,sys\ntry:\n s=socket.create_connection((sys.argv[1],22),0.5)\n"
           " sys.exit(0 if s.recv(4)==b'SSH-' else 1)\nexcept OSError:\n sys.exit(1)\n")


def _wait_hidden(d: Path, jns: str, hosts: list[dict[str, Any]], wait_s: float = 20.0) -> None:
    """The controller cannot see the hosts: look for their sshd banners from the jump namespace."""
    deadline = time.monotonic() + wait_s
    for host in hosts:
        pid_file = d / "hosts" / host["name"] / "sshd.pid"
        while True:
            ok = subprocess.run(["ip", "netns", "exec", jns, sys.executable, "-c", _BANNER, host["address"]],
                                capture_output=True, check=False, timeout=10).returncode == 0
            if ok and pid_file.exists():
                host["sshd_pid"] = int(pid_file.read_text().strip())
                break
            if time.monotonic() > deadline:
                raise LabError(f"{host['name']}: wait for sshd failed: nothing accepted ssh on "
                               f"{host['address']}:22 (seen from {jns}) within {wait_s:.0f} s")
            time.sleep(0.1)


def ssh_config_text(state: Mapping[str, Any]) -> str:
    """An ssh_config that reaches the hidden hosts by alias (NAME-hN) or address through NAME-jump."""
    d, name, jump = Path(state["dir"]), state["name"], state["jump"]
    hidden = ipaddress.ip_network(jump["subnet"])
    pattern = ".".join(str(hidden.network_address).split(".")[:3]) + ".*"
    lines = [f"# bench lab {name}: hosts on {jump['subnet']}, reachable only through {name}-jump",
             f"Host {name}-jump", f"  HostName {jump['address']}", ""]
    for h in state["hosts"]:
        lines += [f"Host {name}-{h['name']}", f"  HostName {h['address']}", f"  ProxyJump {name}-jump", ""]
    lines += [f"Host {pattern}", f"  ProxyJump {name}-jump", "",
              f"Host {name}-jump {name}-h* {pattern}", "  User root", f'  IdentityFile "{d / "id_ed25519"}"',
              "  IdentitiesOnly yes", f'  UserKnownHostsFile "{d / "known_hosts"}"',
              "  StrictHostKeyChecking yes", "  BatchMode yes", ""]
    return "\n".join(lines)


def _with_args(inventory: str, ssh_args: list[str] | None, alias: str | None = None) -> str:
    out = []
    for line in inventory.splitlines():
        if line.startswith("ansible_ssh_common_args=") and ssh_args is not None:
            line = f"ansible_ssh_common_args={shlex.join(ssh_args)!r}"
        elif alias is not None and line.startswith("ansible_ssh_private_key_file="):
            continue  # the alias inventory gets its key from the ssh_config, as a user's would
        elif alias is not None and " ansible_host=" in line:
            first, rest = line.split(" ", 1)
            line = f"{first} ansible_host={alias}-{first} " + rest.split(" ", 1)[1]
        out.append(line)
    return "\n".join(out) + "\n"


def write_files(state: Mapping[str, Any]) -> None:
    """The jump host's key in known_hosts, the three inventories, ssh_config and the MPI agent."""
    d, jump = Path(state["dir"]), state["jump"]
    kind, blob = (d / "hosts" / "jump" / "ssh_host_ed25519_key.pub").read_text().split()[:2]
    with open(d / "known_hosts", "a") as kh:
        kh.write(f"{jump['address']} {kind} {blob}\n")
    (d / "ssh_config").write_text(ssh_config_text(state))
    common = ["-o", f"UserKnownHostsFile={d / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
              "-o", "IdentitiesOnly=yes"]
    base = render_inventory(state)
    (d / "inventory.ini").write_text(_with_args(base, [*common, "-o", f"ProxyJump=root@{jump['address']}"]))
    hop = shlex.join(["ssh", "-i", str(d / "id_ed25519"), *common, "-o", "BatchMode=yes",
                      "-W", "%h:%p", "-q", f"root@{jump['address']}"])
    (d / "inventory-proxycommand.ini").write_text(_with_args(base, [*common, "-o", f"ProxyCommand={hop}"]))
    (d / "inventory-alias.ini").write_text(_with_args(base, ["-F", str(d / "ssh_config")], alias=state["name"]))
    agent = d / "mpi-ssh"
    agent.write_text(f"#!/bin/sh\n# ssh into bench lab {state['name']} through its jump host (Open MPI)\n"
                     f'exec {shlex.join([shutil.which("ssh") or "ssh", "-F", str(d / "ssh_config")])} "$@"\n')
