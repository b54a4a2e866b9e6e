"""Security: hostile inventory and suite values never reach a shell unquoted, secrets stay out of
the run directory and the logs, results are not world-writable, reports escape what hosts and
tools say. The last test does it all for real on a loopback lab; the others need no lab.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchharness.core.model import Command, CommandResult, Host
from benchharness.lab import control as lab
from benchharness.results.store import RunDir
from benchharness.transport.base import wrap_command

HOSTILE_SUITE = Path(__file__).parent / "fixtures" / "faults" / "hostile.yaml"
SUITE_MARK = Path("/tmp/bench-sec-MARK")  # what the fixture suite's hostile arguments would create
SECRETS = ("hunter2-pw-S1", "hunter2-become-S2", "tok-S3", "s3cr3t-S4")


def hostile(mark: Path) -> list[str]:
    """Shell metacharacters of every kind, each of which would create ``mark`` if a shell ran it."""
    return [f"$(touch {mark})", f"`touch {mark}`", f"; touch {mark}", f"' ; touch {mark} ; '",
            f'" ; touch {mark} ; "', f"\n touch {mark}", f"| touch {mark}", f"&& touch {mark}"]


def bench(*args: str, timeout: float = 180, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout, **kw)  # type: ignore[call-overload]


def hostile_inventory(path: Path, mark: Path, addresses: tuple[str, str], key: str = "/nonexistent/key",
                      known_hosts: str = "/nonexistent/known_hosts", **h1_vars: str) -> tuple[str, str]:
    """A YAML inventory whose host names and variables are hostile; returns the two host names."""
    names = (f"h1;touch {mark}", f"<img src=x onerror=alert(1)>$(touch {mark})`touch {mark}`'\"")
    inv = {"all": {
        "vars": {"ansible_user": "root", "ansible_ssh_private_key_file": key,
                 "ansible_ssh_common_args": f"-o UserKnownHostsFile={known_hosts} -o StrictHostKeyChecking=yes",
                 "ansible_password": SECRETS[0], "ansible_become_password": SECRETS[1],
                 "api_token": SECRETS[2]},
        "hosts": {
            names[0]: {"ansible_host": addresses[0], "data_ip": addresses[0], "netdev": f"eth0$(touch {mark})",
                       **h1_vars},
            names[1]: {"ansible_host": addresses[1], "data_ip": addresses[1], "netdev": f"eth0;touch {mark}",
                       "db_secret": SECRETS[3], "nic_model": f"<b>veth</b>`touch {mark}`"},
        }}}
    path.write_text(yaml.safe_dump(inv))
    return names


def test_wrapped_command_reaches_the_program_verbatim(tmp_path: Path) -> None:
    """The exact string a remote sshd's shell runs: every argument and env value arrives unchanged."""
    mark = tmp_path / "MARK"
    values = hostile(mark)
    program = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['BENCH_VALUE']]))"
    line = wrap_command([sys.executable, "-c", program, *values], {"BENCH_VALUE": values[0]}, limit_s=30)
    res = subprocess.run(["sh", "-c", line], capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == [values, values[0]]
    assert not mark.exists()


def test_plan_quotes_hostile_inventory_and_suite_values(tmp_path: Path) -> None:
    mark = tmp_path / "MARK"
    inv = tmp_path / "inventory.yaml"
    names = hostile_inventory(inv, mark, ("198.18.254.1", "198.18.254.2"))  # planned, never contacted
    # One plan line per command: leave out the newline value here (the other tests keep it).
    values = [v for v in hostile(mark) if "\n" not in v]
    extra = json.dumps(shlex.join(values))  # a YAML double-quoted string, as overrides are YAML
    res = bench("plan", f"suite={HOSTILE_SUITE}", f"hosts={inv}", f"extra_args={extra}", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    commands = [re.split(r"  port=\d+  ", line, maxsplit=1)[1]
                for line in res.stdout.splitlines() if re.search(r"  (server bg|client fg)  port=", line)]
    assert len(commands) == 4
    argvs = [shlex.split(c) for c in commands]
    clients = [a for a in argvs if "-c" in a[a.index("iperf3"):]]  # sh -c of the NUMA wrapper aside
    assert len(clients) == 2
    # the hostile netdev reaches the NUMA wrapper as one quoted argument (its sysfs path), not as script
    assert all(a[:2] == ["sh", "-c"] and a[3] == "bench-numa" and a[4].startswith("/sys/class/net/eth0")
               for a in argvs)
    for argv in clients:  # each hostile value is one argument of iperf3, exactly as written
        assert argv[-len(values):] == values
    assert all(name in res.stdout for name in names)
    assert not mark.exists()


@pytest.mark.parametrize(("var", "value", "said"), [
    ("data_ip", "198.18.0.1;touch /tmp/x", "data_ip="),
    ("netdev", "eth0\ntouch /tmp/x", "netdev="),
    ("ansible_port", "22 -o ProxyCommand=sh", "ansible_port="),
])
def test_hostile_connection_and_address_values_are_refused(tmp_path: Path, var: str, value: str,
                                                            said: str) -> None:
    inv = tmp_path / "inventory.yaml"
    hostile_inventory(inv, tmp_path / "MARK", ("198.18.254.1", "198.18.254.2"), **{var: value})
    res = bench("plan", "suite=quick", f"hosts={inv}", cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert said in line and "h1;touch" in line


def test_secrets_in_command_lines_and_environments_are_not_stored(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path / "run")
    host = Host("h1", "198.18.254.1")
    cmd = Command(host, "launcher", ("mpirun", "-x", "HF_TOKEN=hf_S5", "-x", "NCCL_DEBUG=INFO", "prog"),
                  env={"MY_PASSWORD": "pw_S6", "UCX_TLS": "tcp"}, label="mpirun-h1")
    run.write_raw("s1", CommandResult(cmd, 0, "out", "", 0.0, 1.0))
    meta = json.loads((run.path / "raw" / "s1" / "mpirun-h1.json").read_text())
    assert meta["argv"] == ["mpirun", "-x", "HF_TOKEN=<redacted>", "-x", "NCCL_DEBUG=INFO", "prog"]
    assert meta["env"] == {"MY_PASSWORD": "<redacted>", "UCX_TLS": "tcp"}


def test_results_are_not_writable_by_others_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        run = RunDir.create(tmp_path / "run")
        run.write_json("telemetry/deep/er/x.json", {"a": 1})
        run.append_samples([{"a": 1}])
        run.append_step({"step": "s"})
    finally:
        os.umask(old)
    loose = [p for p in [run.path, *run.path.rglob("*")] if p.stat().st_mode & (stat.S_IWOTH | stat.S_IWGRP)]
    assert loose == []


# -- for real, on the lab ------------------------------------------------------------------------

@pytest.mark.lab
def test_hostile_inventory_and_suite_on_the_lab(lab_maker, lab_base: Path, tmp_path: Path) -> None:
    """Hostile host names, variables and tool arguments through real SSH and real iperf3, run
    with umask 0: nothing is executed, no secret is written, nothing is world-writable, and the
    report escapes both the host names and what iperf3 said about the hostile argument."""
    mark = tmp_path / "MARK"
    SUITE_MARK.unlink(missing_ok=True)
    with lab_maker("secl", 2) as info:
        inv = tmp_path / "inventory.yaml"
        names = hostile_inventory(inv, mark, (info.hosts[0].address, info.hosts[1].address),
                                  key=str(info.key), known_hosts=str(info.known_hosts))
        out = tmp_path / "run"
        res = bench("run", f"suite={HOSTILE_SUITE}", f"hosts={inv}", f"out={out}", cwd=tmp_path,
                    preexec_fn=lambda: os.umask(0))
        left = lab.lab_processes(info.name, r"iperf3", base_dir=lab_base)
    assert res.returncode == 3, res.stdout + res.stderr  # the hostile-args step fails, iperf3 refuses
    assert not mark.exists() and not SUITE_MARK.exists()
    assert left == {"h1": [], "h2": []}
    run = RunDir(out)
    steps = {s["test"]: s for s in run.steps()}
    assert steps["plain"]["status"] == "ok" and steps["hostile-args"]["status"] == "failed"
    assert "unrecognized option '--<img src=x onerror=alert(2)>'" in steps["hostile-args"]["message"]
    assert "\n" not in steps["hostile-args"]["message"]  # iperf3's usage text is cut to one line
    plain = [s for s in run.samples() if s.get("test") == "plain" and s.get("kind") == "summary"]
    assert {frozenset((s["server"], s["client"])) for s in plain} == {frozenset(names)}
    # no secret anywhere: run.json, raw records, samples, report, and the console
    files = [p for p in out.rglob("*") if p.is_file()]
    for secret in SECRETS:
        assert secret not in res.stdout + res.stderr
        assert not [p for p in files if secret in p.read_text(errors="replace")], secret
    loose = [p for p in [out, *out.rglob("*")] if p.stat().st_mode & stat.S_IWOTH]
    assert loose == []
    html = (out / "report.html").read_text()
    assert "<img src=x" not in html and "<b>veth</b>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # the host name, escaped
    assert "&lt;img src=x onerror=alert(2)&gt;" in html  # the tool's words, escaped
