"""The SSH view (inventory options over ssh_config), retry classification, the DeepOps inventory shape."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import paramiko
import pytest

from benchharness.config.inventory import load_inventory
from benchharness.config.inventory_vars import connection_fields
from benchharness.core.model import Host
from benchharness.telemetry.doctor import reach_line
from benchharness.transport.ssh import retryable
from benchharness.transport.sshconfig import hop_view, split_args, warning_line

DEEPOPS = Path(__file__).parent / "fixtures" / "inventories" / "deepops" / "inventory"


def where(var: str) -> tuple[str, int | None]:
    return "inv.ini", 7


CONFIG = """\
Host gpu*
  User clusteradmin
  Port 2222
  IdentityFile ~/.ssh/id_cluster
  ServerAliveInterval 5
  ServerAliveCountMax 4
  ConnectTimeout 7
  ForwardAgent yes

Host gpu01
  HostName 10.0.2.1
  ProxyCommand ssh -W %h:%p -q %r@bastion

Host gpu02
  HostName 10.0.2.2
  ProxyJump ubuntu@bastion:2200,second
"""


@pytest.fixture
def ssh_config(tmp_path: Path) -> Path:
    path = tmp_path / "ssh_config"
    path.write_text(CONFIG)
    return path


def test_config_file_given_with_F_is_read_for_the_host(ssh_config: Path) -> None:
    fields = connection_fields("gpu01", {"ansible_ssh_common_args": f"-F {ssh_config}"}, Path("/inv"), where)
    assert (fields["address"], fields["port"], fields["user"]) == ("10.0.2.1", 2222, "clusteradmin")
    # %h %p %r expanded with the final host name, port and user
    assert fields["proxy_command"] == "ssh -W 10.0.2.1:2222 -q clusteradmin@bastion"
    assert fields["key_file"].endswith("/.ssh/id_cluster")
    ssh = fields["ssh"]
    assert (ssh["keepalive_s"], ssh["keepalive_count"], ssh["connect_timeout"]) == (5, 4, 7)
    assert ssh["ignored"] == ["forwardagent"] and ssh["config_file"] == str(ssh_config)


def test_inventory_variables_take_precedence_over_the_config(ssh_config: Path) -> None:
    values = {"ansible_user": "root", "ansible_port": 22, "ansible_ssh_private_key_file": "keys/lab",
              "ansible_ssh_common_args": f"-F {ssh_config} -o ServerAliveInterval=1 -o ProxyJump=jump1"}
    fields = connection_fields("gpu01", values, Path("/inv"), where)
    assert (fields["user"], fields["port"], fields["key_file"]) == ("root", 22, "/inv/keys/lab")
    assert fields["ssh"]["keepalive_s"] == 1 and fields["ssh"]["keepalive_count"] == 4
    # the inventory's ProxyJump wins over the config's ProxyCommand, as ssh takes the first it obtains
    assert (fields["proxy_jump"], fields["proxy_command"]) == ("jump1", None)


def test_proxyjump_chain_and_its_hops(ssh_config: Path) -> None:
    fields = connection_fields("gpu02", {"ansible_ssh_common_args": f"-F {ssh_config}"}, Path("/inv"), where)
    assert fields["proxy_jump"] == "ubuntu@bastion:2200,second"
    hop = hop_view("ubuntu@bastion:2200", str(ssh_config))
    assert (hop.address, hop.port, hop.user) == ("bastion", 2200, "ubuntu")


def test_home_ssh_config_is_read_without_F(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text("Host node7\n  HostName 10.9.9.7\n  User ops\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    fields = connection_fields("node7", {}, Path("/inv"), where)
    assert (fields["address"], fields["user"]) == ("10.9.9.7", "ops")
    assert fields["ssh"]["config_file"] == str(tmp_path / ".ssh" / "config")


def test_unhonoured_options_and_flags_are_named_in_one_warning() -> None:
    options, config, ignored = split_args("-C -q -A -o ForwardAgent=yes -o 'ProxyCommand=nc %h %p' -F x")
    assert options == {"forwardagent": "yes", "proxycommand": "nc %h %p"} and config == "x"
    assert ignored == ["-A"]
    line = warning_line({"h1": ["forwardagent", "-A"], "h2": ["forwardagent"], "h3": []})
    assert line is not None and line.count("\n") == 0
    assert "forwardagent (h1, h2)" in line and "-A (h1)" in line
    assert warning_line({"h1": []}) is None


def test_doctor_line_says_how_a_host_is_reached() -> None:
    host = Host("gpu01", "10.0.2.1", port=2222, user="ops", key_file="/k", proxy_command="ssh -W 10.0.2.1:2222 b",
                ssh={"target": "gpu01", "config_file": "/cfg", "key_files": ["/k"]})
    line = reach_line(host)
    for part in ("ops@10.0.2.1:2222", "(alias gpu01)", "key /k", "via ProxyCommand ssh -W 10.0.2.1:2222 b",
                 "ssh_config /cfg"):
        assert part in line


@pytest.mark.parametrize(("exc", "again"), [
    (paramiko.SSHException("Error reading SSH protocol banner[Errno 104] Connection reset by peer"), True),
    (ConnectionResetError(104, "Connection reset by peer"), True),
    (EOFError(), True),
    (paramiko.AuthenticationException("Authentication failed."), False),
    (paramiko.BadHostKeyException("h", paramiko.Ed25519Key.generate() if hasattr(paramiko.Ed25519Key, "generate")
                                  else paramiko.RSAKey.generate(1024), paramiko.RSAKey.generate(1024)), False),
    (paramiko.SSHException("Server '[h]:22' not found in known_hosts"), False),
    (TimeoutError("timed out"), False),
])
def test_only_busy_server_failures_are_retried(exc: BaseException, again: bool) -> None:
    assert retryable(exc) is again


def _deepops_filled(tmp_path: Path, addresses: dict[str, str], proxy: str, user: str = "ubuntu") -> Path:
    """The DeepOps example with its hosts and bastion line uncommented, as its README says to do."""
    out = []
    for line in DEEPOPS.read_text().splitlines(keepends=True):
        name = line[1:].split()[0] if line.startswith("#") and len(line) > 1 and line[1:2].strip() else ""
        if name in addresses:
            line = line[1:]
            if "ansible_host=" in line:
                line = line.split("ansible_host=")[0] + f"ansible_host={addresses[name]}\n"
        elif line.startswith("#ansible_user="):
            line = f"ansible_user={user}\n"
        elif line.startswith("#ansible_ssh_common_args="):
            line = f"ansible_ssh_common_args='-o ProxyCommand=\"{proxy}\"'\n"
        out.append(line)
    path = tmp_path / "inventory"
    path.write_text("".join(out))
    return path


def test_deepops_example_inventory_plans(tmp_path: Path) -> None:
    hosts = {n: f"10.0.{i}.1" for i, n in enumerate(["mgmt01", "mgmt02", "mgmt03", "login01", "gpu01", "gpu02"])}
    inv_path = _deepops_filled(tmp_path, hosts, "ssh -W %h:%p -q ubuntu@10.0.0.1")
    assert "kube-master \t \n" in inv_path.read_text()  # the trailing tabs are kept
    inv = load_inventory(inv_path)
    gpu01 = next(h for h in inv.hosts if h.name == "gpu01")
    assert gpu01.proxy_command == "ssh -W 10.0.4.1:22 -q ubuntu@10.0.0.1" and gpu01.user == "ubuntu"
    assert set(inv.groups["slurm-node"]) == {"gpu01", "gpu02"}
    assert set(inv.groups["k8s-cluster"]) >= {"mgmt01", "gpu01"}
    res = subprocess.run([sys.executable, "-m", "benchharness", "plan", "suite=quick", f"hosts={inv_path}"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "gpu02" in res.stdout and "mgmt01" in res.stdout
