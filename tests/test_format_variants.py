"""Tool outputs in every format variant the parsers must read, through ``bench parse``.

Each fixture under ``tests/fixtures/formats/<tool>/`` is written by us in one tool's real output
format (its printf layouts, header facts and error lines), one variant per file: a perftest or
nccl-tests version's layout, a column set, a quirk (rows wider than their columns, log lines inside
a table, a cut-off paste, reply quoting, indentation), or an error. No hardware here, so the
outputs are hand-written in those formats; see ``tests/fixtures/formats/README.md``. Beside each,
``*.expected.json`` holds the figures read off the text: per row the size and the bandwidth /
latency as printed, perftest's MB/sec converted (x 2^20 x 8 / 1e9), or the error the parser must
raise (kind, and the tool's line the one-line message must quote).

The same fixtures are also fed back wrapped in the noise they pick up on the way to a report:
CRLF line ends, ANSI colours, logger timestamps, mpirun ``--tag-output`` prefixes, prose and
``$ command`` lines around them; the figures must not change.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure

ROOT = Path(__file__).parent / "fixtures" / "formats"
TOOLS = ("perftest", "nccl-tests", "rccl-tests", "nccl-debug", "ucx_perftest", "iperf3")


def _cases() -> list[tuple[str, Path, Path]]:
    out = []
    for tool in TOOLS:
        for exp in sorted((ROOT / tool).glob("*.expected.json")):
            stem = exp.name[: -len(".expected.json")]
            inputs = [p for p in exp.parent.glob(stem + ".*") if not p.name.endswith(".expected.json")]
            assert len(inputs) == 1, f"{exp}: expected one input file beside it, found {inputs}"
            out.append((tool, inputs[0], exp))
    return out


CASES = _cases()
IDS = [f"{tool}/{path.name}" for tool, path, _ in CASES]


def _close(got: Any, want: Any) -> bool:
    """``got`` equals ``want``: floats to 1e-9 relative, dicts and lists by ``want``'s keys / items."""
    if isinstance(want, bool) or want is None:
        return got is want
    if isinstance(want, float):
        return isinstance(got, int | float) and not isinstance(got, bool) and math.isclose(got, want, rel_tol=1e-9)
    if isinstance(want, int):
        return isinstance(got, int) and not isinstance(got, bool) and got == want
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _close(got[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(map(_close, got, want))
    return bool(got == want)


def _diff(got: dict[str, Any], want: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    return {k: (got.get(k, "<missing>"), v) for k, v in want.items() if k not in got or not _close(got[k], v)}


def _rows(tool: str, data: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(result rows, footer/summary record) of a parser's output, per tool."""
    if tool in ("nccl-tests", "rccl-tests"):
        return [r for r in data if r.get("kind") == "summary"], next(r for r in data if r.get("kind") == "footer")
    if tool == "iperf3":
        return [r for r in data if r.get("kind") == "summary"], None
    if tool == "nccl-debug":
        return [], data
    return list(data), None


def check(tool: str, text: str, expected: dict[str, Any], where: str) -> None:
    """Parse ``text`` as ``bench parse`` does and compare with ``expected``."""
    parser: Callable[[str], Any] = get_parser(tool)
    if "error" in expected:
        with pytest.raises(ToolFailure) as info:
            data = parser(text)
            pytest.fail(f"{where}: expected {expected['error']['kind']}, parsed {data!r:.300}")
        err = info.value
        assert err.kind == expected["error"]["kind"], f"{where}: {err.kind}: {err.message}"
        assert "\n" not in err.message, f"{where}: error message is not one line: {err.message!r}"
        quote = expected["error"].get("quote")
        if quote:
            assert quote in err.message, f"{where}: {err.message!r} does not quote {quote!r}"
        return
    data = parser(text)
    rows, extra = _rows(tool, data)
    want_rows = expected.get("records", [])
    if "records" in expected:
        got = [(r.get("size_bytes"), r.get("placement")) for r in rows]
        assert len(rows) == len(want_rows), f"{where}: {len(rows)} rows {got}, expected {len(want_rows)}"
    for i, (row, want) in enumerate(zip(rows, want_rows, strict=False)):
        merged = {**expected.get("common", {}), **want}
        assert not _diff(row, merged), f"{where}: row {i}: (got, want) {_diff(row, merged)}"
    for key in ("footer", "result"):
        if key in expected:
            assert extra is not None and not _diff(extra, expected[key]), \
                f"{where}: {key} (got, want) {_diff(extra or {}, expected[key])}"


@pytest.mark.parametrize(("tool", "path", "exp"), CASES, ids=IDS)
def test_format_variant(tool: str, path: Path, exp: Path) -> None:
    check(tool, path.read_text(encoding="utf-8"), json.loads(exp.read_text()), f"{tool}/{path.name}")


# ---- the same outputs with the noise they pick up on the way --------------------------------------

def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _ansi(text: str) -> str:
    """Colour codes as terminals and CI runners add them: around words and whole lines."""
    out = []
    for i, line in enumerate(text.split("\n")):
        if i % 3 == 0 and line.strip():
            line = f"\x1b[0;32m{line}\x1b[0m"
        elif i % 3 == 1:
            line = re.sub(r"(NCCL|WARN|Test|iterations)", "\x1b[1m\\1\x1b[22m", line)
        out.append(line)
    return "\n".join(out)


def _timestamps(text: str) -> str:
    """Every line prefixed by a logger (here a CI runner's ISO timestamps)."""
    return "\n".join(f"2024-03-07T10:{i // 60 % 60:02d}:{i % 60:02d}.{i:07d}Z {line}"
                     for i, line in enumerate(text.split("\n")))


def _prose(text: str) -> str:
    return (f"Here is what I get on 2 nodes (8 GPUs each), any idea why it is 20% low?\n\n"
            f"$ ./run.sh 2>&1 | tee out.log\n{text}\n\nThanks in advance! Version 2.19.3, driver 550.54\n")


def _tagged(text: str) -> str:
    return "\n".join(f"[1,0]<stdout>:{line}" if line else line for line in text.split("\n"))


NOISES: dict[str, Callable[[str], str]] = {"crlf": _crlf, "ansi": _ansi, "timestamps": _timestamps,
                                           "prose": _prose}
TEXT_CASES = [c for c in CASES if c[0] != "iperf3"]


@pytest.mark.parametrize("noise", sorted(NOISES))
@pytest.mark.parametrize(("tool", "path", "exp"), TEXT_CASES, ids=[f"{t}/{p.name}" for t, p, _ in TEXT_CASES])
def test_format_variant_with_noise(tool: str, path: Path, exp: Path, noise: str) -> None:
    text = NOISES[noise](path.read_text(encoding="utf-8"))
    check(tool, text, json.loads(exp.read_text()), f"{tool}/{path.name} + {noise}")


@pytest.mark.parametrize(("tool", "path", "exp"), [c for c in CASES if c[0] in ("nccl-tests", "rccl-tests")],
                         ids=[f"{t}/{p.name}" for t, p, _ in CASES if t in ("nccl-tests", "rccl-tests")])
def test_collective_output_with_mpirun_tags(tool: str, path: Path, exp: Path) -> None:
    check(tool, _tagged(path.read_text(encoding="utf-8")), json.loads(exp.read_text()), f"{path.name} + tags")


@pytest.mark.parametrize("noise", ["crlf", "prose", "timestamps"])
@pytest.mark.parametrize(("tool", "path", "exp"), [c for c in CASES if c[0] == "iperf3"],
                         ids=[f"iperf3/{p.name}" for t, p, _ in CASES if t == "iperf3"])
def test_iperf3_json_with_noise(tool: str, path: Path, exp: Path, noise: str) -> None:
    text = NOISES[noise](path.read_text(encoding="utf-8"))
    check(tool, text, json.loads(exp.read_text()), f"{path.name} + {noise}")


def test_noise_alone_is_never_a_number() -> None:
    """Prose, prompts and timestamps around no table at all: an error, not a row."""
    text = _timestamps(_prose("ib_write_bw -d mlx5_0 -a --report_gbits 192.0.2.1\n 65536 5000 0.34"))
    for tool in TOOLS:
        with pytest.raises(ToolFailure):
            get_parser(tool)(text)


# ---- a few through the real command line ---------------------------------------------------------

def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from benchharness.cli.main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)


CLI_CASES = [("perftest", "write_bw_all_gbits_ext_first_row_prompts"), ("perftest", "err_rdma_cm_addr_error"),
             ("nccl-tests", "all_reduce_version_line_wide_wrong"), ("nccl-tests", "failure_after_header"),
             ("nccl-debug", "socket_fallback_failure"), ("nccl-debug", "warn_only_no_info"),
             ("nccl-debug", "no_nccl_lines"),
             ("ucx_perftest", "tag_bw_banner_final_p50"), ("iperf3", "iperf3_3.9_bytes_mode")]


@pytest.mark.parametrize(("tool", "stem"), CLI_CASES)
def test_cli_parse(tool: str, stem: str) -> None:
    exp_path = ROOT / tool / f"{stem}.expected.json"
    if not exp_path.exists():
        pytest.fail(f"missing fixture {exp_path}")
    expected = json.loads(exp_path.read_text())
    (path,) = [p for p in exp_path.parent.glob(stem + ".*") if not p.name.endswith(".expected.json")]
    res = _bench("parse", tool, str(path))
    if "error" in expected:
        assert res.returncode != 0 and res.stdout == ""
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1, res.stderr
        assert expected["error"]["kind"] in lines[0] and expected["error"].get("quote", "") in lines[0]
        return
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    rows, extra = _rows(tool, data)
    if "result" in expected:
        assert extra is not None and not _diff(extra, expected["result"])
    want = expected.get("records", [])
    assert len(rows) == len(want)
    for row, w in zip(rows, want, strict=True):
        assert not _diff(row, {**expected.get("common", {}), **w})
