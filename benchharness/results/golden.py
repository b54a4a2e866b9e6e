"""Golden host configurations in the catalog: a learned majority profile stored under a tag.

``bench doctor save_golden=TAG`` stores what the probed hosts' majority holds (per role and NIC
model, ``telemetry/golden.py``); ``bench doctor golden=TAG`` holds hosts to it. The table lives
in the catalog's SQLite file beside the runs (``results/catalog.py``); saving a tag again
replaces it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from benchharness.core.errors import UsageError
from benchharness.results.catalog import Catalog
from benchharness.telemetry.golden import GoldenValue

SCHEMA = """
CREATE TABLE IF NOT EXISTS golden(tag TEXT, grp TEXT, key TEXT, value TEXT, hosts INTEGER,
  total INTEGER, created REAL, PRIMARY KEY(tag, grp, key));
"""


def save(catalog: Catalog, tag: str, golden: Mapping[str, Mapping[str, GoldenValue]]) -> int:
    """Store ``golden`` under ``tag`` (replacing what the tag held); returns the number of keys."""
    if not tag or not tag.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise UsageError(f"golden tag {tag!r}: use letters, digits, '-', '_' and '.'")
    rows = [(tag, group, key, v.value, v.hosts, v.total, time.time())
            for group, keys in golden.items() for key, v in keys.items()]
    with catalog.connect() as conn:
        conn.executescript(SCHEMA)
        conn.execute("DELETE FROM golden WHERE tag = ?", (tag,))
        conn.executemany("INSERT INTO golden VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    return len(rows)


def load(catalog: Catalog, tag: str) -> dict[str, dict[str, GoldenValue]]:
    """The profile stored under ``tag``; a UsageError naming the known tags when there is none."""
    with catalog.connect() as conn:
        conn.executescript(SCHEMA)
        rows = conn.execute("SELECT grp, key, value, hosts, total FROM golden WHERE tag = ?", (tag,)).fetchall()
        known = [r[0] for r in conn.execute("SELECT DISTINCT tag FROM golden ORDER BY tag")]
    if not rows:
        raise UsageError(f"no golden configuration tagged {tag!r} in {catalog.path}"
                         + (f" (known: {', '.join(known)})" if known else
                            "; store one with `bench doctor hosts=... save_golden=TAG`"))
    out: dict[str, dict[str, GoldenValue]] = {}
    for group, key, value, hosts, total in rows:
        out.setdefault(str(group), {})[str(key)] = GoldenValue(str(value), int(hosts), int(total))
    return out
