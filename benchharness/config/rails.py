"""A host's NICs ("rails") from its inventory variables: parallel lists (INI), a list of mappings
(YAML ``rails:``), ``rails=auto`` (discovered on the host at run start), or one NIC as before.

INI: ``netdev=eth1,eth2 rdma_dev=mlx5_0,mlx5_1 data_ip=198.18.1.1,198.18.2.1`` — rail i takes
the i-th item of every list; a variable with one value (``gid_index=3``) holds for every rail,
except ``data_ip`` (each rail has its own address). YAML: ``rails: [{netdev: eth1, rdma_dev:
mlx5_0, data_ip: 198.18.1.1}, ...]``. Lists of different lengths, a rail without an address or a
bad value are ConfigErrors naming the file, line, host and rail.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from benchharness.config.inventory_vars import BENCH_VARS, Where
from benchharness.core.errors import ConfigError
from benchharness.core.model import Rail

AUTO = "auto"
#: Rail field -> (inventory variable of the INI form, YAML keys that name it).
FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "netdev": ("netdev", ("netdev",)),
    "rdma_dev": ("rdma_dev", ("rdma_dev",)),
    "rdma_port": ("rdma_port", ("rdma_port",)),
    "data_ip": ("data_ip", ("data_ip",)),
    "gid_index": ("gid_index", ("gid_index",)),
    "numa_node": ("numa_node", ("numa_node",)),
    "line_rate_gbps": ("nic_line_rate_gbps", ("nic_line_rate_gbps", "line_rate_gbps")),
    "serial": ("nic_serial", ("nic_serial", "serial")),
    "pci_address": ("nic_pci_address", ("nic_pci_address", "pci_address")),
    "nearest_gpus": ("nearest_gpu", ("nearest_gpus", "nearest_gpu")),
    "link_layer": ("link_layer", ("link_layer",)),
    "traffic_class": ("traffic_class", ("traffic_class",)),
}
#: Variables whose single value holds for every rail (an address never does).
_SHARED_OK = {"rdma_port", "gid_index", "numa_node", "line_rate_gbps", "link_layer", "traffic_class"}
_KNOWN_KEYS = {k for _, keys in FIELDS.values() for k in keys}


def _items(value: Any) -> list[Any] | None:
    """The items of a list value (YAML list or comma-separated string); None for a scalar."""
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, str) and "," in value:
        return [v.strip() for v in value.split(",")]
    return None


def _gpus(value: Any) -> tuple[int, ...]:
    if value is None or value in ("", "-"):
        return ()
    items = value if isinstance(value, list | tuple) else str(value).replace("+", " ").split()
    out = tuple(int(str(v).strip()) for v in items)
    if any(g < 0 for g in out):
        raise ValueError(value)
    return out


def _str(value: Any) -> str:
    text = str(value).strip()
    if not text or isinstance(value, bool | Mapping | list):
        raise ValueError(value)
    return text


def _convert(host: str, rail: int, field: str, value: Any, var: str, where: Where) -> Any:
    """One rail field converted and checked like the host variable of the same name."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "-")):
        return None
    try:
        if field == "nearest_gpus":
            return _gpus(value)
        if field == "pci_address":
            return _str(value)
        conv, ok, what = BENCH_VARS[FIELDS[field][0]]
        out = conv(value)
        if ok(out):
            return out
    except (ValueError, TypeError):
        pass
    what = "GPU indices" if field == "nearest_gpus" else (
        "a PCI address" if field == "pci_address" else BENCH_VARS[FIELDS[field][0]][2])
    raise ConfigError(f"host {host}: rail{rail}: {var}={value!r} is not valid, it must be {what}", *where(var))


def _build(host: str, index: int, fields: Mapping[str, Any], var_of: Callable[[str], str],
           where: Where) -> Rail:
    kw = {f: _convert(host, index, f, v, var_of(f), where) for f, v in fields.items()}
    if not kw.get("data_ip"):
        raise ConfigError(f"host {host}: rail{index} has no data_ip: every rail needs its own address",
                          *where(var_of("data_ip")))
    kw = {k: v for k, v in kw.items() if v is not None}
    return Rail(index=index, **kw)


def _from_yaml(host: str, rails: list[Any], values: Mapping[str, Any], where: Where) -> tuple[Rail, ...]:
    """Rails of a YAML ``rails:`` list; a shared variable of the host (``gid_index: 3``,
    ``link_layer``, ``traffic_class`` ...) fills the rails that do not set their own, as in INI."""
    out = []
    for i, item in enumerate(rails):
        if not isinstance(item, Mapping):
            raise ConfigError(f"host {host}: rails: rail{i} is {item!r}, not a mapping of netdev, rdma_dev, "
                              "data_ip ...", *where(f"rails[{i}]"))
        unknown = sorted(set(map(str, item)) - _KNOWN_KEYS)
        if unknown:
            raise ConfigError(f"host {host}: rails: rail{i} has unknown key(s) {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(_KNOWN_KEYS))})", *where(f"rails[{i}]"))
        fields = {f: next((item[k] for k in keys if item.get(k) is not None),
                          values.get(var) if f in _SHARED_OK and _items(values.get(var)) is None else None)
                  for f, (var, keys) in FIELDS.items()}
        if fields["nearest_gpus"] is not None and not isinstance(fields["nearest_gpus"], list):
            fields["nearest_gpus"] = [fields["nearest_gpus"]]
        out.append(_build(host, i, fields, lambda f, i=i: f"rails[{i}]", where))  # type: ignore[misc]
    return tuple(out)


def _from_lists(host: str, values: Mapping[str, Any], where: Where) -> tuple[Rail, ...]:
    lists = {f: _items(values.get(var)) for f, (var, _) in FIELDS.items()}
    present = {f: v for f, v in lists.items() if v is not None}
    if not present:
        return ()
    count = max(len(v) for v in present.values())
    longest = next(FIELDS[f][0] for f, v in present.items() if len(v) == count)
    for f, items in present.items():
        if len(items) != count:
            var = FIELDS[f][0]
            raise ConfigError(f"host {host}: {var} lists {len(items)} rails but {longest} lists {count}: "
                              f"rail{len(items)} has no {var}", *where(var))
    fields_per_rail: list[dict[str, Any]] = [{} for _ in range(count)]
    for f, (var, _) in FIELDS.items():
        value = values.get(var)
        if f in present:
            for i, item in enumerate(present[f]):
                fields_per_rail[i][f] = item
        elif value is not None and f not in _SHARED_OK:
            if f == "data_ip":
                raise ConfigError(f"host {host}: data_ip={value!r} is one address for {count} rails ({longest} "
                                  f"lists {count}): rail1 has no data_ip of its own", *where(var))
            if f in ("netdev", "rdma_dev", "serial", "pci_address", "nearest_gpus"):
                raise ConfigError(f"host {host}: {var}={value!r} is one value for {count} rails ({longest} "
                                  f"lists {count}); give one per rail", *where(var))
        elif value is not None:
            for i in range(count):
                fields_per_rail[i][f] = value
    return tuple(_build(host, i, fields_per_rail[i], lambda f: FIELDS[f][0], where) for i in range(count))


def host_rails(host: str, values: dict[str, Any], where: Where) -> tuple[dict[str, Any], tuple[Rail, ...], bool]:
    """``(values, rails, auto)``: the host's variables with rail 0's in place of the lists (so code
    that knows one NIC sees the first), its rails (empty: the single-NIC form), and whether
    ``rails=auto`` asks for discovery on the host."""
    raw = values.get("rails")
    if isinstance(raw, str) and raw.strip().lower() == AUTO:
        return {**values, "rails": AUTO}, (), True
    if raw is not None and not isinstance(raw, list):
        raise ConfigError(f"host {host}: rails={raw!r}: expected 'auto' or a list of NICs "
                          "(rails: [{netdev: ..., rdma_dev: ..., data_ip: ...}])", *where("rails"))
    rails = _from_yaml(host, raw, values, where) if raw is not None else _from_lists(host, values, where)
    out = dict(values)
    out.pop("rails", None)
    if rails:
        first = rails[0]
        for f, (var, _) in FIELDS.items():
            if f == "nearest_gpus":
                out.pop(var, None)
            elif (raw is not None or _items(values.get(var)) is not None) and getattr(first, f) is not None:
                out[var] = getattr(first, f)
    return out, rails, False
