"""History catalog: every run registered in SQLite beside the run directories.

``<results root>/catalog.sqlite`` indexes the run directories in that folder: suite, hosts, NIC
models, serial numbers and firmware (telemetry facts first, inventory vars as fallback), the
verdict, tags, and one value per (test, metric, case, host) for history and regression checks.

The run directories stay the product: tags are also written to each run's ``run.json``, so a
deleted catalog is rebuilt from them (``Catalog.sync`` registers every run directory that is
missing or changed since it was registered).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sqlite3
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchharness.core.errors import BenchError, UsageError
from benchharness.core.metrics import higher_is_better, is_metric_name
from benchharness.results import measures, runview
from benchharness.results.nics import host_nics
from benchharness.results.store import RunDir, results_root

CATALOG_NAME = "catalog.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs(run_id TEXT PRIMARY KEY, dir TEXT, suite TEXT, started TEXT,
  started_ts REAL, ended TEXT, state TEXT, exit_code INTEGER, verdict TEXT, failed_checks INTEGER,
  hosts TEXT, nic_models TEXT, inventory TEXT, baseline TEXT, mtime REAL);
CREATE TABLE IF NOT EXISTS run_hosts(run_id TEXT, host TEXT, nic_model TEXT, nic_serial TEXT,
  nic_firmware TEXT, verdict TEXT, PRIMARY KEY(run_id, host));
CREATE TABLE IF NOT EXISTS tags(run_id TEXT, tag TEXT, created REAL, PRIMARY KEY(run_id, tag));
CREATE TABLE IF NOT EXISTS measures(run_id TEXT, test TEXT, metric TEXT, case_text TEXT,
  size_bytes INTEGER, host TEXT, value REAL, n INTEGER);
CREATE INDEX IF NOT EXISTS measures_metric ON measures(metric, test, case_text);
CREATE INDEX IF NOT EXISTS measures_run ON measures(run_id);
CREATE TABLE IF NOT EXISTS points(run_id TEXT, test TEXT, metric TEXT, case_text TEXT,
  size_bytes INTEGER, nic_model TEXT, value REAL, hosts INTEGER);
CREATE INDEX IF NOT EXISTS points_metric ON points(metric, nic_model, test);
CREATE INDEX IF NOT EXISTS points_run ON points(run_id);
"""
#: Tables holding rows per run (deleted and rewritten when a run is registered again).
RUN_TABLES = ("runs", "run_hosts", "measures", "tags", "points")
#: Baseline references that are not tags.
LATEST_PASS, LATEST = "latest-pass", "latest"


@dataclass(frozen=True)
class Point:
    """One night of a metric's history: the median over the matching hosts of one run (each
    host's value is its best pair; see ``measures.host_values``)."""

    run_id: str
    started: str
    started_ts: float
    test: str
    case: str
    value: float
    hosts: int


def _epoch(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    try:
        return dt.datetime.fromisoformat(str(value)).timestamp()
    except (TypeError, ValueError):
        return 0.0


def _text(value: Any) -> str:
    return str(value).strip() if isinstance(value, str | int | float) and not isinstance(value, bool) else ""


def run_verdict(info: Mapping[str, Any]) -> str:
    """``pass`` | ``fail`` (a check failed) | ``error`` (steps could not run) | ``interrupted`` | state."""
    state = str(info.get("state") or "unknown")
    verdicts = [v for v in info.get("verdicts") or [] if isinstance(v, Mapping)]
    if state == "interrupted":
        return "interrupted"
    if state == "partial" or info.get("exit_code") == 3:
        return "error"
    if any(v.get("status") == "fail" for v in verdicts) or info.get("exit_code") == 1:
        return "fail"
    return "pass" if state == "complete" else state


def host_verdicts(info: Mapping[str, Any]) -> dict[str, str]:
    """Host -> its ``acceptance`` roll-up status from the run's verdicts (when there are any)."""
    out: dict[str, str] = {}
    for v in info.get("verdicts") or []:
        if isinstance(v, Mapping) and v.get("check") == "acceptance" and v.get("host"):
            out[str(v["host"])] = str(v.get("status"))
    return out


def measure_rows(run: RunDir, info: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """``(test, metric, case, size_bytes, host, value, n)`` for every metric of every test."""
    records = run.summary_samples()
    suite = info.get("suite") if isinstance(info.get("suite"), Mapping) else {}
    tests = {str(t.get("name")): t for t in (suite or {}).get("tests") or [] if isinstance(t, Mapping)}
    rows: list[tuple[Any, ...]] = []
    for name in dict.fromkeys(str(r.get("test")) for r in records if r.get("test")):
        mine = measures.test_records(records, name)
        keys = measures.swept_keys(tests.get(name, {}))
        metrics = sorted({k for r in mine for k, v in r.items() if is_metric_name(k)
                          and not k.endswith("_tool") and isinstance(v, int | float) and not isinstance(v, bool)})
        for metric in metrics:
            found = measures.units(mine, metric, keys)
            for case, host, value, n in measures.host_values(found, higher_is_better(metric)):
                size = dict(case).get("size_bytes")
                rows.append((name, metric, measures.case_text(case),
                             int(size) if isinstance(size, int | float) else None, host, value, n))
    return rows


class Catalog:
    """The SQLite catalog of the run directories under ``root``."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else results_root()
        self.path = self.root / CATALOG_NAME

    @contextlib.contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A connection inside one transaction (committed on success, rolled back on error)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30)
        except (OSError, sqlite3.Error) as exc:
            raise BenchError(f"cannot open the history catalog {self.path}: {exc}") from exc
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA synchronous=NORMAL")  # an index: rebuilt from the run dirs if lost
            conn.executescript(SCHEMA)
            with conn:
                yield conn
        except sqlite3.DatabaseError as exc:
            raise BenchError(f"history catalog {self.path}: {exc} (delete it; it is rebuilt from the "
                             f"run directories)") from exc
        finally:
            conn.close()

    # -- writing -------------------------------------------------------------------------------
    def register(self, run: RunDir, info: Mapping[str, Any] | None = None) -> None:
        """Add or replace one run (its row, hosts, tags from run.json, and measures)."""
        info = info if info is not None else run.run_info()
        run_id = str(info.get("run_id") or run.path.name)
        suite = info.get("suite") if isinstance(info.get("suite"), Mapping) else {"name": info.get("suite")}
        nics = host_nics(info, runview.read_facts(run))
        per_host = host_verdicts(info)
        failed = sum(1 for v in info.get("verdicts") or [] if isinstance(v, Mapping) and v.get("status") == "fail")
        models = sorted({n.model for n in nics.values() if n.model})
        rows = measure_rows(run, info)
        try:
            mtime = (run.path / "run.json").stat().st_mtime
        except OSError:
            mtime = time.time()
        baseline = info.get("baseline_run") or ""
        with self.connect() as conn:
            for table in RUN_TABLES:
                conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))  # noqa: S608 - fixed names
            conn.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", (
                run_id, run.path.name if run.path.parent.resolve() == self.root.resolve() else str(run.path),
                str((suite or {}).get("name") or ""), _text(info.get("started")), _epoch(info.get("started")),
                _text(info.get("ended")), str(info.get("state") or ""), info.get("exit_code"),
                run_verdict(info), failed, ",".join(runview.run_host_names(info)), ",".join(models),
                str(info.get("inventory_source") or ""), str(baseline), mtime))
            conn.executemany("INSERT INTO run_hosts VALUES (?,?,?,?,?,?)", [
                (run_id, h, n.model, n.serial, n.firmware, per_host.get(h, "")) for h, n in nics.items()])
            # When each tag was set (run.json "tagged"): the run tagged last wins a tag lookup.
            tagged = info.get("tagged")
            tagged = tagged if isinstance(tagged, Mapping) else {}
            conn.executemany("INSERT OR IGNORE INTO tags VALUES (?,?,?)", [
                (run_id, str(t), _epoch(tagged.get(str(t))) or mtime) for t in info.get("tags") or [] if _text(t)])
            conn.executemany("INSERT INTO measures VALUES (?,?,?,?,?,?,?,?)",
                             [(run_id, *row) for row in rows])
            _fill_points(conn, run_id)

    def sync(self) -> int:
        """Register run directories under the root that are missing or changed; drop vanished ones.

        Returns how many were (re)registered. Unreadable run directories are skipped.
        """
        on_disk: dict[str, tuple[Path, float]] = {}
        for path in self.root.glob("*/run.json") if self.root.is_dir() else []:
            with contextlib.suppress(OSError):
                on_disk[path.parent.name] = (path.parent, path.stat().st_mtime)
        with self.connect() as conn:
            known = {r["dir"]: (r["run_id"], r["mtime"]) for r in conn.execute("SELECT dir, run_id, mtime FROM runs")}
            gone = [run_id for d, (run_id, _) in known.items() if "/" not in d and d not in on_disk]
            for run_id in gone:
                for table in RUN_TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (run_id,))  # noqa: S608
            # runs registered before the points table: their points from their measures
            for (run_id,) in conn.execute("SELECT run_id FROM runs WHERE run_id NOT IN "
                                          "(SELECT DISTINCT run_id FROM points)").fetchall():
                _fill_points(conn, run_id)
        count = 0
        for name, (path, mtime) in sorted(on_disk.items()):
            if name in known and known[name][1] == mtime:
                continue
            try:
                self.register(RunDir(path))
                count += 1
            except (BenchError, ValueError, OSError):
                continue
        return count

    def tag(self, ref: str, tags: Sequence[str], remove: bool = False) -> tuple[str, list[str]]:
        """Add (or remove) tags of a run, in run.json and the catalog; returns (run id, its tags)."""
        from benchharness.results.store import find_run

        run = find_run(ref, self.root)
        info = run.run_info()
        current = [str(t) for t in info.get("tags") or []]
        for tag in tags:
            if not tag or tag in (LATEST, LATEST_PASS) or not all(c.isalnum() or c in "-_." for c in tag):
                raise UsageError(f"bad tag {tag!r}: use letters, digits, - _ . (not latest or latest-pass)")
            if remove and tag in current:
                current.remove(tag)
            elif not remove and tag not in current:
                current.append(tag)
        if current == [str(t) for t in info.get("tags") or []]:
            return str(info.get("run_id") or run.path.name), current
        tagged = dict(info.get("tagged") or {})
        for tag in tags:
            if remove:
                tagged.pop(tag, None)
            elif tag not in tagged:
                tagged[tag] = time.time()
        info["tags"], info["tagged"] = current, tagged
        info.pop("schema_version", None)
        run.write_run_info(info)
        self.register(run, run.run_info())
        return str(info.get("run_id") or run.path.name), current

    # -- reading -------------------------------------------------------------------------------
    def runs(self, *, suite: str | None = None, nic: str | None = None, host: str | None = None,
             verdict: str | None = None, tag: str | None = None, since: str | None = None,
             last: int | None = None) -> list[dict[str, Any]]:
        """Registered runs, oldest first, filtered: ``nic`` matches a NIC model, serial or firmware."""
        where: list[str] = ["1=1"]
        args: list[Any] = []
        if suite:
            where.append("r.suite = ?")
            args.append(suite)
        if verdict:
            where.append("r.verdict = ?")
            args.append(verdict)
        if since:
            where.append("r.started_ts >= ?")
            args.append(_epoch(since))
        if nic:
            where.append("r.run_id IN (SELECT run_id FROM run_hosts WHERE nic_model = ? OR nic_serial = ? "
                         "OR nic_firmware = ?)")
            args += [nic, nic, nic]
        if host:
            where.append("r.run_id IN (SELECT run_id FROM run_hosts WHERE host = ?)")
            args.append(host)
        if tag:
            where.append("r.run_id IN (SELECT run_id FROM tags WHERE tag = ?)")
            args.append(tag)
        tags_of = "(SELECT group_concat(tag, ',') FROM tags t WHERE t.run_id = r.run_id) AS tags"
        clause = " AND ".join(where)  # fixed fragments; every value is a parameter
        sql = f"SELECT r.*, {tags_of} FROM runs r WHERE {clause} ORDER BY r.started_ts, r.run_id"  # noqa: S608
        with self.connect() as conn:
            rows = [dict(r) for r in conn.execute(sql, args)]
        return rows[-last:] if last else rows

    def run_hosts(self, run_id: str) -> list[dict[str, Any]]:
        """Hosts of one run with their NIC model, serial, firmware and verdict."""
        with self.connect() as conn:
            return [dict(r) for r in conn.execute("SELECT * FROM run_hosts WHERE run_id = ? ORDER BY host",
                                                  (run_id,))]

    def nic_groups(self, by: str = "model", nic: str | None = None) -> list[str]:
        """Distinct NIC models (``by="model"``), serials or firmware versions, optionally of the
        hosts whose model, serial or firmware is ``nic``."""
        column = {"model": "nic_model", "serial": "nic_serial", "firmware": "nic_firmware"}.get(by)
        if column is None:
            raise UsageError(f"by={by}: use model, serial or firmware")
        sql = f"SELECT DISTINCT {column} AS v FROM run_hosts WHERE {column} != ''"  # noqa: S608 - fixed names
        args: list[str] = []
        if nic:
            sql += " AND ? IN (nic_model, nic_serial, nic_firmware)"
            args.append(nic)
        with self.connect() as conn:
            return sorted(str(r["v"]) for r in conn.execute(sql + " ORDER BY v", args))

    def resolve(self, ref: str, suite: str | None = None, exclude: str | None = None) -> RunDir | None:
        """A baseline run: a tag (the run tagged last; same suite preferred), ``latest-pass`` or
        ``latest`` (same suite, other than ``exclude``), or a run id or path. None when nothing
        matches."""
        from benchharness.results.store import find_run

        if ref in (LATEST, LATEST_PASS):
            rows = [r for r in self.runs(suite=suite, verdict="pass" if ref == LATEST_PASS else None)
                    if r["run_id"] != exclude and r["state"] in ("complete", "partial")]
            return self._dir(rows[-1]) if rows else None
        with self.connect() as conn:
            tagged = [dict(r) for r in conn.execute(
                "SELECT r.*, t.created FROM runs r JOIN tags t ON t.run_id = r.run_id WHERE t.tag = ? "
                "ORDER BY t.created, r.started_ts", (ref,))]
        tagged = [r for r in tagged if r["run_id"] != exclude]
        if tagged:
            same = [r for r in tagged if not suite or r["suite"] == suite]
            return self._dir((same or tagged)[-1])
        try:
            return find_run(ref, self.root)
        except UsageError:
            return None

    def _dir(self, row: Mapping[str, Any]) -> RunDir:
        d = Path(row["dir"])
        return RunDir(d if d.is_absolute() else self.root / d)

    def series(self, metric: str, *, suite: str | None = None, test: str | None = None,
               case: str | None = None, size: int | None = None, nic: str | None = None,
               host: str | None = None, exclude: str | None = None,
               states: Sequence[str] = ("complete", "partial")) -> list[Point]:
        """A metric over runs: one Point per (run, test, case), the median over the hosts that
        match ``nic`` (model, serial or firmware) and ``host``; group values (collectives) count
        when the run has a matching NIC. Oldest first."""
        if host is None and self._by_model(nic):
            return self._points(metric, suite=suite, test=test, case=case, size=size, nic=nic,
                                exclude=exclude, states=states)
        where, args = _series_filters("m", ["m.metric = ?"], [metric], suite=suite, test=test,
                                      case=case, size=size, exclude=exclude, states=states)
        if host:
            where.append("m.host = ?")
            args.append(host)
        if nic:
            where.append("(EXISTS (SELECT 1 FROM run_hosts h WHERE h.run_id = m.run_id AND h.host = m.host "
                         "AND ? IN (h.nic_model, h.nic_serial, h.nic_firmware)) OR (m.host = '' AND EXISTS "
                         "(SELECT 1 FROM run_hosts h WHERE h.run_id = m.run_id "
                         "AND ? IN (h.nic_model, h.nic_serial, h.nic_firmware))))")
            args += [nic, nic]
        columns = "m.run_id, r.started, r.started_ts, m.test, m.case_text, m.size_bytes, m.host, m.value"
        clause = " AND ".join(where)  # fixed fragments; every value is a parameter
        sql = f"SELECT {columns} FROM measures m JOIN runs r ON r.run_id = m.run_id WHERE {clause}"  # noqa: S608
        groups: dict[tuple[str, str, str], list[Any]] = {}
        with self.connect() as conn:
            for r in conn.execute(sql, args):
                key = (r["run_id"], r["test"], r["case_text"])
                entry = groups.setdefault(key, [r["started"], r["started_ts"], r["size_bytes"], []])
                entry[3].append(r["value"])
        points = [Point(run_id, started, ts or 0.0, test, case_text, statistics.median(values), len(values))
                  for (run_id, test, case_text), (started, ts, _size, values) in groups.items()]
        points.sort(key=lambda p: (p.test, _size_of(p.case), p.case, p.started_ts, p.run_id))
        return points


    def _by_model(self, nic: str | None) -> bool:
        """Whether ``nic`` names only NIC models (or nothing): then the points table answers."""
        if nic is None:
            return True
        with self.connect() as conn:
            return conn.execute("SELECT 1 FROM run_hosts WHERE nic_model = ? LIMIT 1", (nic,)).fetchone() is not None \
                and conn.execute("SELECT 1 FROM run_hosts WHERE nic_serial = ? OR nic_firmware = ? LIMIT 1",
                                 (nic, nic)).fetchone() is None

    def _points(self, metric: str, *, suite: str | None, test: str | None, case: str | None,
                size: int | None, nic: str | None, exclude: str | None,
                states: Sequence[str]) -> list[Point]:
        """``series`` from the per-run points (medians stored at registration): one row per
        night and case, whatever the number of hosts."""
        where, args = _series_filters("p", ["p.metric = ?", "p.nic_model = ?"], [metric, nic or ""],
                                      suite=suite, test=test, case=case, size=size, exclude=exclude,
                                      states=states)
        clause = " AND ".join(where)  # fixed fragments; every value is a parameter
        sql = ("SELECT p.run_id, r.started, r.started_ts, p.test, p.case_text, p.value, p.hosts "  # noqa: S608
               f"FROM points p JOIN runs r ON r.run_id = p.run_id WHERE {clause}")
        with self.connect() as conn:
            points = [Point(r[0], r[1], r[2] or 0.0, r[3], r[4], r[5], r[6]) for r in conn.execute(sql, args)]
        points.sort(key=lambda p: (p.test, _size_of(p.case), p.case, p.started_ts, p.run_id))
        return points


def _fill_points(conn: sqlite3.Connection, run_id: str) -> None:
    """One run's points: per (test, metric, case) the median over all its hosts (``nic_model``
    '') and over the hosts of each NIC model; group values (no host) count for every model the
    run has, as ``Catalog.series`` counts them."""
    models = [r[0] for r in conn.execute("SELECT DISTINCT nic_model FROM run_hosts WHERE run_id = ? "
                                         "AND nic_model != ''", (run_id,))]
    groups: dict[tuple[str, str, str, Any, str], list[float]] = {}
    for test, metric, case_text, size, host, value, model in conn.execute(
            "SELECT m.test, m.metric, m.case_text, m.size_bytes, m.host, m.value, h.nic_model FROM measures m "
            "LEFT JOIN run_hosts h ON h.run_id = m.run_id AND h.host = m.host WHERE m.run_id = ?", (run_id,)):
        key = (test, metric, case_text, size)
        groups.setdefault((*key, ""), []).append(value)
        for m in (models if host == "" else [model] if model else []):
            groups.setdefault((*key, m), []).append(value)
    conn.executemany("INSERT INTO points VALUES (?,?,?,?,?,?,?,?)", [
        (run_id, test, metric, case_text, size, model, statistics.median(values), len(values))
        for (test, metric, case_text, size, model), values in groups.items()])


def _size_of(case_text: str) -> int:
    from benchharness.core.units import parse_size

    for part in case_text.split():
        if part.startswith("size="):
            with contextlib.suppress(ValueError):
                return parse_size(part[5:])
    return -1


def catalog_for(run: RunDir) -> Catalog:
    """The catalog beside a run directory (its parent folder)."""
    return Catalog(run.path.parent)


def register_run(run: RunDir, info: Mapping[str, Any] | None = None) -> Path:
    """Register a finished run in the catalog beside it (syncing other runs first); the catalog path."""
    cat = catalog_for(run)
    cat.sync()
    cat.register(run, info)
    return cat.path


def _series_filters(table: str, where: list[str], args: list[Any], *, suite: str | None,
                    test: str | None, case: str | None, size: int | None, exclude: str | None,
                    states: Sequence[str]) -> tuple[list[str], list[Any]]:
    """WHERE fragments (fixed text) and their parameters for a series over ``measures`` (``m``)
    or ``points`` (``p``) joined with ``runs`` (``r``)."""
    where, args = list(where), list(args)
    for column, value in (("r.suite", suite), (f"{table}.test", test), (f"{table}.case_text", case),
                          (f"{table}.size_bytes", size)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    if exclude:
        where.append("r.run_id != ?")
        args.append(exclude)
    if states:
        where.append(f"r.state IN ({','.join('?' * len(states))})")
        args += list(states)
    return where, args
