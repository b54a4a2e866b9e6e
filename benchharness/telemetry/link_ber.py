"""The physical link's bit error rate as ``mlxlink -d DEV -c`` reports it, judged (pure function).

mlxlink's "Physical Counters and BER Info" counts since the port's counters were last cleared
("Time Since Last Clear [Min]"): ``Raw Physical BER`` is the error rate before FEC (how much
margin the FEC still has), ``Effective Physical BER`` and ``Effective Physical Errors`` what FEC
could not correct. mlxlink prints ``15E-255`` for none.

Limits: an effective BER above 1e-12 fails (the threshold of ibdiagnet's BER test); a raw BER
above 1e-5 warns (the raw-BER threshold of a published fleet link check): the link still works,
with little FEC margin left. Sources in tests/fixtures/health/real/SOURCES.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchharness.telemetry.parsers._common import to_float, to_int
from benchharness.telemetry.parsers.mlxlink import parse_mlxlink

EFFECTIVE_BER_FAIL = 1e-12
RAW_BER_WARN = 1e-5


@dataclass(frozen=True)
class BerJudged:
    """One port's BER verdict: status, the figure that decided, its limit and the evidence."""

    status: str  # pass | warn | fail | info
    value: float | None
    limit: float | None
    message: str


def judge_ber(raw: str) -> BerJudged:
    """The verdict on one ``mlxlink -c`` output."""
    counters: Mapping[str, Any] = parse_mlxlink(raw).get("counters") or {}
    eff_ber = to_float(counters.get("effective_physical_ber"))
    raw_ber = to_float(counters.get("raw_physical_ber"))
    eff_errors = to_int(counters.get("effective_physical_errors"))
    minutes = to_float(counters.get("time_since_last_clear_min"))
    if eff_ber is None and raw_ber is None:
        return BerJudged("info", None, None, "mlxlink printed no Physical Counters and BER Info: BER not judged")
    since = f" over {minutes / 60:.3g} h since the counters were cleared" if minutes is not None else ""

    def fmt(x: float | None) -> str:
        return "none" if x is None or x < 1e-200 else f"{x:.3g}"

    text = f"raw BER {fmt(raw_ber)}, effective BER {fmt(eff_ber)}, {eff_errors if eff_errors is not None else '?'} " \
           f"effective (uncorrected) errors{since}"
    if eff_ber is not None and eff_ber > EFFECTIVE_BER_FAIL:
        return BerJudged("fail", eff_ber, EFFECTIVE_BER_FAIL, f"{text}: effective BER above {EFFECTIVE_BER_FAIL:g} "
                         "(errors get past FEC: check the cable, transceiver and port)")
    if raw_ber is not None and raw_ber > RAW_BER_WARN:
        return BerJudged("warn", raw_ber, RAW_BER_WARN, f"{text}: raw BER above {RAW_BER_WARN:g} "
                         "(FEC still corrects, with little margin left)")
    return BerJudged("pass", raw_ber, RAW_BER_WARN, text)
