"""HTML reports and exports rendered from synthetic run directories (tests/fixtures/runs)."""

from __future__ import annotations

import csv
import importlib.util
import re
import shutil
from pathlib import Path

import pytest

from benchharness.report import exports
from benchharness.report.compare import render_comparison
from benchharness.report.html import render_run_report
from benchharness.results.store import RunDir

FIXTURES = Path(__file__).parent / "fixtures" / "runs"
_spec = importlib.util.spec_from_file_location("synth", FIXTURES / "synth.py")
assert _spec and _spec.loader
synth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(synth)

HOSTILE = '<script>alert("x")</script>'
EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""",
                      re.IGNORECASE)


def _copy(name: str, tmp: Path) -> RunDir:
    shutil.copytree(FIXTURES / name, tmp / name)
    return RunDir(tmp / name)


@pytest.fixture(scope="module")
def run_html(tmp_path_factory: pytest.TempPathFactory) -> str:
    run = _copy("nic-a", tmp_path_factory.mktemp("report"))
    out = render_run_report(run)
    assert out == run.path / "report.html"
    return out.read_text(encoding="utf-8")


def test_single_run_report_has_every_section(run_html: str) -> None:
    for text in ("nic-qual", "20251130-120000-nic-a", "complete", "2025-11-30 12:00:00 UTC",
                 "Failures", "connect_failed", "Checks", "rdma-bw line rate",
                 "Throughput vs message size", "Latency percentiles vs message size",
                 "Bus bandwidth vs message size", "bw_avg_gbps over time", "All-pairs bw_avg_gbps",
                 "Telemetry", "Preflight checks", "Host facts", "NICs", "Hottest sensor per host",
                 "CPU use per host", "Counter deltas per step", "rx_discards_phy", "eth0 PCIe x8 (capable x16)",
                 "line rate", "95% CI of median"):
        assert text in run_html, text
    # one SVG per chart, each with drawn series
    assert run_html.count("<svg") == 7
    assert run_html.count('class="series-line"') >= 10
    assert "median" in run_html and "cv" in run_html


def test_line_rate_percent_in_table(run_html: str) -> None:
    # nic-a peaks near 140 of 200 Gbit/s at 8M: about 70 % of line rate
    rows = re.findall(r'<td class="n" data-v="8388608\.0">8M</td>.*?</tr>', run_html, re.S)
    shares = [float(x) for row in rows for x in re.findall(r">(\d+\.\d)%</td></tr>", row)]
    assert shares and all(60 < s < 75 for s in shares)


def test_report_is_self_contained(run_html: str) -> None:
    assert not EXTERNAL.search(run_html)
    assert "http://" not in run_html and "https://" not in run_html
    assert run_html.count("<script>") == 1  # our sortable-table script only
    assert "@media print" in run_html


def test_minimal_run_without_telemetry(tmp_path: Path) -> None:
    out = render_run_report(_copy("minimal", tmp_path), tmp_path / "m.html")
    html = out.read_text(encoding="utf-8")
    assert "partial" in html and "rdma-bw" in html
    assert 'id="telemetry"' not in html and "Hottest sensor" not in html


def test_run_without_samples_renders(tmp_path: Path) -> None:
    run = RunDir.create(tmp_path / "empty")
    run.write_run_info({"run_id": "empty", "suite": {"name": "s"}, "state": "failed", "exit_code": 3,
                        "failures": [{"step": "x", "host": "h", "kind": "tool_missing",
                                      "message": "ib_write_bw: not found"}]})
    html = render_run_report(run).read_text(encoding="utf-8")
    assert "No samples were recorded" in html and "ib_write_bw: not found" in html


def test_hostile_strings_are_escaped(tmp_path: Path) -> None:
    run = synth.build_run(tmp_path / "evil", name="evil", hostile=HOSTILE, reps=3)
    info = run.run_info()
    info["failures"].append({"step": "s", "host": HOSTILE, "kind": "crashed",
                             "message": "</td><img src=x onerror=alert(1)>"})
    info["labels"] = {"note": "<b>bold</b>"}
    run.write_run_info(info)
    html = render_run_report(run).read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(" in html
    assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold</b>" not in html
    assert html.count("<script>") == 1
    other = synth.build_run(tmp_path / "ok", name="ok", reps=3, firmware="2")
    cmp_html = render_comparison([run, other], tmp_path / "c.html").read_text(encoding="utf-8")
    assert "<script>alert" not in cmp_html and cmp_html.count("<script>") == 1
    assert not EXTERNAL.search(cmp_html)


def test_comparison_report_names_winner_and_ratio(tmp_path: Path) -> None:
    runs = [RunDir(FIXTURES / "nic-a"), RunDir(FIXTURES / "nic-b")]
    html = render_comparison(runs, tmp_path / "cmp.html").read_text(encoding="utf-8")
    assert "Summary for reviewers" in html
    assert re.search(r"CX7 · fw 28\.39 wins: 3\d\.\d% higher", html)
    assert "×1.3" in html  # ratio to the baseline
    assert "Telemetry warnings that may explain a difference" in html
    assert "Gbit/s per k$" in html and "Noise" in html
    assert not EXTERNAL.search(html)
    assert html.count("<svg") >= 5


def test_exports(tmp_path: Path) -> None:
    runs = [RunDir(FIXTURES / "nic-a"), RunDir(FIXTURES / "nic-b")]
    out = exports.samples_csv(runs, tmp_path / "s.csv")
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    lines = sum(len((r.path / "samples.jsonl").read_text().splitlines()) for r in runs)
    assert len(rows) == lines and rows[0]["run"] == "CX6 · fw 22.36"
    assert {r["kind"] for r in rows} == {"summary", "interval"}
    md = exports.markdown_summary(runs)
    assert md.startswith("# Comparison: CX6 · fw 22.36 vs CX7 · fw 28.39")
    assert "| rdma-bw | large | bw_avg_gbps | CX7 · fw 28.39 wins:" in md
    single = exports.markdown_summary(runs[:1])
    assert "## rdma-bw" in single and "| 8M |" in single
    data = exports.comparison_json(runs)
    assert data["format"] == "benchharness-comparison" and data["baseline"] == "CX6 · fw 22.36"
    big = next(r for r in data["summary"] if r["test"] == "rdma-bw" and r["band"] == "large")
    assert big["winner"] == "CX7 · fw 28.39" and big["factor"] == pytest.approx(1.357, abs=0.03)


def test_size_derived_labels_do_not_split_chart_series() -> None:
    """nccl-tests' element count follows the size: one line per placement, not one per point."""
    import pandas as pd

    from benchharness.report.sections import _series

    rows = [{"metric": "busbw_GBps", "size_bytes": size, "count": size // 4, "placement": placement,
             "median": size / 1e6, "ci95_low": size / 1e6, "ci95_high": size / 1e6, "n": 1}
            for size in (1024, 4096, 16384) for placement in ("in-place", "out-of-place")]
    series, _ = _series(pd.DataFrame(rows), "busbw_GBps", ["count", "placement", "size_bytes"], "size_bytes")
    assert sorted(s.name for s in series) == ["in-place", "out-of-place"]
    assert all(len(s.points) == 3 for s in series)


def test_rails_per_host_table_from_the_preflight_findings(tmp_path: Path) -> None:
    """One row per rail: the probe's facts of its NIC and the preflight findings about it, escaped."""
    import json
    import subprocess
    import sys

    from benchharness.core.model import Host, Rail
    from benchharness.results.runview import rail_rows
    from benchharness.telemetry.preflight import run_findings

    probe = Path(__file__).parents[1] / "benchharness" / "onhost" / "probe.py"
    tree = Path(__file__).parent / "fixtures" / "telemetry" / "trees" / "degraded"
    facts = json.loads(subprocess.run([sys.executable, str(probe), "--root", str(tree), "--no-commands"],
                                      capture_output=True, text=True, check=True, timeout=60).stdout)
    rails = [{"name": "rail0", "netdev": "ens1f0np0", "rdma_dev": "mlx5_0", "numa_node": 0, "serial": HOSTILE},
             {"name": "rail1", "netdev": "eno1", "numa_node": 0}]
    host = Host("gpu-a", "10.0.0.1", rails=(Rail(0, netdev="ens1f0np0", rdma_dev="mlx5_0", numa_node=0,
                                                 serial=HOSTILE), Rail(1, netdev="eno1", numa_node=0)))
    run = RunDir.create(tmp_path / "rails")
    run.write_run_info({"run_id": "rails", "suite": {"name": "s"}, "state": "complete", "exit_code": 0,
                        "hosts": ["gpu-a"], "inventory": {"hosts": {"gpu-a": {"rails": rails}}}})
    run.write_json("telemetry/facts/gpu-a.json", facts)
    run.write_json("telemetry/preflight.json", run_findings({"gpu-a": facts}, [host], required_tools=[]))
    rows = rail_rows(run)["gpu-a"]
    assert [r["rail"] for r in rows] == ["rail0", "rail1"]
    r0, r1 = rows
    # the x8 link of an x16 card and the NIC on node 1 for a rail said to be on node 0; no GID index on RoCE
    assert (r0["RDMA dev"], r0["netdev"], r0["NUMA"], r0["MTU"]) == ("mlx5_0", "ens1f0np0", "1", "9000")
    assert "x8" in r0["PCIe"] and r0["link"].startswith("ACTIVE Ethernet")
    assert r0["status"] == "fail" and {"pcie_link", "numa_affinity", "gid_index"} <= set(r0["findings"].split(", "))
    assert r1["RDMA dev"] == "" and r1["MTU"] == "1500" and r1["status"] in ("pass", "info", "warn", "fail")
    html = render_run_report(run).read_text(encoding="utf-8")
    assert "Rails per host" in html and "<h4>gpu-a</h4>" in html
    assert "&lt;script&gt;alert(" in html and "<script>alert" not in html
