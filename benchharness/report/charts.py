"""Inline SVG charts drawn in Python: line charts (log2 or linear x), horizontal bars, heatmaps.

Every piece of text that reaches the SVG goes through ``markupsafe.escape``; the result is a
``Markup`` that templates insert as is. Charts read without hovering: axis labels with units, a
legend, and each series' last value written at its end; ``<title>`` elements add tooltips.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from benchharness.core.units import format_size

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948",
           "#ff9da7", "#9c755f", "#6b6b6b")
DASHES = ("", "6 3", "2 3", "8 3 2 3")
W, H = 760, 360
PAD_L, PAD_R, PAD_T, PAD_B = 64, 96, 34, 48


@dataclass
class Series:
    """One line: points (x, y) and an optional band (low, high) per point."""

    name: str
    points: list[tuple[float, float]]
    band: list[tuple[float, float]] | None = None
    tooltips: list[str] = field(default_factory=list)
    color: int | None = None  # palette index; default: position
    dash: int | None = None  # dash pattern index; default: position // len(PALETTE)


def _style(i: int, s: Series) -> tuple[str, str]:
    color = PALETTE[(s.color if s.color is not None else i) % len(PALETTE)]
    dash = DASHES[(s.dash if s.dash is not None else i // len(PALETTE)) % len(DASHES)]
    return color, dash


def fmt(value: float | None) -> str:
    """A number in at most 3-4 significant digits, without scientific notation where sane."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    v = float(value)
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 0.01:
        return f"{v:.3g}" if abs(v) < 100 else f"{v:.1f}"
    return f"{v:.2e}"


def _nice_step(span: float, target: int = 5) -> float:
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for mult in (1, 2, 2.5, 5, 10):
        if raw <= mult * mag:
            return mult * mag
    return 10 * mag


def _linear_ticks(lo: float, hi: float) -> list[float]:
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    step = _nice_step(hi - lo)
    start = math.floor(lo / step) * step
    ticks: list[float] = []
    t = start
    while len(ticks) < 20:
        ticks.append(round(t, 12))
        if t >= hi - step * 1e-9:
            break
        t += step
    return ticks


def tick(value: float) -> str:
    """Axis tick text: ``0.25``, ``50``, ``1,500``."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.6g}"


def _log2_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    every = max(1, math.ceil((b - a + 1) / 10))
    return [2.0**e for e in range(a, b + 1) if (e - a) % every == 0]


def _esc(text: object) -> str:
    return str(escape(str(text)))


def line_chart(series: Sequence[Series], *, title: str, x_label: str, y_label: str,
               log2_x: bool = False, x_format: Callable[[float], str] | None = None,
               y_zero: bool = True, note: str = "", x_ticks: Sequence[float] | None = None) -> Markup:
    """A line chart, one coloured (and, past ten, dashed) line per series. ``x_ticks``: the
    caller's own x ticks (model sizes read 1B, 10B ... better than powers of two)."""
    drawn = [s for s in series if any(_ok(x, y, log2_x) for x, y in s.points)]
    if not drawn:
        return Markup("")
    xs = [x for s in drawn for x, y in s.points if _ok(x, y, log2_x)]
    ys = [y for s in drawn for x, y in s.points if _ok(x, y, log2_x)]
    ys += [v for s in drawn for lo_hi in (s.band or []) for v in lo_hi if _finite(v)]
    x_lo, x_hi = min(xs), max(xs)
    y_lo, y_hi = (min(0.0, min(ys)) if y_zero else min(ys)), max(ys)
    if y_hi == y_lo:
        y_hi = y_lo + (abs(y_lo) or 1.0)
    if log2_x:
        x_ticks = sorted(t for t in x_ticks if t > 0) if x_ticks else _log2_ticks(x_lo, x_hi)
        x_lo, x_hi = min(x_ticks[0], x_lo), max(x_ticks[-1], x_hi)
        tx: Callable[[float], float] = math.log2
        x_format = x_format or format_size_float
    else:
        x_ticks = sorted(x_ticks) if x_ticks else _linear_ticks(x_lo, x_hi)
        x_lo, x_hi = min(x_ticks[0], x_lo), max(x_ticks[-1], x_hi)
        tx = float
        x_format = x_format or tick
    y_ticks = _linear_ticks(y_lo, y_hi)
    y_lo, y_hi = min(y_ticks[0], y_lo), max(y_ticks[-1], y_hi)
    plot_w, plot_h = W - PAD_L - PAD_R, H - PAD_T - PAD_B
    span_x = (tx(x_hi) - tx(x_lo)) or 1.0

    def px(x: float) -> float:
        return PAD_L + (tx(x) - tx(x_lo)) / span_x * plot_w

    def py(y: float) -> float:
        return PAD_T + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h

    per_row = 3 if max(len(s.name) for s in drawn) <= 30 else 2
    legend_rows = math.ceil(len(drawn) / per_row)
    height = H + 8 + 18 * legend_rows + (16 if note else 0)
    out = [f'<svg class="chart" viewBox="0 0 {W} {height}" '
           f'role="img" aria-label="{_esc(title)}">', f"<title>{_esc(title)}</title>",
           f'<text class="ct" x="{W / 2}" y="18" text-anchor="middle">{_esc(title)}</text>']
    for t in y_ticks:
        y = py(t)
        out.append(f'<line class="grid" x1="{PAD_L}" x2="{PAD_L + plot_w}" y1="{y:.1f}" y2="{y:.1f}"/>'
                   f'<text class="tick" x="{PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end">{_esc(tick(t))}</text>')
    for t in x_ticks:
        x = px(t)
        out.append(f'<line class="grid" x1="{x:.1f}" x2="{x:.1f}" y1="{PAD_T}" y2="{PAD_T + plot_h}"/>'
                   f'<text class="tick" x="{x:.1f}" y="{PAD_T + plot_h + 16}" text-anchor="middle">'
                   f"{_esc(x_format(t))}</text>")
    out.append(f'<rect class="frame" x="{PAD_L}" y="{PAD_T}" width="{plot_w}" height="{plot_h}"/>')
    out.append(f'<text class="axis" x="{PAD_L + plot_w / 2}" y="{PAD_T + plot_h + 36}" '
               f'text-anchor="middle">{_esc(x_label)}</text>')
    out.append(f'<text class="axis" transform="translate(14 {PAD_T + plot_h / 2}) rotate(-90)" '
               f'text-anchor="middle">{_esc(y_label)}</text>')
    ends: list[tuple[float, str, str]] = []
    for i, s in enumerate(drawn):
        color, dash = _style(i, s)
        pts = [(x, y) for x, y in s.points if _ok(x, y, log2_x)]
        idx = [k for k, (x, y) in enumerate(s.points) if _ok(x, y, log2_x)]
        if s.band and len(s.band) == len(s.points):
            band = [(s.points[k][0], s.band[k]) for k in idx if all(map(_finite, s.band[k]))]
            if len(band) > 1:
                upper = " ".join(f"{px(x):.1f},{py(hi):.1f}" for x, (lo, hi) in band)
                lower = " ".join(f"{px(x):.1f},{py(lo):.1f}" for x, (lo, hi) in reversed(band))
                out.append(f'<polygon class="band" fill="{color}" points="{upper} {lower}"/>')
        d = " ".join(f"{'M' if k == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for k, (x, y) in enumerate(pts))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<g class="series" data-name="{_esc(s.name)}"><title>{_esc(s.name)}</title>'
                   f'<path class="series-line" d="{d}" stroke="{color}"{dash_attr}/>')
        if len(pts) <= 60:
            for k, (x, y) in zip(idx, pts, strict=True):
                tip = s.tooltips[k] if k < len(s.tooltips) else f"{x_format(x)}: {fmt(y)}"
                out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.6" fill="{color}">'
                           f"<title>{_esc(s.name)} — {_esc(tip)}</title></circle>")
        out.append("</g>")
        ends.append((py(pts[-1][1]), fmt(pts[-1][1]), color))
    out.extend(_end_labels(ends, PAD_L + plot_w + 6, PAD_T, PAD_T + plot_h))
    out.extend(_legend(drawn, H + 14, per_row))
    if note:
        out.append(f'<text class="note" x="{PAD_L}" y="{height - 4}">{_esc(note)}</text>')
    out.append("</svg>")
    return Markup("".join(out))  # noqa: S704 -- every string in `out` went through _esc()


def format_size_float(x: float) -> str:
    return format_size(round(x)) if x >= 1 else fmt(x)


def _finite(v: float | None) -> bool:
    return v is not None and isinstance(v, int | float) and math.isfinite(v)


def _ok(x: float, y: float, log2_x: bool) -> bool:
    return _finite(x) and _finite(y) and (x > 0 or not log2_x)


def _end_labels(ends: list[tuple[float, str, str]], x: float, top: float, bottom: float) -> list[str]:
    """Last values at the right edge, nudged apart so that they do not overlap."""
    if len(ends) > 12:
        return []
    placed: list[tuple[float, str, str]] = []
    for y, text, color in sorted(ends):
        y = max(y, top + 4, placed[-1][0] + 12 if placed else -math.inf)
        placed.append((y, text, color))
    shift = max(0.0, placed[-1][0] - bottom) if placed else 0.0
    return [f'<text class="endv" x="{x:.1f}" y="{y - shift + 4:.1f}" fill="{color}">{_esc(text)}</text>'
            for y, text, color in placed]


def _legend(drawn: Sequence[Series], y0: float, per_row: int) -> list[str]:
    out, col_w = [], (W - PAD_L) / per_row
    limit = int(col_w / 6.6) - 5
    for i, s in enumerate(drawn):
        color, dash = _style(i, s)
        x, y = PAD_L + (i % per_row) * col_w, y0 + 18 * (i // per_row)
        short = s.name if len(s.name) <= limit else s.name[: limit - 1] + "…"
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<g class="legend"><line x1="{x:.1f}" x2="{x + 22:.1f}" y1="{y - 4:.1f}" '
                   f'y2="{y - 4:.1f}" stroke="{color}"{dash_attr}/><text x="{x + 27:.1f}" y="{y:.1f}">'
                   f"<title>{_esc(s.name)}</title>{_esc(short)}</text></g>")
    return out


def bar_chart(items: Sequence[tuple[str, float, float | None, float | None]], *, title: str,
              x_label: str) -> Markup:
    """Horizontal bars ``(label, value, ci_low, ci_high)`` with CI whiskers and values."""
    items = [it for it in items if _finite(it[1])]
    if not items:
        return Markup("")
    left, right, row = 220, 70, 22
    height = PAD_T + row * len(items) + 44
    hi = max(max(it[1], it[3] or 0.0) for it in items)
    ticks = _linear_ticks(0.0, hi or 1.0)
    top = ticks[-1] or 1.0
    plot_w = W - left - right

    def px(v: float) -> float:
        return left + v / top * plot_w

    out = [f'<svg class="chart" viewBox="0 0 {W} {height}" '
           f'role="img" aria-label="{_esc(title)}"><title>{_esc(title)}</title>',
           f'<text class="ct" x="{W / 2}" y="18" text-anchor="middle">{_esc(title)}</text>']
    bottom = PAD_T + row * len(items)
    for t in ticks:
        out.append(f'<line class="grid" x1="{px(t):.1f}" x2="{px(t):.1f}" y1="{PAD_T}" y2="{bottom}"/>'
                   f'<text class="tick" x="{px(t):.1f}" y="{bottom + 14}" text-anchor="middle">'
                   f"{_esc(tick(t))}</text>")
    for i, (label, value, low, high) in enumerate(items):
        y = PAD_T + i * row
        color = PALETTE[i % len(PALETTE)]
        short = label if len(label) <= 34 else label[:32] + "…"
        out.append(f'<g class="series"><title>{_esc(label)}: {_esc(fmt(value))}</title>'
                   f'<text class="tick" x="{left - 6}" y="{y + 15}" text-anchor="end">{_esc(short)}</text>'
                   f'<rect class="bar" x="{left}" y="{y + 4}" width="{max(px(value) - left, 0.5):.1f}" '
                   f'height="{row - 8}" fill="{color}"/>')
        if _finite(low) and _finite(high):
            assert low is not None and high is not None
            out.append(f'<line class="whisker" x1="{px(low):.1f}" x2="{px(high):.1f}" '
                       f'y1="{y + row / 2:.1f}" y2="{y + row / 2:.1f}"/>')
        out.append(f'<text class="endv" x="{px(max(value, high or value)) + 4:.1f}" y="{y + 15}">'
                   f"{_esc(fmt(value))}</text></g>")
    out.append(f'<text class="axis" x="{left + plot_w / 2}" y="{bottom + 32}" text-anchor="middle">'
               f"{_esc(x_label)}</text></svg>")
    return Markup("".join(out))  # noqa: S704 -- every string in `out` went through _esc()


def _shade(t: float) -> str:
    """Light (#f1f6fb) to dark blue (#0b3c73) for t in [0, 1]."""
    a, b = (0xF1, 0xF6, 0xFB), (0x0B, 0x3C, 0x73)
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b, strict=True))


def heatmap(rows: Sequence[str], cols: Sequence[str], values: dict[tuple[str, str], float], *,
            title: str, unit: str, row_label: str = "server", col_label: str = "client",
            higher_is_better: bool = True) -> Markup:
    """A rows × cols matrix coloured by value (darker = better), values written when it fits."""
    finite = [v for v in values.values() if _finite(v)]
    if not finite or not rows or not cols:
        return Markup("")
    lo, hi = min(finite), max(finite)
    # Anchor the scale so that a few percent of noise does not look like a broken link.
    lo = min(lo, 0.8 * hi) if higher_is_better and hi > 0 else lo
    cell = max(14, min(56, int(560 / max(len(rows), len(cols)))))
    rotate = max(len(c) for c in cols) * 6.5 > cell
    left, top = 150, 60 + (40 if rotate else 0)
    width = max(W, left + cell * len(cols) + 40)
    height = top + cell * len(rows) + 50
    show_values = cell >= 34
    out = [f'<svg class="chart heatmap" viewBox="0 0 {width} {height}" '
           f'role="img" aria-label="{_esc(title)}"><title>{_esc(title)}</title>',
           f'<text class="ct" x="{width / 2}" y="18" text-anchor="middle">{_esc(title)}</text>',
           f'<text class="axis" x="{left + cell * len(cols) / 2}" y="{38}" text-anchor="middle">'
           f"{_esc(col_label)} →</text>",
           f'<text class="axis" x="8" y="{top - 8}">{_esc(row_label)} ↓</text>']
    for j, c in enumerate(cols):
        short = c if len(c) <= 10 else c[:9] + "…"
        x = left + j * cell + cell / 2
        place = (f'transform="translate({x:.1f} {top - 6}) rotate(-45)" text-anchor="start"' if rotate
                 else f'x="{x:.1f}" y="{top - 6}" text-anchor="middle"')
        out.append(f'<text class="tick" {place}><title>{_esc(c)}</title>{_esc(short)}</text>')
    for i, r in enumerate(rows):
        y = top + i * cell
        short = r if len(r) <= 22 else r[:21] + "…"
        out.append(f'<text class="tick" x="{left - 6}" y="{y + cell / 2 + 4:.1f}" text-anchor="end">'
                   f"<title>{_esc(r)}</title>{_esc(short)}</text>")
        for j, c in enumerate(cols):
            v = values.get((r, c))
            x = left + j * cell
            if not _finite(v):
                out.append(f'<rect class="hm-empty" x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}"/>')
                continue
            assert v is not None
            t = (v - lo) / (hi - lo) if hi > lo else 1.0
            t = t if higher_is_better else 1 - t
            out.append(f'<g class="hm-cell"><rect x="{x}" y="{y}" width="{cell - 1}" height="{cell - 1}" '
                       f'fill="{_shade(0.1 + 0.85 * t)}"/><title>{_esc(r)} → {_esc(c)}: '
                       f"{_esc(fmt(v))} {_esc(unit)}</title>")
            if show_values:
                color = "#fff" if t > 0.55 else "#111"
                out.append(f'<text x="{x + cell / 2:.1f}" y="{y + cell / 2 + 4:.1f}" text-anchor="middle" '
                           f'fill="{color}" class="hm-v">{_esc(fmt(v))}</text>')
            out.append("</g>")
    out.append(f'<text class="note" x="{left}" y="{height - 14}">{_esc(unit)}: {_esc(fmt(lo))} (light) '
               f"… {_esc(fmt(hi))} (dark){'' if higher_is_better else ', lower is darker'}</text></svg>")
    return Markup("".join(out))  # noqa: S704 -- every string in `out` went through _esc()


def downsample(points: Sequence[tuple[float, float]], limit: int = 400) -> list[tuple[float, float]]:
    """At most ``limit`` points: the mean of equal-width time bins (keeps bursts visible)."""
    if len(points) <= limit:
        return list(points)
    lo, hi = points[0][0], points[-1][0]
    width = (hi - lo) / limit or 1.0
    bins: dict[int, list[float]] = {}
    xs: dict[int, list[float]] = {}
    for x, y in points:
        k = min(int((x - lo) / width), limit - 1)
        bins.setdefault(k, []).append(y)
        xs.setdefault(k, []).append(x)
    return [(sum(xs[k]) / len(xs[k]), sum(v) / len(v)) for k, v in sorted(bins.items())]
