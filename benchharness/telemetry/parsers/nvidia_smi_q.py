"""``nvidia-smi -q`` (``-d TEMPERATURE,POWER,PERFORMANCE,CLOCK`` or the whole listing): per GPU, the
temperature, power and clock sections, and the clock throttle / event reasons (read by
``gpu_throttle.parse_performance``, the one reader of those sections).

Layout (nvidia-smi's ``-q`` text, drivers R4xx to R595): a ``GPU <bus id>`` line opens each GPU,
sections are indented 4 spaces and their ``Label : value`` lines 8. The sections read here:

* ``Temperature``: ``GPU Current Temp : 38 C``, ``GPU Shutdown Temp``, ``GPU Slowdown Temp``,
  ``GPU Max Operating Temp``, ``GPU Target Temperature``, ``Memory Current Temp`` ...; from about
  R535 on Hopper and later ``GPU T.Limit Temp`` (the margin to the nearest slowdown threshold,
  NVML's ``nvmlDeviceGetMarginTemperature``) and ``GPU Shutdown T.Limit Temp : -8 C`` (thresholds
  relative to T.Limit, not absolute).
* ``Power Readings`` (older drivers: ``Power Draw``, ``Power Limit``, ``Enforced Power Limit`` ...),
  from about R535 ``GPU Power Readings`` (``Current`` / ``Requested Power Limit``; R550 and later
  ``Average`` and ``Instantaneous Power Draw``), ``GPU Memory Power Readings`` and ``Module Power
  Readings`` (Grace Hopper / Blackwell modules), ``Power Samples`` (``-d POWER``).
* ``FB Memory Usage`` (``Total``, ``Reserved`` from about R510, ``Used``, ``Free`` in MiB), ``BAR1
  Memory Usage`` and, from about R535, ``Conf Compute Protected Memory Usage`` (``-d MEMORY``):
  ``memory`` -> ``fb`` / ``bar1`` / ``protected`` -> ``total_mib``, ``reserved_mib``, ``used_mib``,
  ``free_mib``. Only the GPU's own sections count: the ``FB Memory Usage`` of a MIG device (under
  ``MIG Devices``, indented deeper) or of a vGPU (``nvidia-smi vgpu -q``) is not the GPU's.
* ``Utilization`` (``GPU : 0 %``, ``Memory``, ``Encoder``, ``Decoder``, R535 on ``JPEG``, ``OFA``) and
  the ``-d UTILIZATION`` samples (``GPU Utilization Samples`` ...): ``utilization`` -> ``current`` /
  ``gpu_samples`` / ``memory_samples`` / ``encoder_samples`` / ``decoder_samples`` / ``jpeg_samples`` /
  ``ofa_samples`` -> ``gpu_pct`` ...
* ``Performance State : P8`` (``-d PERFORMANCE``): ``performance_state``.
* ``Clocks`` (``Graphics : 1410 MHz``, ``SM``, ``Memory``, ``Video``), ``Applications Clocks``,
  ``Default Applications Clocks``, ``Deferred Clocks``, ``Max Clocks``, ``Max Customer Boost
  Clocks`` and, with ``-d CLOCK``, ``SM Clock Samples`` / ``Memory Clock Samples``: ``clocks`` ->
  ``current`` / ``applications`` / ``default_applications`` / ``deferred`` / ``max`` /
  ``max_customer_boost`` / ``sm_samples`` / ``memory_samples`` -> ``graphics_mhz`` ... (``Clock
  Policy`` and ``Voltage`` are not read).

Each ``Label : N unit`` line becomes ``snake(label)`` with the unit as suffix (``C`` -> ``_c``,
``W`` -> ``_w``, ``MHz`` -> ``_mhz``, ``sec`` -> ``_s``, ``MiB`` -> ``_mib``, ``%`` -> ``_pct``): ``gpu_current_temp_c``, ``gpu_shutdown_tlimit_temp_c``,
``average_power_draw_w``. ``N/A`` and the like are absent (the driver cannot give them), never 0; so is a samples ``Duration``
of 2**63 µs or more (R375 prints ``18446744073709.22 sec``: a negative window printed unsigned).
Each power scope also gets ``draw_w`` (average, else instantaneous, else ``Power Draw``) and
``limit_w`` (``Current``, else ``Enforced``, else ``Power Limit``), the same fact across versions.
A line of these sections whose value has a unit but no number is an error naming it (exit 3).
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import snake, undecorate, unreadable
from benchharness.telemetry.parsers.gpu_throttle import parse_performance

_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_LINE = re.compile(r"^(\s*)([^:]*?\S)\s*(?::\s*(.*?))?\s*$")
_SECTIONS = {"temperature": ("temperature", None), "power readings": ("power", "gpu"),
             "gpu power readings": ("power", "gpu"), "gpu memory power readings": ("power", "memory"),
             "module power readings": ("power", "module"), "power samples": ("power", "samples"),
             "clocks": ("clocks", "current"), "applications clocks": ("clocks", "applications"),
             "default applications clocks": ("clocks", "default_applications"),
             "deferred clocks": ("clocks", "deferred"), "max clocks": ("clocks", "max"),
             "max customer boost clocks": ("clocks", "max_customer_boost"),
             "sm clock samples": ("clocks", "sm_samples"), "memory clock samples": ("clocks", "memory_samples"),
             "fb memory usage": ("memory", "fb"), "bar1 memory usage": ("memory", "bar1"),
             "conf compute protected memory usage": ("memory", "protected"),
             "utilization": ("utilization", "current"),
             "gpu utilization samples": ("utilization", "gpu_samples"),
             "memory utilization samples": ("utilization", "memory_samples"),
             "enc utilization samples": ("utilization", "encoder_samples"),
             "encoder utilization samples": ("utilization", "encoder_samples"),
             "dec utilization samples": ("utilization", "decoder_samples"),
             "decoder utilization samples": ("utilization", "decoder_samples"),
             "jpg utilization samples": ("utilization", "jpeg_samples"),
             "jpeg utilization samples": ("utilization", "jpeg_samples"),
             "ofa utilization samples": ("utilization", "ofa_samples")}
_UNITS = {"c": "_c", "w": "_w", "mw": "_mw", "mhz": "_mhz", "sec": "_s", "s": "_s", "ms": "_ms",
          "kib": "_kib", "mib": "_mib", "gib": "_gib", "%": "_pct"}
_ABSENT = {"n/a", "[n/a]", "not supported", "[not supported]", "unknown error", "[unknown error]",
           "[insufficient permissions]", "unknown"}
_NUMBER = re.compile(r"^(-?\d+(?:\.\d+)?)\s*([A-Za-z]+|%)?$")
_PSTATE = re.compile(r"^Performance State$", re.IGNORECASE)
#: a samples ``Duration`` this long (R375: ``18446744073709.22 sec``) is 2**64 µs less a little:
#: a negative window printed unsigned, no duration at all
_WRAPPED_S = 2**63 / 1e6


def _value(label: str, raw: str, line_no: int, line: str) -> tuple[str, Any] | None:
    key = snake(label.replace("T.Limit", "TLimit"))
    if raw.lower() in _ABSENT:
        return None
    m = _NUMBER.match(raw)
    if m:
        number, unit = m.group(1), (m.group(2) or "").lower()
        value: float | int = float(number) if "." in number else int(number)
        if unit and unit not in _UNITS:
            raise unreadable(line_no, line, f"nvidia-smi -q: unit {m.group(2)!r} not known")
        if key == "duration" and unit == "sec" and value >= _WRAPPED_S:
            return None  # a sample window whose start stamp is after its end, printed as an unsigned µs count
        return key + _UNITS.get(unit, ""), value
    if re.search(r"\s(?:C|W|MHz|sec|MiB|%)$", raw):
        raise unreadable(line_no, line, "nvidia-smi -q: a reading without its number")
    return key, raw


def _summary(scope: dict[str, Any]) -> None:
    for key in ("average_power_draw_w", "instantaneous_power_draw_w", "power_draw_w"):
        if key in scope:
            scope["draw_w"] = scope[key]
            break
    for key in ("current_power_limit_w", "enforced_power_limit_w", "power_limit_w"):
        if key in scope:
            scope["limit_w"] = scope[key]
            break


def _sections(text: str) -> list[dict[str, Any]]:
    gpus: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    where: tuple[str, str | None] | None = None
    indent = 0
    base: int | None = None  # the indent of the GPU's own lines (4); deeper ones belong to a MIG device
    for line_no, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        m = _GPU.match(raw.strip())
        if m:
            current = {"gpu": m.group(1)}
            gpus.append(current)
            where, base = None, None
            continue
        parts = _LINE.match(raw)
        if not parts:
            continue
        depth, label, value = len(parts.group(1)), parts.group(2), parts.group(3)
        if current is not None and base is None:
            base = depth
        if where is not None and depth <= indent:
            where = None
        section = _SECTIONS.get(label.strip().lower()) if not value else None
        if section and (base is None or depth <= base):
            if current is None:  # an excerpt without its GPU line
                current = {"gpu": "0"}
                gpus.append(current)
                base = depth
            where, indent = section, depth
            continue
        if where is None and value and _PSTATE.match(label) and (base is None or depth <= base):
            if current is None:
                current = {"gpu": "0"}
                gpus.append(current)
                base = depth
            if value.lower() not in _ABSENT:
                current["performance_state"] = value
            continue
        if where is None or current is None or value is None:
            continue
        got = _value(label, value, line_no, raw)
        if got is None:
            continue
        group, scope = where
        target = current.setdefault(group, {})
        if scope is not None:
            target = target.setdefault(scope, {})
        target[got[0]] = got[1]
    for gpu in gpus:
        for scope in (gpu.get("power") or {}).values():
            _summary(scope)
    return gpus


def parse_q(text: str) -> list[dict[str, Any]]:
    """One dict per GPU: ``gpu`` (PCI bus id, ``"0"`` for an excerpt without it), ``temperature``,
    ``power`` (``gpu`` / ``memory`` / ``module`` / ``samples``) and ``clocks`` (``current`` / ``max``
    ...) where printed, and the throttle reasons (``active``, ``reasons``, ``counters_us``) where
    printed."""
    text = undecorate(text)
    found = {g["gpu"]: g for g in _sections(text) if len(g) > 1}
    for throttle in parse_performance(text):
        found.setdefault(throttle["gpu"], {"gpu": throttle["gpu"]}).update(throttle)
    return list(found.values())


PARSERS = {"nvidia-smi-q": parse_q}
READS = {
    "nvidia-smi-q": "nvidia-smi -q [-d TEMPERATURE,POWER,PERFORMANCE,CLOCK,MEMORY,UTILIZATION] (drivers R375-R595, "
                    "Linux and Windows; old 36-column and later 42-column layouts; section excerpts without the GPU "
                    "line): Temperature (absolute and T.Limit-relative), Power Readings / GPU, GPU "
                    "Memory and Module Power Readings, Power Samples, Clocks (current, applications, max, samples), "
                    "FB / BAR1 / Conf Compute Protected Memory Usage (MiB), Utilization and its samples, Performance State, \"Clocks Throttle Reasons\" / "
                    "\"Clocks Event Reasons\" and their counters",
}
