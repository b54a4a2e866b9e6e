"""The `bench` command: subcommands with key=value arguments. Thin: it only dispatches.

Exit codes: 0 everything ran and passed; 1 a verdict failed; 2 bad usage or configuration;
3 some steps could not run (host unreachable, tool missing, tool crashed); 4 results could
not be written (disk full); 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence

from benchharness.core.errors import EXIT_INTERRUPTED, EXIT_USAGE, BenchError, UsageError

EXIT_CODES = """exit codes:
  0    everything ran and every verdict passed
  1    a verdict failed
  2    bad usage or configuration (unknown suite, malformed inventory or suite)
  3    some steps could not run (host unreachable, tool missing, tool crashed)
  4    results could not be written (disk full, read-only); what was written is intact
  130  interrupted (SIGINT/SIGTERM); everything measured so far is kept
"""

# Keys that `bench run` consumes itself; every other key=value overrides a suite parameter.
RUN_KEYS = ("suite", "hosts", "out", "resume", "launcher", "junit", "baseline", "label", "prom", "push")


def parse_kv(items: Sequence[str], allowed: Sequence[str] | None = None) -> dict[str, str]:
    """``key=value`` arguments as a dict; a UsageError for anything else."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not key.replace("_", "").replace("-", "").isalnum():
            raise UsageError(f"expected key=value, got {item!r}")
        if allowed is not None and key not in allowed:
            raise UsageError(f"unknown argument {key!r}; expected {', '.join(allowed)}")
        out[key] = value
    return out


def _require(args: dict[str, str], key: str, command: str) -> str:
    if not args.get(key):
        raise UsageError(f"bench {command} needs {key}=...; see `bench {command} --help`")
    return args[key]


def cmd_run(ns: argparse.Namespace) -> int:
    from benchharness.execution.execute import run_suite

    kv = parse_kv(ns.args)
    suite = kv.pop("suite", None) or "quick"
    hosts, out, resume = kv.pop("hosts", None), kv.pop("out", None), kv.pop("resume", None)
    return run_suite(suite, hosts, kv, out=out, resume=resume, launcher=kv.pop("launcher", None),
                     junit=kv.pop("junit", None), baseline=kv.pop("baseline", None), label=kv.pop("label", None),
                     prom=kv.pop("prom", None), push=kv.pop("push", None))


def _connections(value: str | None) -> int:
    """``max_connections=N`` of a command line: hosts reached at once (default the runner's)."""
    from benchharness.config.suites import MAX_CONNECTIONS_LIMIT
    from benchharness.execution.runner import MAX_CONNECTIONS

    if value is None:
        return MAX_CONNECTIONS
    n = int(value) if value.strip().isdigit() else 0
    if not 1 <= n <= MAX_CONNECTIONS_LIMIT:
        raise UsageError(f"max_connections={value}: a whole number of hosts from 1 to {MAX_CONNECTIONS_LIMIT}")
    return n


def cmd_export(ns: argparse.Namespace) -> int:
    from pathlib import Path

    from benchharness.report import prometheus
    from benchharness.results.store import find_run

    kv = parse_kv([a for a in ns.args if "=" in a], allowed=("prom", "push"))
    runs = [a for a in ns.args if "=" not in a]
    if len(runs) != 1 or not (kv.get("prom") or kv.get("push")):
        raise UsageError("bench export needs one RUN and prom=FILE and/or push=URL")
    run = find_run(runs[0])
    if kv.get("prom"):
        print(f"prom: {prometheus.write_textfile(run, Path(kv['prom']))}")
    if kv.get("push"):
        prometheus.push(run, kv["push"])
        print(f"pushed: {kv['push']}")
    return 0


def cmd_bisect(ns: argparse.Namespace) -> int:
    from benchharness.execution.bisect import BISECT_KEYS, run_bisect

    kv = parse_kv(ns.args)
    hosts = _require(kv, "hosts", "bisect")
    rest = {k: v for k, v in kv.items() if k not in BISECT_KEYS}
    return run_bisect(kv.get("suite") or "allreduce", hosts, rest, out=kv.get("out"), test=kv.get("test"),
                      limit=kv.get("limit"), launcher=kv.get("launcher"), junit=kv.get("junit"))


def cmd_plan(ns: argparse.Namespace) -> int:
    from benchharness.config.inventory import load_inventory, local_inventory
    from benchharness.config.suites import load_suite
    from benchharness.planning.describe import describe_plan
    from benchharness.planning.plan import build_plan

    kv = parse_kv(ns.args)
    suite = load_suite(kv.pop("suite", "") or "quick", {k: v for k, v in kv.items() if k not in RUN_KEYS})
    inventory = load_inventory(kv["hosts"]) if kv.get("hosts") else local_inventory()
    if warning := inventory.ssh_warning():
        print(warning, file=sys.stderr)
    from benchharness.execution.launchers import launcher_name

    launcher = launcher_name(kv.get("launcher"), inventory.hosts)
    print(describe_plan(build_plan(suite, inventory.hosts, inventory=inventory, launcher=launcher)))
    return 0


def cmd_suites(ns: argparse.Namespace) -> int:
    from benchharness.config.suites import list_suites

    suites = list_suites()
    width = max((len(n) for n, _ in suites), default=0)
    for name, description in suites:
        print(f"{name:<{width}}  {description}")
    return 0


def cmd_list(ns: argparse.Namespace) -> int:
    from benchharness.cli.history import LIST_KEYS, list_lines

    for line in list_lines(parse_kv(ns.args, allowed=LIST_KEYS)):
        print(line)
    return 0


def cmd_history(ns: argparse.Namespace) -> int:
    from benchharness.cli.history import HISTORY_KEYS, history_lines

    for line in history_lines(parse_kv(ns.args, allowed=HISTORY_KEYS)):
        print(line)
    return 0


def cmd_tag(ns: argparse.Namespace) -> int:
    from benchharness.cli.history import tag_lines

    for line in tag_lines(ns.run, ns.tags, remove=ns.remove):
        print(line)
    return 0


def cmd_trend(ns: argparse.Namespace) -> int:
    from benchharness.cli.history import TREND_KEYS, trend_command

    print(f"trend: {trend_command(parse_kv(ns.args, allowed=TREND_KEYS))}")
    return 0


def cmd_show(ns: argparse.Namespace) -> int:
    from benchharness.results.store import find_run

    run = find_run(ns.run)
    info = run.run_info()
    print(json.dumps({k: info.get(k) for k in ("run_id", "state", "exit_code", "started", "ended",
                                                 "hosts", "steps", "failures", "verdicts")},
                     indent=2, default=str))
    print(f"samples: {len(run.samples())}  path: {run.path}")
    return 0


def cmd_report(ns: argparse.Namespace) -> int:
    from benchharness.report.compare import render_comparison
    from benchharness.report.html import render_run_report
    from benchharness.results.store import find_run

    kv = parse_kv([a for a in ns.runs if "=" in a], allowed=("out", "junit"))
    runs = [find_run(r) for r in ns.runs if "=" not in r]
    if not runs:
        raise UsageError("bench report needs at least one RUN (an id, a path, or latest)")
    from pathlib import Path

    if len(runs) == 1:
        path = render_run_report(runs[0], Path(kv["out"]) if kv.get("out") else None)
        if kv.get("junit"):
            from benchharness.report.junit import write_junit

            print(f"junit: {write_junit(runs[0], Path(kv['junit']), str(path))}")
    else:
        path = render_comparison(runs, Path(kv.get("out") or "comparison.html"))
    print(f"report: {path}")
    return 0


def cmd_compare(ns: argparse.Namespace) -> int:
    from pathlib import Path

    from benchharness.results.store import find_run

    kv = parse_kv([a for a in ns.runs if "=" in a], allowed=("out", "format", "equivalence", "workload"))
    runs = [find_run(r) for r in ns.runs if "=" not in r]
    if len(runs) < 2:
        raise UsageError("bench compare needs at least two runs: bench compare RUN_A RUN_B [...]")
    threshold = _equivalence(kv.get("equivalence"))
    workload = None
    if kv.get("workload"):  # what an all-reduce curve means for a training run (workloads/*.yaml)
        from benchharness.config.workloads import load_workload

        workload = load_workload(kv["workload"])
    fmt = kv.get("format", "html")
    if fmt == "json":
        from benchharness.report.exports import comparison_json

        text = json.dumps(comparison_json(runs, threshold=threshold, workload=workload), indent=2, default=str)
        if kv.get("out"):
            Path(kv["out"]).write_text(text + "\n")
            print(f"comparison: {kv['out']}")
        else:
            print(text)
    elif fmt == "md":
        from benchharness.report.exports import markdown_summary

        text = markdown_summary(runs, threshold=threshold, workload=workload)
        if kv.get("out"):
            Path(kv["out"]).write_text(text)
            print(f"comparison: {kv['out']}")
        else:
            print(text)
    elif fmt == "csv":
        from benchharness.report.exports import samples_csv

        print(f"samples: {samples_csv(runs, Path(kv.get('out') or 'samples.csv'))}")
    elif fmt == "html":
        from benchharness.report.compare import render_comparison

        out = Path(kv.get("out") or "comparison.html")
        print(f"report: {render_comparison(runs, out, threshold=threshold, workload=workload)}")
    else:
        raise UsageError(f"format={fmt!r}: expected html, json, md or csv")
    return 0


def _equivalence(text: str | None) -> float:
    """``equivalence=2%`` (or ``0.02``): the practical threshold of comparisons."""
    from benchharness.analysis.stats import EQUIVALENCE

    if text is None:
        return EQUIVALENCE
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        value = math.nan
    if not 0 <= value < 1:
        raise UsageError(f"equivalence={text!r}: expected a share such as 2% or 0.02")
    return value


def cmd_parse(ns: argparse.Namespace) -> int:
    from benchharness.cli.parsers import describe, get_parser, is_empty
    from benchharness.core.errors import ToolFailure

    if ns.list:
        for name, reads in describe().items():
            print(f"{name:22} {reads}")
        return 0
    if not ns.tool or not ns.file:
        raise UsageError("bench parse needs a parser name and a file (or -); `bench parse --list` names them")
    parser = get_parser(ns.tool)
    try:
        if ns.file == "-":
            text = sys.stdin.read()
        else:
            with open(ns.file, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read {ns.file}: {exc.strerror}") from exc
    try:
        data = parser(text)
    except ToolFailure as exc:
        if exc.records:  # what the tool printed before failing, flagged: shown, and still an error
            print(json.dumps(exc.records, indent=2, default=str))
        print(f"bench parse {ns.tool} {ns.file}: {exc.kind}: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except ValueError as exc:  # a parser that says why it refuses the text
        print(f"bench parse {ns.tool} {ns.file}: unreadable: {exc}", file=sys.stderr)
        return 3
    print(json.dumps(data, indent=2, default=str))
    if is_empty(data) and text.strip():
        print(f"bench parse {ns.tool} {ns.file}: nothing read: no line of it is {ns.tool} output "
              f"(see `bench parse --list` for the parser that reads it)", file=sys.stderr)
        return 3
    return 0


def cmd_health(ns: argparse.Namespace) -> int:
    from benchharness.cli.health import limits_from
    from benchharness.telemetry.health import LABELS
    from benchharness.telemetry.pasted_health import judge_pasted, pasted_seconds, read_pair, read_snapshot

    files = [a for a in ns.args if "=" not in a]
    kv = parse_kv([a for a in ns.args if "=" in a])
    if len(files) not in (1, 2):
        raise UsageError("bench health needs two snapshot files, BEFORE and AFTER (or one paste holding "
                         "both), and seconds=N")
    texts = []
    for name in files:
        try:
            with open(name, encoding="utf-8", errors="replace") as fh:
                texts.append(fh.read())
        except OSError as exc:
            raise UsageError(f"cannot read {name}: {exc.strerror}") from exc
    stated = pasted_seconds(texts[0]) if len(files) == 1 and "seconds" not in kv else None
    seconds = stated or _positive(_require(kv, "seconds", "health"), "seconds")
    speed = _positive(kv["speed_gbps"], "speed_gbps") if kv.get("speed_gbps") else None
    limits = limits_from(kv)
    snaps = list(read_pair(texts[0], files[0])) if len(files) == 1 else \
        [read_snapshot(text, name) for text, name in zip(texts, files, strict=True)]
    if stated:
        print(f"seconds={stated:g} (the paste's 'sleep {stated:g}' between its two runs)")
    verdicts = judge_pasted(snaps[0], snaps[1], seconds=seconds, limits=limits, speed_gbps=speed)
    for v in verdicts:
        print(f"{v.judged.status.upper():5} {v.obj or 'host':12} {LABELS[v.judged.limit]}: {v.judged.message}")
    return 1 if any(v.judged.status == "fail" for v in verdicts) else 0


def _positive(text: str, key: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise UsageError(f"{key}={text!r}: expected a positive number")
    return value


def cmd_doctor(ns: argparse.Namespace) -> int:
    from benchharness.config.inventory import load_inventory, local_inventory
    from benchharness.results import golden as golden_store
    from benchharness.results.catalog import Catalog
    from benchharness.telemetry.doctor import doctor, doctor_facts, ping, roles_of
    from benchharness.telemetry.golden import learn

    kv = parse_kv(ns.args, allowed=("hosts", "out", "limit", "ping", "facts", "golden", "save_golden",
                                    "max_connections"))
    workers = _connections(kv.get("max_connections"))
    catalog = Catalog()
    golden = golden_store.load(catalog, kv["golden"]) if kv.get("golden") else None
    seen: dict[str, object] = {}
    if kv.get("facts"):
        inventory = load_inventory(kv["hosts"]) if kv.get("hosts") else None
        roles = roles_of(inventory.hosts) if inventory else {}
        code, facts = doctor_facts(kv["facts"], golden, kv.get("golden", ""), roles)
        seen.update(facts=facts, roles=roles)
    else:
        inventory = load_inventory(kv["hosts"]) if kv.get("hosts") else local_inventory()
        if warning := inventory.ssh_warning():
            print(warning, file=sys.stderr)
        hosts = inventory.select(kv["limit"]) if kv.get("limit") else inventory.hosts
        if kv.get("ping", "").lower() in ("1", "true", "yes"):
            return ping(hosts, workers=workers)
        code = doctor(hosts, out=kv.get("out"), golden=golden, reference=kv.get("golden", ""),
                      facts_sink=lambda f: seen.update(facts=f), workers=workers)
        seen["roles"] = roles_of(hosts)
    if kv.get("save_golden") and isinstance(seen.get("facts"), dict):
        learned = learn(seen["facts"], seen.get("roles"))  # type: ignore[arg-type]
        n = golden_store.save(catalog, kv["save_golden"], learned)
        print(f"golden configuration {kv['save_golden']!r}: {n} value(s) of {len(learned)} group(s) "
              f"stored in {catalog.path}")
    return code


def cmd_provision(ns: argparse.Namespace) -> int:
    from pathlib import Path

    from benchharness.config.inventory import find_inventory
    from benchharness.provision import provision

    kv = parse_kv(ns.args, allowed=("hosts", "limit", "tags", "check", "vars"))
    inventory = find_inventory(_require(kv, "hosts", "provision"))
    extra = dict(parse_kv(kv["vars"].split(","))) if kv.get("vars") else None
    result = provision(Path(inventory), limit=kv.get("limit"),
                       tags=[t for t in kv.get("tags", "").split(",") if t] or None,
                       check=kv.get("check", "").lower() in ("1", "true", "yes"), extra_vars=extra, echo=print)
    for host, messages in sorted(result.messages.items()):
        for message in messages:
            print(f"{host}: {message}")
    for host, recap in sorted(result.hosts.items()):
        print(f"{host}: ok={recap.ok} changed={recap.changed} failed={recap.failed} unreachable={recap.unreachable}")
    return 0


def cmd_lab(ns: argparse.Namespace) -> int:
    from benchharness.lab import control as lab

    kv = parse_kv(ns.args, allowed=("hosts", "name", "shape", "rdma", "jump", "rails"))
    name = kv.get("name")
    if ns.action == "up":
        try:
            count = int(kv.get("hosts", "3"))
        except ValueError as exc:
            raise UsageError(f"hosts= must be a number of hosts, got {kv['hosts']!r}") from exc
        try:
            rails = int(kv.get("rails", "0"))
        except ValueError as exc:
            raise UsageError(f"rails= must be a number of NICs per host, got {kv['rails']!r}") from exc
        try:
            shape = lab.parse_shape(kv["shape"]) if kv.get("shape") else None
        except ValueError as exc:
            raise UsageError(f"shape=: {exc}") from exc
        info = lab.lab_up(count, name=name or "lab", shape=shape, rdma=kv.get("rdma"),
                          jump=kv.get("jump", "").lower() in ("1", "true", "yes"), rails=rails)
        for h in info.hosts:
            print(f"{h.name}  {h.address}  netns={h.netns}{'  shaped ' + h.shape if h.shape else ''}")
            for r in h.rails:
                print(f"  {r['name']}  {r['netdev']}  {r['address']}{'  shaped ' + r['shape'] if r.get('shape') else ''}")
        print(info.inventory)
    elif ns.action == "status":
        rows = lab.lab_status(name)
        if not rows:
            print("no lab is up")
        for r in rows:
            print("  ".join(f"{k}={v}" for k, v in r.items()))
    else:
        removed = lab.lab_down(name)
        print(f"removed: {', '.join(removed) if removed else 'nothing'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    top = argparse.ArgumentParser(
        prog="bench", description="Benchmark datacenter NICs: perftest, iperf3, nccl-tests, with telemetry.",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, fn: Callable[[argparse.Namespace], int], help_text: str, epilog: str = "") -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=epilog + "\n" + EXIT_CODES,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(func=fn)
        return p

    add("run", cmd_run, "run a suite on the hosts of an inventory (default: the local machine)",
        "arguments:\n  suite=NAME|PATH   a suite from suites/ or a YAML file (default quick)\n"
        "  hosts=INVENTORY   Ansible inventory (path or name in inventories/); omit for the local machine\n"
        "  out=DIR           run directory (default reports/<run-id>)\n"
        "  resume=RUN        continue an interrupted run, skipping finished steps\n"
        "  label=TEXT        how reports and comparisons name this run (default: what differs)\n"
        "  launcher=ssh|slurm  how commands reach the hosts: SSH (default) or Slurm job steps (srun)\n"
        "  junit=FILE        also write the verdicts as JUnit XML (one testcase per check, per host)\n"
        "  prom=FILE         also write verdicts and headline metrics as Prometheus text (node_exporter\n"
        "                    textfile collector); push=URL pushes them to a Pushgateway\n"
        "  baseline=REF      run that 'N% baseline' checks compare with: a tag (golden), latest-pass,\n"
        "                    latest or a run id (default: the suite's verdicts: baseline, else golden)\n"
        "  KEY=VALUE         override a suite setting or tool parameter (duration=5 repeat=3 ...)\n\n"
        "example:\n  bench run suite=allreduce hosts=lab.ini repeat=3"
        ).add_argument("args", nargs="*", metavar="KEY=VALUE")
    add("bisect", cmd_bisect, "find the nodes that drag a collective down: test halves concurrently, "
        "narrow to the slow nodes, confirm with random healthy partners",
        "arguments: hosts=INVENTORY [suite=allreduce] [test=NAME] [limit=BUSBW_GBps] [out=DIR] [junit=FILE]\n"
        "  [bisect_share=0.7] [bisect_rounds=N] [bisect_seconds=1800] [bisect_seed=0] [KEY=VALUE ...]\n\n"
        "A group passes at bisect_share of limit= (else of the median healthy group). Exit 1 when a node\n"
        "is named (with the groups it was in and their bus bandwidth), 0 when none, 3 when nothing ran.\n"
        "junit=FILE: one testcase per node, failed for a named node (bench export RUN reads the same verdicts)\n\n"
        "example:\n  bench bisect hosts=cluster.ini suite=allreduce limit=40"
        ).add_argument("args", nargs="*", metavar="KEY=VALUE")
    add("plan", cmd_plan, "print the rounds and exact command lines a run would execute, without running",
        "arguments: suite=NAME hosts=INVENTORY [KEY=VALUE ...]").add_argument("args", nargs="*", metavar="KEY=VALUE")
    add("suites", cmd_suites, "list the suites with their descriptions")
    add("list", cmd_list, "list stored runs from the history catalog, oldest first",
        "arguments (all optional): suite=NAME nic=MODEL|SERIAL|FIRMWARE host=NAME\n"
        "  verdict=pass|fail|error|interrupted tag=TAG since=YYYY-MM-DD last=N"
        ).add_argument("args", nargs="*", metavar="KEY=VALUE")
    add("history", cmd_history, "show a metric over runs, with regressions flagged",
        "arguments: metric=NAME [nic=MODEL|SERIAL] [suite=] [test=] [size=1M] [host=] [last=N]\n"
        "  [window=10 k=4 min_change=5]   regression: worse than the median of the previous window\n"
        "  nights by more than k scaled MADs and min_change percent, or a significant decline\n\n"
        "example:\n  bench history metric=bw_avg_gbps nic=CX7 test=write-bw size=8M"
        ).add_argument("args", nargs="*", metavar="KEY=VALUE")
    p = add("tag", cmd_tag, "tag a run (golden, ...), remove tags, or show them",
            "baseline=TAG on `bench run` compares with the run tagged TAG last.\n\n"
            "examples:\n  bench tag 20251130-010000-acceptance-3fa2 golden\n  bench tag latest golden --remove")
    p.add_argument("run", help="run id, path, or latest")
    p.add_argument("tags", nargs="*", metavar="TAG")
    p.add_argument("--remove", action="store_true", help="remove the tags instead of adding them")
    add("trend", cmd_trend, "render an HTML trend report of a metric over nights per NIC model or serial",
        "arguments: metric=NAME [by=model|serial|firmware] [nic=] [suite=] [test=] [size=] [last=N]\n"
        "  [out=FILE]  (default trend-METRIC.html)").add_argument("args", nargs="*", metavar="KEY=VALUE")
    add("show", cmd_show, "show one stored run").add_argument("run", help="run id, path, or latest")
    add("report", cmd_report, "render the HTML report of a run, or a comparison of several runs",
        "arguments: RUN [RUN ...] [out=FILE] [junit=FILE (one run: its verdicts as JUnit XML)]"
        ).add_argument("runs", nargs="+", metavar="RUN")
    add("export", cmd_export, "export a run's verdicts and headline metrics as Prometheus text",
        "arguments: RUN prom=FILE [push=URL]\n\n"
        "prom=FILE for node_exporter's textfile collector (--collector.textfile.directory, *.prom);\n"
        "push=URL to a Pushgateway (http://host:9091), grouped by suite"
        ).add_argument("args", nargs="+", metavar="RUN|KEY=VALUE")
    add("compare", cmd_compare, "compare runs side by side (the first is the baseline): medians, 95%% CIs, "
        "ratios with 95%% intervals, plain verdicts",
        "arguments: RUN_A RUN_B [RUN ...] [out=FILE] [format=html|json|md|csv] [equivalence=2%%]\n\n"
        "Welch t-test on log values per cell and size band, 'different' where the Benjamini-Hochberg\n"
        "q < 0.05 over all cells (a comparison tests many at once); differences within equivalence=\n"
        "(default 2%%) are 'equivalent'; too few repetitions say 'not enough repetitions to decide'.\n\n"
        "example:\n  bench compare 20261130-nic-a 20261130-nic-b out=vendor-a-vs-b.html"
        ).add_argument("runs", nargs="+", metavar="RUN")
    p = add("parse", cmd_parse, "parse a saved tool or command output and print its records as JSON",
            "exit 3 when the output is of a form the parser knows but cannot read (the line is named), or\n"
            "when a non-empty file gives nothing; `bench parse --list` names each parser and what it reads")
    p.add_argument("tool", nargs="?", help="parser name (iperf3, perftest, nccl-tests, lspci, ...)")
    p.add_argument("file", nargs="?", help="file to parse, or - for standard input")
    p.add_argument("--list", action="store_true", help="name every parser with the commands and versions it reads")
    add("health", cmd_health, "judge two pasted counter snapshots (before, after) as a run judges a step",
        "arguments: BEFORE AFTER seconds=N [speed_gbps=G] [suite=acceptance] [test=NAME] [LIMIT=VALUE ...]\n"
        "       or: PASTE [seconds=N] ... (one paste holding the same counters twice; seconds from its\n"
        "       'sleep N' between the runs when it has one)\n\n"
        "Each file may hold ethtool -S, rdma statistic show, perfquery, a hw_counters listing, netstat -s\n"
        "or nstat, or sysfs grep lines. Limits: the suite's health: block (default acceptance), LIMIT=VALUE\n"
        "over it (pause_share=5%% retrans_per_mpkt=100 ...). Exit 1 when a verdict fails, 3 when a file\n"
        "cannot be read.\n\nexample:\n  bench health before.txt after.txt seconds=60 speed_gbps=400"
        ).add_argument("args", nargs="*", metavar="FILE|KEY=VALUE")
    add("doctor", cmd_doctor, "probe hosts and run the preflight checks: PCIe, NUMA, MTU, link, tools, "
        "governor, temperatures, GPU-NIC topology",
        "arguments: hosts=INVENTORY [limit=PATTERN] [out=FILE.json] [ping=true]\n"
        "  [facts=FILE.json] [golden=TAG] [save_golden=TAG] [max_connections=N]\n\n"
        "ping=true only connects (like ansible all -m ping) and says per host how it was reached\n"
        "max_connections=N hosts are connected to and probed at once (default 32, at most 1024)\n"
        "Hosts that differ from the majority of their role (inventory var role) and NIC model in\n"
        "firmware, driver, MTU, PCIe link, NUMA node, PFC/ECN, GID index or tool versions are listed;\n"
        "golden=TAG holds them to a stored reference instead (a difference then fails), save_golden=TAG\n"
        "stores the majority in the catalog; facts=FILE judges stored facts (out= JSON) without probing\n"
        "exit code 1 when a check fails (warnings do not fail)").add_argument("args", nargs="*", metavar="KEY=VALUE")
    add("provision", cmd_provision, "install the benchmark tools on the hosts with Ansible (ansible/site.yml)",
        "arguments: hosts=INVENTORY [limit=PATTERN] [tags=bench_tools,nccl_tests,rccl_tests,soft_roce] "
        "[check=true] [vars=k=v,k2=v2]\n\nSafe to run again: a second run changes nothing."
        ).add_argument("args", nargs="*", metavar="KEY=VALUE")
    p = add("lab", cmd_lab, "manage the loopback lab: network namespaces with real sshd (needs root)",
            "arguments:\n  up hosts=N [name=lab] [rails=R] [shape=h2:2gbit,h3.rail1:1gbit] [rdma=rxe] [jump=true]\n  status [name=lab]\n  down [name=lab]\n\n"
            "`bench lab up` prints the inventory path as its last line.")
    p.add_argument("action", choices=("up", "status", "down"))
    p.add_argument("args", nargs="*", metavar="KEY=VALUE")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `bench` console script."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    if not getattr(ns, "func", None):
        parser.print_help()
        return EXIT_USAGE
    os.umask(os.umask(0o022) | 0o022)  # results are never group- or world-writable
    try:
        return int(ns.func(ns))
    except BenchError as exc:
        print(f"bench: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
