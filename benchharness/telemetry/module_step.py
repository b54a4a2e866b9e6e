"""Transceiver temperatures over a step, from the sampler's raw ``ethtool -m`` outputs.

With ``module_interval: N`` (suite settings; default 10 s, 0 turns it off) the sampler reads each
rail netdev's transceiver every N seconds (``onhost/sampler.py --module-every``) and keeps the text
raw. It is parsed here, on the controller, by the parser the probe's output uses
(``parsers/ethtool_module.py``): each module temperature becomes a sensor
``<netdev>/ethtool-m/module`` beside the NIC's and the GPUs' in the sample line
(``collect.fold_sensors``), so the heat limits (``temp_peak_c``, ``temp_slope_c_per_min``) and the
report judge and draw it as any other sensor, of kind ``module`` (``temperature_checks.sensor_kind``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchharness.telemetry.parsers.ethtool_module import parse_module

SENSOR = "{netdev}/ethtool-m/module"


def module_temperatures(raw: Any) -> dict[str, float]:
    """Sensor name -> °C from one line's ``module_raw`` (netdevs whose read failed are left out)."""
    out: dict[str, float] = {}
    if not isinstance(raw, Mapping):
        return out
    for netdev, reading in raw.items():
        if not isinstance(reading, Mapping) or not isinstance(reading.get("text"), str):
            continue
        temp = parse_module(reading["text"]).get("temperature_c")
        if isinstance(temp, int | float):
            out[SENSOR.format(netdev=netdev)] = float(temp)
    return out

