"""Loopback lab: pure helpers here, then real namespaces, sshd, ssh and iperf3 (marked ``lab``)."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

import paramiko
import pytest
from conftest import lab_name, make_lab

from benchharness.core.errors import LabError
from benchharness.lab import control as lab
from benchharness.lab import files as lab_files
from benchharness.lab import rdma as lab_rdma
from benchharness.lab.control import LabHost, LabInfo

# --- pure helpers -------------------------------------------------------------------------


def test_parse_shape_accepts_one_or_many_hosts() -> None:
    assert lab.parse_shape("h2:2gbit") == {"h2": "2gbit"}
    assert lab.parse_shape("h2:2gbit, h3:500Mbit") == {"h2": "2gbit", "h3": "500mbit"}
    assert lab.parse_rate_gbps("500mbit") == pytest.approx(0.5)
    assert lab.parse_rate_gbps("1.5tbit") == pytest.approx(1500)


@pytest.mark.parametrize("spec", ["h2", "h2:", "x2:2gbit", "h0:1gbit", "h2:2gb", "h2:fast",
                                  "h2:0gbit", "h2:1gbit,h2:2gbit", ""])
def test_parse_shape_rejects_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError):
        lab.parse_shape(spec)


def test_parse_shape_rejects_unknown_host() -> None:
    assert lab.parse_shape("h3:1gbit", hosts=3) == {"h3": "1gbit"}
    with pytest.raises(ValueError, match="unknown host h4"):
        lab.parse_shape("h4:1gbit", hosts=3)


def _state(tmp_path: Path) -> dict[str, Any]:
    return {"name": "t9", "dir": str(tmp_path), "bridge": "bh-t9", "subnet": "198.18.9.0/24",
            "hosts": [
                {"name": "h1", "netns": "bh-t9-h1", "address": "198.18.9.1", "veth": "bh9h1",
                 "shape": None, "rdma": {}},
                {"name": "h2", "netns": "bh-t9-h2", "address": "198.18.9.2", "veth": "bh9h2",
                 "shape": "2gbit", "rdma": {"rdma_dev": "rxe9", "rdma_port": 1, "gid_index": 1}}]}


def test_inventory_reads_back_through_ansible(tmp_path: Path) -> None:
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.manager import VariableManager

    path = tmp_path / "inventory.ini"
    path.write_text(lab_files.render_inventory(_state(tmp_path), python="/opt/py/bin/python"))
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(path)])
    variables = VariableManager(loader=loader, inventory=inventory)
    assert sorted(inventory.get_groups_dict()["lab"]) == ["h1", "h2"]
    h1 = variables.get_vars(host=inventory.get_host("h1"))
    h2 = variables.get_vars(host=inventory.get_host("h2"))
    assert (h1["ansible_host"], h1["data_ip"], h1["netdev"], h1["bench_netns"]) == (
        "198.18.9.1", "198.18.9.1", "eth0", "bh-t9-h1")
    assert h1["ansible_user"] == "root"
    assert h1["ansible_ssh_private_key_file"] == f"{tmp_path}/id_ed25519"
    assert h1["ansible_ssh_common_args"] == (f"-o UserKnownHostsFile={tmp_path}/known_hosts "
                                             "-o StrictHostKeyChecking=yes -o IdentitiesOnly=yes")
    assert h1["nic_model"] == "veth"
    assert h1["nic_line_rate_gbps"] == lab_files.UNSHAPED_LINE_RATE_GBPS
    assert h2["nic_line_rate_gbps"] == 2  # the shaped host's own rate beats the group's
    assert h1["bench_python"] == "/opt/py/bin/python"
    assert h1["mpi_rsh_agent"] == f"{tmp_path}/mpi-ssh"
    assert (h2["rdma_dev"], h2["rdma_port"], h2["gid_index"]) == ("rxe9", 1, 1)
    assert "rdma_dev" not in h1


# This kernel's /proc/config.gz says exactly these lines about RDMA and modules.
NO_RDMA_CONFIG = "# CONFIG_MODULES is not set\nCONFIG_NET_NS=y\n# CONFIG_INFINIBAND is not set\n"


def test_rxe_missing_reason_names_module_kernel_and_cause() -> None:
    reason = lab_rdma.rxe_missing_reason("6.18.44-x", NO_RDMA_CONFIG, False, False)
    assert reason is not None and "rdma_rxe" in reason and "6.18.44-x" in reason
    assert "CONFIG_INFINIBAND is not set" in reason and "\n" not in reason
    # names the packages that bring the module on Debian and on Ubuntu
    assert "linux-image-amd64" in reason and "linux-modules-extra-6.18.44-x" in reason
    rxe_m = "CONFIG_MODULES=y\nCONFIG_INFINIBAND=y\nCONFIG_RDMA_RXE=m\n"
    assert lab_rdma.rxe_missing_reason("6.1.0", rxe_m, False, True) is None
    assert "no rdma_rxe.ko" in (lab_rdma.rxe_missing_reason("6.1.0", rxe_m, False, False) or "")
    assert lab_rdma.rxe_missing_reason("6.1.0", "CONFIG_INFINIBAND=y\nCONFIG_RDMA_RXE=y\n", False, False) is None
    assert lab_rdma.rxe_missing_reason("6.1.0", NO_RDMA_CONFIG, True, False) is None  # loaded wins


def test_rxe_layout_and_gid_lookup(tmp_path: Path) -> None:
    assert lab_rdma.rxe_layout("6.18.44-fc") == "shared"
    assert lab_rdma.rxe_layout("7.1.0") == "per-host"
    assert lab_rdma.mapped_gid("198.18.0.254") == "0000:0000:0000:0000:0000:ffff:c612:00fe"
    # sysfs layout of an rxe port: gids/N and gid_attrs/types/N (RoCE v2 only for rxe)
    port = tmp_path / "rxe0" / "ports" / "1"
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs" / "types").mkdir(parents=True)
    for index, gid in enumerate(["fe80:0000:0000:0000:70b4:a4ff:fe5e:1c2d",
                                 "0000:0000:0000:0000:0000:ffff:c612:00fe",
                                 "0000:0000:0000:0000:0000:0000:0000:0000"]):
        (port / "gids" / str(index)).write_text(gid + "\n")
        if index < 2:
            (port / "gid_attrs" / "types" / str(index)).write_text("RoCE v2\n")
    assert lab_rdma.find_gid_index("rxe0", "198.18.0.254", sysfs=tmp_path) == 1
    with pytest.raises(LabError, match=r"no RoCE v2 GID for 198\.18\.0\.7"):
        lab_rdma.find_gid_index("rxe0", "198.18.0.7", timeout_s=0.2, sysfs=tmp_path)


def test_lab_needs_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match="bench lab needs root"):
        lab.lab_up(1, name="tx", base_dir=tmp_path)
    with pytest.raises(LabError, match="bench lab needs root"):
        lab.lab_down("tx", base_dir=tmp_path)


# --- real labs ----------------------------------------------------------------------------

SSH_OPTS = ["-F", "/dev/null", "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes",
            "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]


def _openssh(info: LabInfo, host: LabHost, known_hosts: Path, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", *SSH_OPTS, "-i", str(info.key), "-o", f"UserKnownHostsFile={known_hosts}",
                           f"root@{host.address}", command], capture_output=True, text=True, timeout=20)


def _paramiko(info: LabInfo, host: LabHost, known_hosts: Path, command: str) -> str:
    client = paramiko.SSHClient()
    client.load_host_keys(str(known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    try:
        client.connect(host.address, username="root", key_filename=str(info.key), look_for_keys=False,
                       allow_agent=False, timeout=5)
        _, out, _ = client.exec_command(command, timeout=10)
        return out.read().decode().strip()
    finally:
        client.close()


def _links() -> set[str]:
    return {p.name for p in Path("/sys/class/net").iterdir()}


def _gone(info: LabInfo) -> list[str]:
    """Everything of ``info`` that is still there (empty when the lab is fully removed)."""
    left = [h.netns for h in info.hosts if Path("/run/netns", h.netns).exists()]
    left += [n for n in [info.bridge, *(h.veth for h in info.hosts)] if n in _links()]
    left += [f"sshd {h.sshd_pid}" for h in info.hosts if h.sshd_pid and _alive(h.sshd_pid)]
    return left + ([str(info.dir)] if info.dir.exists() else [])


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.lab
def test_lab3_status_and_layout(lab3: LabInfo, lab_base: Path) -> None:
    rows = lab.lab_status(lab3.name, base_dir=lab_base)
    assert [r["host"] for r in rows] == ["h1", "h2", "h3"]
    assert all(r["ns_exists"] and r["sshd_alive"] and r["ssh_port_open"] for r in rows), rows
    assert len({h.address for h in lab3.hosts}) == 3
    assert all(h.address.startswith("198.18.") or h.address.startswith("198.19.") for h in lab3.hosts)
    for h in lab3.hosts:
        assert len(h.veth) <= 15 and len(lab3.bridge) <= 15
        routes = subprocess.run(["ip", "-n", h.netns, "route", "show"], capture_output=True, text=True,
                                check=True).stdout
        assert "default" not in routes and lab3.subnet in routes
        lo = subprocess.run(["ip", "-n", h.netns, "-br", "link", "show", "lo"], capture_output=True,
                            text=True, check=True).stdout
        assert "UP" in lo or "UNKNOWN" in lo  # lo reports UNKNOWN when up
    text = lab3.inventory.read_text()
    assert all(f"{h.name} ansible_host={h.address} data_ip={h.address}" in text for h in lab3.hosts)


@pytest.mark.lab
def test_each_host_has_its_own_hostname_over_real_ssh(lab3: LabInfo) -> None:
    for h in lab3.hosts:
        assert _paramiko(lab3, h, lab3.known_hosts, "hostname") == h.name
    done = _openssh(lab3, lab3.hosts[0], lab3.known_hosts, "hostname")
    assert (done.returncode, done.stdout.strip()) == (0, "h1"), done.stderr
    agent = subprocess.run([str(lab3.dir / "mpi-ssh"), lab3.hosts[1].address, "hostname"],
                           capture_output=True, text=True, timeout=20)
    assert (agent.returncode, agent.stdout.strip()) == (0, "h2"), agent.stderr


@pytest.mark.lab
def test_wrong_host_key_is_refused(lab3: LabInfo, tmp_path: Path) -> None:
    h1, h2 = lab3.hosts[:2]
    keys = {ln.split()[0]: ln.split(maxsplit=1)[1] for ln in lab3.known_hosts.read_text().splitlines()}
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"{h1.address} {keys[h2.address]}\n")  # h1's address with h2's key
    with pytest.raises(paramiko.BadHostKeyException):
        _paramiko(lab3, h1, wrong, "hostname")
    done = _openssh(lab3, h1, wrong, "hostname")
    assert done.returncode == 255 and "Host key verification failed" in done.stderr
    assert done.stdout == ""


def _listening(netns: str, port: int, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not subprocess.run(["ip", "netns", "exec", netns, "ss", "-Hltn", "sport", "=", f":{port}"],
                             capture_output=True, text=True).stdout.strip():
        assert time.monotonic() < deadline, f"iperf3 server in {netns} never listened"
        time.sleep(0.05)


def _iperf3_gbps(server: LabHost, client: LabHost, reverse: bool = False, port: int = 5201) -> float:
    srv = subprocess.Popen(["ip", "netns", "exec", server.netns, "iperf3", "-s", "-1", "-p", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _listening(server.netns, port)
        argv = ["ip", "netns", "exec", client.netns, "iperf3", "-c", server.address, "-p", str(port),
                "-t", "2", "-J", *(["-R"] if reverse else [])]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=True)
        return json.loads(done.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9
    finally:
        with contextlib.suppress(subprocess.TimeoutExpired):
            srv.wait(5)
        srv.kill()
        srv.wait()


@pytest.mark.lab
def test_shaped_host_is_measurably_slower(lab_base: Path) -> None:
    # 1gbit rather than 2gbit: an unshaped veth stays well above it even on a busy 2-core machine
    with make_lab("tshp", 3, shape={"h2": "1gbit"}) as info:
        h1, h2, h3 = info.hosts
        assert h2.shape == "1gbit" and "nic_line_rate_gbps=1" in info.inventory.read_text()
        to_h2 = _iperf3_gbps(h2, h1)
        from_h2 = _iperf3_gbps(h2, h1, reverse=True)
        unshaped = _iperf3_gbps(h3, h1)
        rates = {"to_h2": to_h2, "from_h2": from_h2, "unshaped": unshaped}
        assert 0.5 < to_h2 < 1.05 and 0.5 < from_h2 < 1.05, rates  # tbf at 1gbit: ~0.95 of goodput
        assert unshaped > 1.5 * max(to_h2, from_h2), rates
        assert lab.lab_processes(info.name, r"\biperf3\b", base_dir=lab_base) == {"h1": [], "h2": [], "h3": []}


@pytest.mark.lab
def test_rdma_rxe_is_refused_on_this_kernel(lab_root: None, lab_base: Path) -> None:
    name = lab_name("trxe")
    try:
        lab_rdma.check_rxe()
    except LabError:
        pass
    else:
        pytest.skip("not applicable: this kernel has rdma_rxe, so the refusal cannot be shown here")
    with pytest.raises(LabError) as err:
        lab.lab_up(2, name=name, rdma="rxe", base_dir=lab_base)
    message = str(err.value)
    assert "rdma_rxe" in message and platform.release() in message and "\n" not in message
    assert "linux-image-amd64" in message and f"linux-modules-extra-{platform.release()}" in message
    assert not (lab_base / name).exists() and not list(Path("/run/netns").glob(f"bh-{name}-*"))
    assert f"bh-{name}" not in _links()


@pytest.mark.lab
def test_two_labs_coexist_and_stay_apart(lab3: LabInfo, lab_base: Path) -> None:
    with make_lab("t2", 2) as other:
        assert other.subnet != lab3.subnet and other.bridge != lab3.bridge
        assert not {h.veth for h in other.hosts} & {h.veth for h in lab3.hosts}
        # each lab's known_hosts pins its own host keys, so a right answer proves the right sshd
        assert _paramiko(other, other.hosts[0], other.known_hosts, "hostname") == "h1"
        assert _paramiko(lab3, lab3.hosts[0], lab3.known_hosts, "hostname") == "h1"
        assert {r["lab"] for r in lab.lab_status(base_dir=lab_base)} >= {other.name, lab3.name}
        # no route from one lab into the other: traffic never leaves a lab
        probe = subprocess.run(["ip", "-n", other.hosts[0].netns, "route", "get", lab3.hosts[0].address],
                               capture_output=True, text=True)
        assert probe.returncode != 0 and "unreachable" in probe.stderr
    assert lab.lab_status(lab3.name, base_dir=lab_base)[0]["sshd_alive"]


@pytest.mark.lab
def test_up_status_down_roundtrip_leaves_nothing(lab_root: None, lab_base: Path) -> None:
    name = lab_name("trt")
    info = lab.lab_up(2, name=name, base_dir=lab_base)
    try:
        assert (info.dir / "lab.json").exists() and info.known_hosts.exists() and info.key.exists()
        assert [r["sshd_alive"] for r in lab.lab_status(name, base_dir=lab_base)] == [True, True]
        with pytest.raises(LabError, match="already up"):
            lab.lab_up(1, name=name, base_dir=lab_base)
        stray = subprocess.Popen(["ip", "netns", "exec", info.hosts[1].netns, "sleep", "300"])
        deadline = time.monotonic() + 5
        while not lab.lab_processes(name, r"^sleep 300$", base_dir=lab_base)["h2"]:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert stray.pid in lab.netns_pids(info.hosts[1].netns)
    finally:
        removed = lab.lab_down(name, base_dir=lab_base)
    assert removed == [name]
    assert stray.wait(5) != 0  # killed by lab_down, not left running
    assert _gone(info) == []
    assert lab.lab_down(name, base_dir=lab_base) == []  # idempotent
    assert name not in lab.list_labs(lab_base)


@pytest.mark.lab
def test_failure_half_way_removes_what_was_made(lab_root: None, lab_base: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    name = lab_name("tfail")
    monkeypatch.setattr(lab, "SSHD", "/bin/false")  # sshd "fails" after namespaces and veths exist
    with pytest.raises(LabError) as err:
        lab.lab_up(2, name=name, base_dir=lab_base)
    assert f"h1: start sshd failed: ip netns exec bh-{name}-h1" in str(err.value)
    assert not (lab_base / name).exists() and not list(Path("/run/netns").glob(f"bh-{name}-*"))
    assert not {n for n in _links() if n == f"bh-{name}"}


@pytest.mark.lab
def test_name_clash_with_a_lab_elsewhere_is_refused_untouched(lab3: LabInfo, tmp_path: Path,
                                                              lab_base: Path) -> None:
    with pytest.raises(LabError, match="already exist"):
        lab.lab_up(1, name=lab3.name, base_dir=tmp_path)
    assert all(r["sshd_alive"] and r["ssh_port_open"] for r in lab.lab_status(lab3.name, base_dir=lab_base))


@pytest.mark.lab
def test_bad_arguments_are_refused_before_anything_is_made(lab_root: None, lab_base: Path) -> None:
    name = lab_name("targ")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"shape": {"h5": "1gbit"}}, "unknown host h5"), ({"shape": {"h1": "1gbyte"}}, "bad rate"),
        ({"rdma": "siw"}, "unknown rdma kind"), ({"name": "Bad_Name"}, "bad lab name")]
    for kwargs, message in cases:
        with pytest.raises(LabError, match=message):
            lab.lab_up(2, **{"name": name, **kwargs}, base_dir=lab_base)
    assert not (lab_base / name).exists() and not list(Path("/run/netns").glob(f"bh-{name}-*"))
