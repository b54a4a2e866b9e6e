"""The columnar copy of a run's samples: ``samples.parquet``, derived from ``samples.jsonl``.

``samples.jsonl`` stays the record: appended after every step, so a run that dies keeps every
finished step's samples. ``samples.parquet`` is built from it when a run ends, and rebuilt on
demand (``ensure``) when it is missing or its source changed since, so runs stored before it
existed, and runs cut short, read the same way. It can always be deleted.

Why Parquet (pyarrow): columns are typed and stored apart, so a reader decodes only the columns
it asks for (projection); rows are grouped by ``(kind, test)`` into row groups whose statistics
let a filter on ``kind`` or ``test`` skip the others unread (pushdown); and Arrow columns become
pandas columns without a per-row Python object (numeric ones without a copy).

Values as the frames see them: list labels (``hosts``) are stored comma-joined, dict values as
sorted JSON (``analysis.frames`` joined them the same way when it read the JSON lines); a column
whose values mix types (numbers in one row, text in another) is stored as JSON text and decoded
on reading. A row without ``kind`` is a ``summary`` row.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchharness.results.store import RunDir, json_loader

if TYPE_CHECKING:
    import pyarrow as pa

NAME = "samples.parquet"
SOURCE = "samples.jsonl"
BLOCK_BYTES = 32 << 20
ROW_GROUP = 131_072
META_KEY = b"benchharness"
FORMAT = 1
Filter = tuple[str, str, Any]


def available() -> bool:
    """Whether pyarrow can be imported (without it, readers fall back to the JSON lines)."""
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


def path_of(run: RunDir) -> Path:
    return run.path / NAME


def _source_stamp(run: RunDir) -> dict[str, int]:
    try:
        st = (run.path / SOURCE).stat()
    except FileNotFoundError:
        return {"size": 0, "mtime_ns": 0}
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def meta(run: RunDir) -> dict[str, Any] | None:
    """What the columnar file records about itself (source size and mtime, JSON columns), or None."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path_of(run))
    except (OSError, ValueError):
        return None
    raw = (schema.metadata or {}).get(META_KEY)
    try:
        data = json.loads(raw) if raw else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def is_fresh(run: RunDir) -> bool:
    """True when the columnar file exists and was built from ``samples.jsonl`` as it is now."""
    m = meta(run)
    return bool(m) and m.get("format") == FORMAT and m.get("source") == _source_stamp(run)  # type: ignore[union-attr]


# -- building ----------------------------------------------------------------------------------
def _blocks(path: Path) -> Iterator[bytes]:
    """The file's bytes, BLOCK_BYTES at a time, each ending at a line's end."""
    with open(path, "rb") as fh:
        while True:
            block = fh.read(BLOCK_BYTES)
            if not block:
                return
            yield block + fh.readline()


def _records(block: bytes) -> list[dict[str, Any]]:
    """Records of the JSON lines of a block; a cut or bad line is skipped."""
    loads: Callable[[bytes], Any] = json_loader()  # type: ignore[assignment]  # both take bytes
    out = []
    for line in block.splitlines():
        if not line.strip():
            continue
        try:
            rec = loads(line)
        except ValueError:  # a line cut by a crash or a full disk: the rest is still good
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _fast_table(block: bytes) -> pa.Table | None:
    """The block read by Arrow's JSON reader (C++, threaded), list labels joined; None when it
    cannot (a cut line, values of mixed types, nested objects): then the lines are read one by one."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    read = pj.ReadOptions(block_size=len(block) + 1)
    try:
        table = pj.read_json(pa.BufferReader(block), read_options=read)
        # Arrow takes ISO-8601-looking text for timestamps; the samples' text stays text
        dated = [f.name for f in table.schema if pa.types.is_temporal(f.type)]
        if dated:
            parse = pj.ParseOptions(explicit_schema=pa.schema([(n, pa.string()) for n in dated]),
                                    unexpected_field_behavior="infer")
            table = pj.read_json(pa.BufferReader(block), read_options=read, parse_options=parse)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    for i, field in enumerate(table.schema):
        if pa.types.is_struct(field.type) or pa.types.is_map(field.type):
            return None
        if pa.types.is_list(field.type) or pa.types.is_large_list(field.type):
            inner = field.type.value_type
            if not (pa.types.is_string(inner) or pa.types.is_integer(inner) or pa.types.is_null(inner)):
                return None  # floats and booleans would not print as Python prints them
            col = table.column(i)
            if not pa.types.is_string(inner):
                col = col.cast(pa.list_(pa.string()))
            table = table.set_column(i, field.name, pc.binary_join(col, ","))
    return table


def _split(table: pa.Table) -> list[pa.Table]:
    """A block's rows split by (kind, test), in the order each pair first appears; a row
    without ``kind`` is a summary row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    n = table.num_rows
    kind = table.column("kind") if "kind" in table.column_names else pa.nulls(n, pa.string())
    kind = pc.fill_null(kind.cast(pa.string()), "summary")
    if "kind" in table.column_names:
        table = table.set_column(table.column_names.index("kind"), "kind", kind)
    else:
        table = table.append_column("kind", kind)
    test = table.column("test") if "test" in table.column_names else pa.nulls(n, pa.string())
    test = pc.fill_null(test.cast(pa.string()), "\x00")
    key = pc.binary_join_element_wise(kind, test, "\x01")
    keys = pc.unique(key)
    if len(keys) == 1:
        return [table]
    return [table.filter(pc.equal(key, k)) for k in keys]


def flat_label(value: Any) -> Any:
    """A list or dict label as text a column can group by (lists comma-joined, dicts as sorted
    JSON); other values as they are. The JSON-lines loader flattens the same way."""
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return value


def _column(values: list[Any]) -> tuple[pa.Array, bool]:
    """One column as an Arrow array; True when it had to be stored as JSON text (mixed types)."""
    import pyarrow as pa

    try:
        arr = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        arr = None
    if arr is not None and (pa.types.is_nested(arr.type) or pa.types.is_struct(arr.type)):
        joined = [flat_label(v) for v in values]
        try:
            arr = pa.array(joined)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            arr = None
        values = joined
    if arr is None:
        return pa.array([None if v is None else json.dumps(flat_label(v), default=str) for v in values],
                        pa.string()), True
    return arr, False


def _table(records: list[dict[str, Any]]) -> tuple[pa.Table, set[str]]:
    import pyarrow as pa

    keys: dict[str, None] = {}
    for rec in records:
        keys.update(dict.fromkeys(rec))
    arrays, names, mixed = [], [], set()
    for key in keys:
        arr, is_json = _column([rec.get(key) for rec in records])
        arrays.append(arr)
        names.append(str(key))
        if is_json:
            mixed.add(str(key))
    return pa.Table.from_arrays(arrays, names=names), mixed


def _groups(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Records split by (kind, test), in the order each pair first appears."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for rec in records:
        kind = rec.get("kind")
        if kind is None:
            rec["kind"] = kind = "summary"
        out.setdefault((str(kind), str(rec.get("test"))), []).append(rec)
    return list(out.values())


def _final_type(types: set[pa.DataType]) -> pa.DataType | None:
    """The type that holds every part's values, or None when they need JSON text."""
    import pyarrow as pa

    real = {t for t in types if not pa.types.is_null(t)}
    if not real:
        return pa.null()
    if len(real) == 1:
        return real.pop()
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in real):
        return pa.float64()
    if all(pa.types.is_string(t) or pa.types.is_large_string(t) for t in real):
        return pa.string()
    return None


def _as_json(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    import pyarrow as pa

    return pa.array([None if v is None else json.dumps(v) for v in col.to_pylist()], pa.string())


def build(run: RunDir) -> Path:
    """Write ``samples.parquet`` from ``samples.jsonl`` (atomically); its path.

    One pass over the lines, BLOCK_BYTES at a time, into Arrow parts on disk (so memory stays
    bounded for any size), then one Parquet file with the union of the parts' columns.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    stamp = _source_stamp(run)  # before reading: a line appended meanwhile makes the copy stale
    target = path_of(run)
    work = run.path / f".{NAME}.parts-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        parts: list[tuple[Path, set[str]]] = []
        types: dict[str, set[pa.DataType]] = {}
        mixed: set[str] = set()
        for block in _blocks(run.path / SOURCE):
            fast = _fast_table(block)
            if fast is not None:
                tables = [(t, set[str]()) for t in _split(fast)]
            else:
                tables = [_table(group) for group in _groups(_records(block))]
            del block, fast
            for table, json_cols in tables:
                mixed |= json_cols
                for field in table.schema:
                    types.setdefault(field.name, set()).add(field.type)
                part = work / f"{len(parts):06d}.arrow"
                with pa.OSFile(str(part), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                    writer.write_table(table)
                parts.append((part, json_cols))
        fields = []
        for name, seen in types.items():
            final = None if name in mixed else _final_type(seen)
            if final is None:
                mixed.add(name)
                final = pa.string()
            fields.append(pa.field(name, final))
        if "kind" not in types:
            fields.append(pa.field("kind", pa.string()))
        info = {"format": FORMAT, "source": stamp, "json_columns": sorted(mixed)}
        schema = pa.schema(fields, metadata={META_KEY: json.dumps(info).encode()})
        tmp = run.path / f".{NAME}.tmp-{os.getpid()}"
        with pq.ParquetWriter(str(tmp), schema, compression="zstd") as writer:
            for part, part_json in parts:
                with pa.memory_map(str(part)) as src:
                    table = pa.ipc.open_file(src).read_all()
                writer.write_table(_conform(table, schema, mixed - part_json), row_group_size=ROW_GROUP)
                part.unlink()
        os.replace(tmp, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        with contextlib.suppress(NameError, OSError):
            tmp.unlink()
    return target


def _conform(table: pa.Table, schema: pa.Schema, to_json: set[str]) -> pa.Table:
    """One part in the file's schema: missing columns as nulls, types widened, and the columns
    ``to_json`` (mixed in the file, plain in this part) written as JSON text."""
    import pyarrow as pa

    columns = []
    for field in schema:
        if field.name not in table.column_names:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        col = table.column(field.name)
        if field.name in to_json:
            col = _as_json(col)
        elif not col.type.equals(field.type):
            col = col.cast(field.type)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema)


def ensure(run: RunDir) -> Path | None:
    """The columnar file of a run, built or rebuilt when missing or stale; None when it cannot be
    (pyarrow missing, no samples, or the run directory not writable)."""
    if not available() or not (run.path / SOURCE).exists():
        return None
    if is_fresh(run):
        return path_of(run)
    try:
        return build(run)
    except OSError:
        return None


# -- reading -----------------------------------------------------------------------------------
def columns(run: RunDir) -> list[str]:
    """Column names of the columnar file (which must exist)."""
    import pyarrow.parquet as pq

    return list(pq.read_schema(path_of(run)).names)


def read(run: RunDir, columns: Sequence[str] | None = None,
         filters: Sequence[Filter] | None = None, row_groups: Sequence[int] | None = None) -> pa.Table:
    """Rows and columns of the columnar file: ``columns`` (those present; None: all) of the rows
    matching every ``(column, op, value)`` filter (ops as pyarrow's: ``=``, ``!=``, ``in``, ...).
    Row groups whose statistics rule a filter out are skipped unread; ``row_groups`` reads only
    those. Builds the file if needed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = ensure(run)
    if path is None:
        raise FileNotFoundError(f"{run.path / NAME}: cannot be built (pyarrow missing or no samples)")
    schema = pq.read_schema(path)
    names = schema.names
    wanted = [c for c in (columns if columns is not None else names) if c in names]
    import pyarrow.types as pat

    if any(f[0] not in names or (pat.is_null(schema.field(f[0]).type) and f[1] in ("=", "==", "in"))
           or (f[1] == "in" and not list(f[2])) for f in filters or ()):  # nothing can match
        return pa.table({c: pa.array([], schema.field(c).type) for c in wanted})
    if row_groups is not None:  # only these row groups, then the filters on their rows
        table = pq.ParquetFile(path).read_row_groups(list(row_groups), columns=wanted)
        if filters:
            table = table.filter(pq.filters_to_expression(list(filters)))
    else:
        table = pq.read_table(path, columns=wanted, filters=list(filters) if filters else None,
                              schema=schema)
    raw = (schema.metadata or {}).get(META_KEY)
    mixed = set(json.loads(raw).get("json_columns", [])) if raw else set()
    for name in mixed & set(table.column_names):  # marked, so that to_pandas decodes them
        i = table.column_names.index(name)
        table = table.set_column(i, pa.field(name, pa.string(), metadata={b"json": b"1"}), table.column(i))
    return table


def release_memory() -> None:
    """Give Arrow's freed buffers back to the system (between the tests of a large report)."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def _groups_of(path: Path) -> list[tuple[int, str | None, str | None, int, frozenset[str]]]:
    """Per row group: (index, kind, test, rows, columns with a value), from the file's footer.
    ``kind`` / ``test`` are None where a row group holds several (then it is never skipped)."""
    import pyarrow.parquet as pq

    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if _FOOTERS.get("key") == key:
        return _FOOTERS["groups"]
    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(i).path for i in range(meta.num_columns)]
    out = []
    for g in range(meta.num_row_groups):
        rg = meta.row_group(g)
        one: dict[str, str | None] = {"kind": None, "test": None}
        present = set()
        for i, name in enumerate(names):
            stats = rg.column(i).statistics
            if stats is None or not stats.has_null_count or stats.null_count < rg.num_rows:
                present.add(name)
            if name in one and stats is not None and stats.has_min_max and stats.min == stats.max \
                    and stats.null_count == 0:
                one[name] = stats.min if isinstance(stats.min, str) else str(stats.min)
        out.append((g, one["kind"], one["test"], rg.num_rows, frozenset(present)))
    _FOOTERS.update(key=key, groups=out)
    return out


_FOOTERS: dict[str, Any] = {}


def present_columns(run: RunDir, kinds: Sequence[str], tests: Sequence[str] | None) -> list[str] | None:
    """Columns that hold a value in some row of ``kinds`` (and ``tests``), told by the row groups'
    statistics alone, in the file's order; None when the statistics cannot tell."""
    path = ensure(run)
    if path is None:
        return None
    found: set[str] = set()
    for _g, kind, test, _n, present in _groups_of(path):
        if kind is None or ("test" in present and test is None and tests is not None):
            return None
        if kind in kinds and (tests is None or test in tests or "test" not in present):
            found |= present
    return [c for c in columns(run) if c in found]


def first_steps(run: RunDir, kind: str, tests: Sequence[str] | None,
                per_test: int) -> tuple[dict[str | None, list[str]], list[int] | None]:
    """The first ``per_test`` distinct steps (in run order) of each test's ``kind`` rows, and the
    row groups that hold their rows (None: any), reading only the ``step`` column of each test's
    first row groups. A step's rows are contiguous (the runner appends them at once)."""
    import pyarrow.parquet as pq

    path = ensure(run)
    if path is None:
        return {}, None
    seen: dict[str | None, list[str]] = {}
    groups = _groups_of(path)
    if any(k is None for _g, k, _t, _n, _p in groups):  # no per-group kind: read the columns
        table = read(run, ["test", "step"], [("kind", "=", kind)])
        cols = [table.column(c).to_pylist() if c in table.column_names else [None] * table.num_rows
                for c in ("test", "step")]
        for test, step in zip(*cols, strict=True):
            _add(seen, test, step, tests, per_test)
        return seen, None
    pf = pq.ParquetFile(path)
    used: list[int] = []
    done: set[str | None] = set()
    for g, k, test, _n, present in groups:
        if k != kind or "step" not in present or test in done or (tests is not None and test not in tests):
            continue
        mine = seen.setdefault(test, [])
        full = len(mine) >= per_test
        steps = dict.fromkeys(pf.read_row_group(g, columns=["step"]).column("step").to_pylist())
        if full and not any(st in mine for st in steps):
            done.add(test)  # past the chosen steps' rows
            continue
        for step in steps:
            _add(seen, test, step, tests, per_test)
        if any(st in mine for st in steps):
            used.append(g)
    return seen, used


def _add(seen: dict[str | None, list[str]], test: Any, step: Any, tests: Sequence[str] | None,
         per_test: int) -> None:
    if step is None or (tests is not None and test not in tests):
        return
    mine = seen.setdefault(test, [])
    if len(mine) < per_test and step not in mine:
        mine.append(step)


def to_pandas(table: pa.Table) -> Any:
    """A DataFrame of a table from ``read``: JSON-text (mixed) columns decoded to Python values."""
    marked = [field for field in table.schema if (field.metadata or {}).get(b"json")]
    # each column's Arrow buffers freed as soon as it is converted: the table is not used again
    df = table.to_pandas(split_blocks=True, self_destruct=True)
    del table
    for field in marked:
        cache: dict[str, Any] = {}
        df[field.name] = df[field.name].astype(object).map(
            lambda v, c=cache: c.setdefault(v, json.loads(v)) if isinstance(v, str) else None)
    return df
