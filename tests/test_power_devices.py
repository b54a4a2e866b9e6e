"""NIC / module power from hwmon (``power<N>_input`` in microwatts, the kernel's hwmon sysfs ABI),
read by the real sampler over a sysfs tree and summarised per step, host and sensor."""

from __future__ import annotations

import json
from pathlib import Path

from sampler_lines import HostTree, real_lines

from benchharness.results.power import device_power
from benchharness.results.store import RunDir
from benchharness.telemetry.parsers.sampler import read_sampler


def _power_sensor(root: Path, microwatts: int) -> Path:
    mon = root / "sys" / "class" / "hwmon" / "hwmon7"
    mon.mkdir(parents=True, exist_ok=True)
    (mon / "name").write_text("mlx5\n")
    (mon / "power1_label").write_text("asic\n")
    (mon / "power1_input").write_text(f"{microwatts}\n")
    return mon / "power1_input"


def test_the_sampler_reads_hwmon_power_and_the_run_keeps_it_per_step(tmp_path: Path) -> None:
    tree = HostTree(tmp_path / "h1", temps={"mlx5": 61.0})
    sensor = _power_sensor(tree.root, 18_500_000)  # 18.5 W
    lines = real_lines(tree, 1000.0, 1.0, [{"busy": [0.5] * 4, "gbps": 10.0}])
    sensor.write_text("21500000\n")  # 21.5 W on the next reading
    lines += real_lines(tree, 1001.0, 1.0, [{"busy": [0.5] * 4, "gbps": 10.0}])
    text = "".join(json.dumps(line) + "\n" for line in lines)
    parsed = read_sampler(text).lines
    assert [ln.power_w for ln in parsed] == [{"hwmon/hwmon7/mlx5/asic": 18.5}, {"hwmon/hwmon7/mlx5/asic": 21.5}]
    run = RunDir.create(tmp_path / "run")
    run.write_text("telemetry/samples/0000-t-h1-h2-r0/h1.jsonl", text)
    assert device_power(run) == [{"step": "0000-t-h1-h2-r0", "host": "h1", "sensor": "hwmon/hwmon7/mlx5/asic",
                                  "device_power_w_avg": 20.0, "device_power_w_max": 21.5, "readings": 2}]


def test_a_host_without_power_sensors_writes_no_power_field(tmp_path: Path) -> None:
    tree = HostTree(tmp_path / "h2", temps={"coretemp": 50.0})
    lines = real_lines(tree, 1000.0, 1.0, [{"busy": [0.2] * 4}])
    assert "power_w" not in lines[0]
    assert read_sampler(json.dumps(lines[0]) + "\n").lines[0].power_w == {}
