"""Command-output parsers against our own captures of each format variant the tools produce.

Each ``tests/fixtures/formats/telemetry/<parser>/<case>.txt`` was written by us in one tool's real
output format, keeping the shape a capture takes in practice: shell prompts and echoed commands
around it, ``grep``-filtered excerpts, mail-client line wraps, ``...`` elisions, neighbouring
command output, truncated captures (see README.md there for what each group covers). No hardware is
needed: the texts stand in for what ``lspci``, ``ethtool``, ``numactl``, ``nvidia-smi``, ``ibstat``,
``ibv_devinfo``, ``rdma``, ``ibdev2netdev`` and ``mlxlink`` print. Beside each, ``<case>.expected.json``
holds the key facts read by eye from that text (link speeds and widths, downgrades, node CPU lists
and distances, matrix cells, port states and rates). The expectation is a subset: every key it names
must be in the parse with that value; lists of objects must have the same length and match item by
item.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.telemetry.parsers._common import clean_text, is_noise

ROOT = Path(__file__).parent / "fixtures" / "formats" / "telemetry"
CASES = sorted(ROOT.glob("*/*.txt"))
PARSERS = ("lspci", "ethtool", "ethtool-i", "ethtool-S", "ethtool-m", "numactl", "nvidia-smi", "nvidia-smi-topo",
           "ibstat", "ibv_devinfo", "rdma", "ibdev2netdev", "mlxlink")


def assert_subset(expected: Any, got: Any, where: str = "$") -> None:
    """Fail with the JSON path of the first value that differs from ``expected``."""
    if isinstance(expected, dict):
        assert isinstance(got, dict), f"{where}: expected an object, got {got!r}"
        for key, value in expected.items():
            assert key in got, f"{where}: key {key!r} missing (have {sorted(got)})"
            assert_subset(value, got[key], f"{where}.{key}")
    elif isinstance(expected, list) and (not expected or isinstance(expected[0], dict)):
        assert isinstance(got, list), f"{where}: expected a list, got {got!r}"
        assert len(got) == len(expected), f"{where}: {len(got)} items, expected {len(expected)}"
        for i, (exp, item) in enumerate(zip(expected, got, strict=True)):
            assert_subset(exp, item, f"{where}[{i}]")
    else:
        assert got == expected, f"{where}: got {got!r}, expected {expected!r}"


def parse(path: Path) -> Any:
    return json.loads(json.dumps(get_parser(path.parent.name)(path.read_text())))


def test_every_parser_has_its_variants_and_the_readme_names_them() -> None:
    per_parser: dict[str, int] = {}
    for path in CASES:
        per_parser[path.parent.name] = per_parser.get(path.parent.name, 0) + 1
        assert path.with_name(path.stem + ".expected.json").exists(), path
    assert len(CASES) >= 50
    assert set(per_parser) == set(PARSERS), per_parser
    assert all(per_parser[name] >= 3 for name in PARSERS if name not in ("ethtool-S", "ibv_devinfo")), per_parser
    readme = (ROOT / "README.md").read_text()
    assert all(f"`{name}/`" in readme for name in PARSERS), "README.md must describe every fixture folder"


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_format_variant_gives_the_facts_read_by_eye(path: Path) -> None:
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    assert_subset(expected, parse(path))


def test_subset_check_can_fail() -> None:
    with pytest.raises(AssertionError, match=r"\$\[0\]\.downgraded"):
        assert_subset([{"downgraded": True}], [{"downgraded": False, "address": "5e:00.0"}])
    with pytest.raises(AssertionError, match="items"):
        assert_subset([{"a": 1}], [{"a": 1}, {"a": 2}])
    with pytest.raises(AssertionError, match=r"\$\.nodes\[1\]\.cpus"):
        assert_subset({"nodes": [{"cpus": [0]}, {"cpus": [1, 2]}]}, {"nodes": [{"cpus": [0]}, {"cpus": [1]}]})


def test_prompts_and_sudo_lines_are_noise_but_tool_lines_are_not() -> None:
    for line in ("root@gpu01:~# lspci -vvv", "[root@gpu03 ~]# rdma link show", "$ ethtool eth0", "# numactl -H",
                 "ops@node-a7:~/work$ sudo mlxlink -d mlx5_0", "sudo: unable to resolve host gpu01",
                 "root@dpu-b3 ~ [2]# lspci -vvv -s 03:00.1", "ops@ws-lab4 $ numactl -H", "x-07:~$ ibdev2netdev"):
        assert is_noise(line), line
    for line in ("\t\tLnkSta:\tSpeed 16GT/s (ok), Width x16 (ok)", "        Speed: 400000Mb/s", "node 0 cpus: 0 1",
                 "  5/1: mlx5_bond_0/1: state ACTIVE", "State                              : Active",
                 "mlx5_0   port  1  ==>  ibp24s0     (Up)    # rail 0, 400G IB"):
        assert not is_noise(line), line


def test_crlf_and_colours_do_not_change_the_facts() -> None:
    """A capture saved on Windows or through a colouring terminal: same facts as the clean text."""
    for rel in ("lspci/vvv-old-pciutils-no-notes-mail-wrapped.txt",
                "numactl/2s-8-nodes-smt-bare-command-trailing-blanks.txt",
                "ibstat/two-ca-ethernet-log-banner.txt", "mlxlink/ib-hdr-trailing-spaces.txt",
                "nvidia-smi-topo/8gpu-12nic-gpu-numa-id-rows-cut.txt", "rdma/link-section-in-host-report.txt"):
        path = ROOT / rel
        text = path.read_text()
        noisy = "\x1b[1m" + text.replace("\n", "\x1b[0m\r\n")
        assert clean_text(noisy) == clean_text(text)
        assert get_parser(path.parent.name)(noisy) == get_parser(path.parent.name)(text), rel


@pytest.mark.parametrize("rel", [
    "lspci/grep-unindented-downgraded-both-lnkcap2.txt",
    "numactl/memoryless-nodes-user-prompt.txt",
    "nvidia-smi-topo/8gpu-10nic-numa-affinity-nic-legend.txt",
    "rdma/link-show-ifindex-prefix-bonds.txt",
])
def test_bench_parse_cli_reads_format_variants(rel: str) -> None:
    path = ROOT / rel
    proc = subprocess.run([sys.executable, "-m", "benchharness", "parse", path.parent.name, str(path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    assert_subset(expected, json.loads(proc.stdout))


def test_prompt_lines_leave_no_keys_behind() -> None:
    """A ``user@host:~$ sudo ethtool -i p2p1`` line once became a key ``user@host`` with a value."""
    driver = parse(ROOT / "ethtool-i" / "sudo-prompt-version-with-date-no-psid.txt")
    assert not [k for k in driver if "@" in k or "$" in str(driver[k])]
    for name in ("module-and-counters-dac-no-ddm", "ib-ndr-2x-elided-with-prompts", "ethernet-200g-ext-speed-masks"):
        sections = parse(ROOT / "mlxlink" / f"{name}.txt")["sections"]
        assert "General" not in sections, name
        assert not [k for s in sections.values() for k in s if "@" in k or "$" in k], name
