"""Provisioning with the real ansible-playbook: pure helpers first, then runs.

The runs are real: ``ansible/site.yml`` over SSH against the 3-host loopback lab (``lab3``, root
only), and the generic build role over Ansible's local connection. The lab hosts share this
machine's filesystem and dpkg database, so the apt packages setup.sh installed are already there
and the runs are offline; what changes on a first run is the memlock limits file, which the tests
point into their tmp_path, one per host.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from benchharness import provision
from benchharness.core.errors import EXIT_STEPS_FAILED, ConfigError, LabError, UsageError
from benchharness.lab import rdma as lab_rdma
from benchharness.lab.control import LabInfo
from benchharness.provision import ANSIBLE_DIR, HostRecap, ProvisionFailed, TaskFailure

ROLES = ANSIBLE_DIR / "roles"
SSHD_DEFAULT_PATH = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]


def _local_inventory(tmp_path: Path) -> Path:
    inv = tmp_path / "local.ini"
    inv.write_text(f"localhost ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    return inv


# --- pure helpers -------------------------------------------------------------------------


def test_build_argv_is_a_plain_argv_list() -> None:
    argv = provision.build_argv("/v/bin/ansible-playbook", Path("/a/site.yml"), Path("/i/lab.ini"),
                                limit="h1:h2", tags=["bench_tools", "soft_roce"], check=True,
                                extra_vars_file=Path("/t/extra.json"))
    assert argv == ["/v/bin/ansible-playbook", "-i", "/i/lab.ini", "--limit", "h1:h2",
                    "--tags", "bench_tools,soft_roce", "--check", "--extra-vars", "@/t/extra.json",
                    "/a/site.yml"]
    assert provision.build_argv("ap", Path("s.yml"), Path("i.ini")) == ["ap", "-i", "i.ini", "s.yml"]


def test_ansible_playbook_is_the_one_beside_our_python() -> None:
    assert provision.ansible_playbook() == Path(sys.executable).parent / "ansible-playbook"


def test_env_verifies_host_keys_and_keeps_ansible_files_in_tmp(tmp_path: Path) -> None:
    env = provision.ansible_env(tmp_path, base={"PATH": "/usr/bin", "ANSIBLE_HOST_KEY_CHECKING": "False"})
    assert env["ANSIBLE_HOST_KEY_CHECKING"] == "True"
    assert env["ANSIBLE_RETRY_FILES_ENABLED"] == "False"
    assert env["ANSIBLE_LOCAL_TEMP"].startswith(str(tmp_path))
    assert env["ANSIBLE_SSH_CONTROL_PATH_DIR"].startswith(str(tmp_path))
    assert env["ANSIBLE_CONFIG"] == str(ANSIBLE_DIR / "ansible.cfg")
    assert env["PATH"] == "/usr/bin"


def test_parse_recap_and_failure_line() -> None:
    doc = {"stats": {"h1": {"ok": 5, "changed": 1, "unreachable": 0, "failures": 1, "skipped": 2,
                            "rescued": 0, "ignored": 0},
                     "h2": {"ok": 0, "changed": 0, "unreachable": 1, "failures": 0, "skipped": 0,
                            "rescued": 0, "ignored": 0}},
           "failures": [{"host": "h1", "task": "soft_roce : Check", "unreachable": False,
                         "msg": "soft-RoCE needs\nkernel module rdma_rxe"},
                        {"host": "h2", "task": "Gathering Facts", "unreachable": True, "msg": "no route"}],
           "messages": [{"host": "h1", "task": "nccl_tests : Skip", "msg": "nccl_tests: skipped"}]}
    hosts, failures, messages = provision.parse_recap(doc)
    assert hosts["h1"] == HostRecap(ok=5, changed=1, unreachable=0, failed=1, skipped=2)
    assert hosts["h2"].unreachable == 1
    assert failures[0] == TaskFailure("h1", "soft_roce : Check", "soft-RoCE needs kernel module rdma_rxe")
    assert messages == {"h1": ["nccl_tests: skipped"]}
    assert provision.failure_line(failures) == (
        "provision failed on h1 at task 'soft_roce : Check': soft-RoCE needs kernel module rdma_rxe"
        " (also failed: h2)")
    assert provision.failure_line(failures[1:]) == "provision: h2 unreachable at task 'Gathering Facts': no route"
    # parallel hosts fail one task in any order: the same fault always names the same host
    same = [TaskFailure(h, "soft_roce : Check", "no rdma_rxe") for h in ("h10", "h2", "h1")]
    assert provision.failure_line(same) == provision.failure_line(same[::-1]) == (
        "provision failed on h1 at task 'soft_roce : Check': no rdma_rxe (also failed: h10, h2)")


# ansible-core 2.19 output, captured: a YAML error in a playbook, then an INI inventory that the
# ini plugin rejects (Ansible warns with the reason, then errors without it)
YAML_ERROR_OUTPUT = """\
[ERROR]: YAML parsing failed: While parsing a block collection did not find expected '-' indicator.
Origin: /tmp/gtb/bad.yml:5:6

3     - name: x
4       ansible.builtin.debug: msg=hi
5      bad: [
       ^ column 6
"""
INVENTORY_ERROR_OUTPUT = """\
[WARNING]: Failed to parse inventory with 'ini' plugin: Failed to parse inventory: Section [x:children] includes undefined group 'nope'.

Failed to parse inventory with 'ini' plugin.

<<< caused by >>>

Failed to parse inventory: Section [x:children] includes undefined group 'nope'.
Origin: /tmp/gtb/badinv2.ini

[WARNING]: Unable to parse /tmp/gtb/badinv2.ini as an inventory source
[ERROR]: No inventory was parsed, please check your configuration and options.
"""


def test_ansible_error_finds_message_file_and_line() -> None:
    assert provision.ansible_error(YAML_ERROR_OUTPUT) == (
        "YAML parsing failed: While parsing a block collection did not find expected '-' indicator.",
        "/tmp/gtb/bad.yml", 5)
    assert provision.ansible_error(INVENTORY_ERROR_OUTPUT) == (
        "cannot parse inventory: Section [x:children] includes undefined group 'nope'.",
        "/tmp/gtb/badinv2.ini", None)


def test_unknown_tag_and_missing_inventory_are_refused_before_ansible_runs(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown provision tag nccl: choose from bench_tools"):
        provision.provision(_local_inventory(tmp_path), tags=["nccl"])
    with pytest.raises(ConfigError, match=r"nope\.ini: no such inventory"):
        provision.provision(tmp_path / "nope.ini")


# --- ansible-playbook, locally ------------------------------------------------------------


def test_every_playbook_and_task_file_passes_syntax_check(tmp_path: Path) -> None:
    playbooks = sorted(ANSIBLE_DIR.glob("*.yml"))
    assert ANSIBLE_DIR / "site.yml" in playbooks
    # task files that roles include dynamically are not read by --syntax-check of site.yml:
    # import them all statically into one extra playbook
    task_files = sorted(ROLES.glob("*/tasks/*.yml"))
    assert len(task_files) >= 9
    every_task = tmp_path / "every-task-file.yml"
    every_task.write_text("- hosts: all\n  gather_facts: false\n  tasks:\n" + "".join(
        f"    - ansible.builtin.import_tasks: {path}\n" for path in task_files))
    env = provision.ansible_env(tmp_path)
    for book in [*playbooks, every_task]:
        proc = subprocess.run([str(provision.ansible_playbook()), "--syntax-check", "-i", "localhost,", str(book)],
                              capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, f"{book}: {proc.stdout}{proc.stderr}"
        assert "playbook: " in proc.stdout


def test_playbook_syntax_error_is_a_config_error_naming_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("- hosts: all\n  tasks:\n    - name: x\n      ansible.builtin.debug: msg=hi\n     bad: [\n")
    with pytest.raises(ConfigError) as err:
        provision.provision(_local_inventory(tmp_path), playbook=bad)
    assert (err.value.path, err.value.line) == (str(bad), 5)
    assert str(err.value).startswith(f"{bad}:5: YAML parsing failed")


def test_unparsable_inventory_and_empty_limit_are_config_errors(tmp_path: Path) -> None:
    inv = tmp_path / "broken.ini"
    inv.write_text("h1 ansible_host=198.18.200.1\n[gpu:children]\nnope\n")
    with pytest.raises(ConfigError, match=r"broken\.ini: cannot parse inventory: .*undefined group 'nope'"):
        provision.provision(inv)
    with pytest.raises(ConfigError, match=r"local\.ini: --limit 'gpu\*' matches no host"):
        provision.provision(_local_inventory(tmp_path), limit="gpu*")


def _demo_tarball(path: Path, version: str) -> Path:
    """A tiny make project in nccl-tests' shape: one top folder, BUILDDIR honoured."""
    top = path.parent / f"src-{version}" / "demo-1.0"
    top.mkdir(parents=True)
    (top / "Makefile").write_text("BUILDDIR ?= build\n$(BUILDDIR)/hello: hello.c\n"
                                  "\tmkdir -p $(BUILDDIR)\n\t$(CC) -o $@ hello.c\n")
    (top / "hello.c").write_text(f'#include <stdio.h>\nint main(void) {{ puts("demo {version}"); return 0; }}\n')
    with tarfile.open(path, "w:gz") as tar:
        tar.add(top, arcname="demo-1.0")
    return path


@pytest.mark.skipif(not (shutil.which("make") and shutil.which("cc")), reason="needs make and cc")
def test_build_role_unpacks_a_tarball_builds_once_and_rebuilds_when_it_changes(tmp_path: Path) -> None:
    # The role nccl_tests and rccl_tests build with; a C project stands in for the GPU sources
    # because there is no CUDA or ROCm stack to build those with here.
    book = tmp_path / "build.yml"
    book.write_text("- hosts: all\n  gather_facts: false\n  roles: [gpu_tests_build]\n")
    out = tmp_path / "out"
    tarball = _demo_tarball(tmp_path / "demo-1.0.tar.gz", "v1")
    extra = {"gpu_tests_name": "demo", "gpu_tests_src": str(tarball), "gpu_tests_dir": str(out),
             "gpu_tests_binary": "hello"}
    inv = _local_inventory(tmp_path)

    first = provision.provision(inv, playbook=book, extra_vars=extra)
    assert first.ok and first.hosts["localhost"].changed > 0
    assert subprocess.run([out / "build" / "hello"], capture_output=True, text=True).stdout == "demo v1\n"
    assert (out / "src" / "Makefile").exists()  # the top folder was stripped

    again = provision.provision(inv, playbook=book, extra_vars=extra)
    assert again.hosts["localhost"].changed == 0

    _demo_tarball(tarball, "v2")
    rebuilt = provision.provision(inv, playbook=book, extra_vars=extra)
    assert rebuilt.hosts["localhost"].changed > 0
    assert subprocess.run([out / "build" / "hello"], capture_output=True, text=True).stdout == "demo v2\n"


# --- ansible-playbook over SSH against the lab --------------------------------------------


def _expected_skip(tool: str, home: str, src_var: str) -> str:
    """Why the role skips here: no toolkit, or a toolkit but no source (there never is one here)."""
    if os.access(f"{home}/bin/{tool}", os.X_OK):
        return f"in {home} but {src_var} is not set"
    if any(os.access(f"{d}/{tool}", os.X_OK) for d in SSHD_DEFAULT_PATH):
        return f"but {src_var} is not set"
    return f"no {tool}"


def _missing_packages() -> list[str]:
    packages = provision.playbook_vars()["bench_tools_packages"]
    proc = subprocess.run(["dpkg-query", "--show", "--showformat=${Package} ${db:Status-Status}\\n", "--",
                           *packages], capture_output=True, text=True)
    installed = {line.split()[0] for line in proc.stdout.splitlines() if line.endswith(" installed")}
    return sorted(set(packages) - installed)


def test_the_packages_come_from_the_tools_facts() -> None:
    """One home for each tool's packages: its adapter; the role keeps no list of its own."""
    from benchharness.tools.iperf3 import IPERF3
    from benchharness.tools.perftest import PERFTEST
    from benchharness.tools.ucx_perftest import UCX

    packages = provision.playbook_vars()["bench_tools_packages"]
    for facts in (IPERF3, PERFTEST, UCX):
        assert set(facts.apt) <= set(packages)
    assert {"numactl", "openmpi-bin", "ethtool", "python3-pyverbs"} <= set(packages)
    assert len(packages) == len(set(packages))
    defaults = yaml.safe_load((ROLES / "bench_tools" / "defaults" / "main.yml").read_text())
    assert defaults["bench_tools_packages"] == []
    assert provision.playbook_vars({"bench_tools_packages": ["x"]})["bench_tools_packages"] == ["x"]


@pytest.mark.lab
def test_site_provisions_the_lab_then_changes_nothing(lab3: LabInfo, tmp_path: Path) -> None:
    if missing := _missing_packages():
        # the lab hosts share this machine's dpkg database; installing would need the network
        pytest.skip(f"packages missing here (apt-get install {' '.join(missing)}): the run would go online")
    memlock = {"bench_tools_memlock_file": f"{tmp_path}/{{{{ inventory_hostname }}}}-memlock.conf"}
    names = [h.name for h in lab3.hosts]

    first = provision.provision(lab3.inventory, extra_vars=memlock)
    assert first.ok and sorted(first.hosts) == names
    for name in names:
        recap = first.hosts[name]
        assert (recap.failed, recap.unreachable, recap.changed) == (0, 0, 1)
        assert "* hard memlock unlimited" in (tmp_path / f"{name}-memlock.conf").read_text()
        nccl, rccl, soft_roce = first.messages[name]
        assert nccl.startswith(f"nccl_tests: skipped on {name}: ")
        assert _expected_skip("nvcc", "/usr/local/cuda", "nccl_tests_src") in nccl
        assert rccl.startswith(f"rccl_tests: skipped on {name}: ")
        assert _expected_skip("hipcc", "/opt/rocm", "rccl_tests_src") in rccl
        assert soft_roce.startswith(f"soft_roce: not requested on {name}")

    second = provision.provision(lab3.inventory, extra_vars=memlock)
    assert second.ok and sorted(second.hosts) == names
    assert {name: r.changed for name, r in second.hosts.items()} == dict.fromkeys(names, 0)


def _rxe_available() -> bool:
    try:
        lab_rdma.check_rxe()
    except LabError:
        return False
    return True


@pytest.mark.lab
@pytest.mark.skipif(_rxe_available(), reason="this kernel has rdma_rxe: the missing-module path cannot happen")
def test_soft_roce_fails_naming_the_missing_kernel_module(lab3: LabInfo) -> None:
    with pytest.raises(ProvisionFailed) as err:
        provision.provision(lab3.inventory, tags=["soft_roce"])
    message = str(err.value)
    assert "\n" not in message and err.value.exit_code == EXIT_STEPS_FAILED
    assert message.startswith("provision failed on h1 at task 'soft_roce : Check that the kernel has rdma_rxe': "
                              "soft_roce: soft-RoCE needs kernel module rdma_rxe, which kernel ")
    assert "use a kernel built with CONFIG_RDMA_RXE (also failed: h2, h3)" in message
    result = err.value.result
    assert {h: (r.failed, r.changed) for h, r in result.hosts.items()} == {"h1": (1, 0), "h2": (1, 0), "h3": (1, 0)}
    assert [f.task for f in result.failures] == ["soft_roce : Check that the kernel has rdma_rxe"] * 3


@pytest.mark.lab
def test_unknown_host_key_makes_the_host_unreachable(lab3: LabInfo, tmp_path: Path) -> None:
    # The inventory's own StrictHostKeyChecking=yes goes, and its known_hosts is empty: what
    # stops the connection is ANSIBLE_HOST_KEY_CHECKING=True.
    empty = tmp_path / "known_hosts"
    empty.touch()
    text = lab3.inventory.read_text()
    args = f"ansible_ssh_common_args='-o UserKnownHostsFile={empty} -o IdentitiesOnly=yes'"
    text, count = re.subn(r"^ansible_ssh_common_args=.*$", args, text, flags=re.MULTILINE)
    assert count == 1
    inv = tmp_path / "unknown-keys.ini"
    inv.write_text(text)
    with pytest.raises(ProvisionFailed) as err:
        provision.provision(inv, limit="h1", tags=["bench_tools"])
    assert str(err.value).startswith("provision: h1 unreachable at task 'Gathering Facts': ")
    assert "Host key verification failed" in str(err.value)
    assert err.value.result.hosts["h1"].unreachable == 1
