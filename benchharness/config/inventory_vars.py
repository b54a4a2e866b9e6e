"""Benchmark and connection variables of inventory hosts: conversion, validation, SSH options.

Every variable is checked per host; an error names the host, the variable and where it was set.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchharness.core.errors import ConfigError

Where = Callable[[str], tuple[str, int | None]]


def _to_int(v: Any) -> int:
    if isinstance(v, bool) or (isinstance(v, float) and not v.is_integer()):
        raise ValueError(v)
    return int(v) if isinstance(v, int | float) else int(str(v).strip(), 10)


def _to_num(v: Any) -> int | float:
    if isinstance(v, bool):
        raise ValueError(v)
    if not isinstance(v, int | float):
        text = str(v).strip()
        v = int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError(v)
    return v


def _to_str(v: Any) -> str:
    if isinstance(v, bool | Mapping | list) or not str(v).strip() or any(c in str(v) for c in "\n\0"):
        raise ValueError(v)
    return str(v).strip()


def _to_ip(v: Any) -> str:
    return str(ipaddress.ip_address(_to_str(v)))


def _to_gpus(v: Any) -> int | list[int]:
    """A GPU count (``8``) or the GPUs' indices (``[0, 1, 2, 3]``, ``0,1,2,3``)."""
    if isinstance(v, list | tuple) or (isinstance(v, str) and "," in v):
        items = v.split(",") if isinstance(v, str) else v
        return [_to_int(i) for i in items if str(i).strip()]
    return _to_int(v)


def _to_vendor(v: Any) -> str:
    if _to_str(v).lower() not in ("nvidia", "amd"):
        raise ValueError(v)
    return _to_str(v).lower()


#: name -> (converter, acceptable?, what it must be). README documents each one.
BENCH_VARS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], bool], str]] = {
    "data_ip": (_to_ip, bool, "an IP address"),
    "netdev": (_to_str, bool, "a network interface name"),
    "rdma_dev": (_to_str, bool, "an RDMA device name (e.g. mlx5_0)"),
    "rdma_port": (_to_int, lambda x: x >= 1, "an integer >= 1"),
    "gid_index": (_to_int, lambda x: x >= 0, "an integer >= 0"),
    "nic_model": (_to_str, bool, "a string"),
    "nic_firmware": (_to_str, bool, "a string"),
    "nic_serial": (_to_str, bool, "a string"),
    "nic_line_rate_gbps": (_to_num, lambda x: x > 0, "a number > 0"),
    "gpus": (_to_gpus, lambda x: all(i >= 0 for i in x) if isinstance(x, list) else x >= 0,
             "an integer >= 0 or a list of GPU indices"),
    "gpu_vendor": (_to_vendor, bool, "nvidia or amd"),
    "numa_node": (_to_int, lambda x: x >= -1, "an integer >= -1"),
    "price_usd": (_to_num, lambda x: x >= 0, "a number >= 0"),
    "power_w": (_to_num, lambda x: x >= 0, "a number >= 0"),
    "bench_python": (_to_str, bool, "a path"),
    "mpi_rsh_agent": (_to_str, bool, "a path"),
    "bench_netns": (_to_str, bool, "a network namespace name"),
}
_CONNECTIONS = {None: False, "ssh": False, "paramiko": False, "smart": False, "local": True}


def _checked(host: str, var: str, value: Any, where: Where, conv: Callable[[Any], Any],
             ok: Callable[[Any], bool], what: str) -> Any:
    try:
        out = conv(value)
        if ok(out):
            return out
    except (ValueError, TypeError):
        pass
    raise ConfigError(f"host {host}: {var}={value!r} is not valid, it must be {what}", *where(var))


def validate_bench_vars(host: str, values: dict[str, Any], where: Where) -> dict[str, Any]:
    """``values`` with every benchmark variable checked and converted (``"8"`` -> 8); None means unset."""
    out = dict(values)
    for var, (conv, ok, what) in BENCH_VARS.items():
        if out.get(var) is not None:
            out[var] = _checked(host, var, out[var], where, conv, ok, what)
    return out


def _first(values: Mapping[str, Any], *names: str) -> tuple[str, Any]:
    for n in names:
        if values.get(n) is not None:
            return n, values[n]
    return names[0], None


def _local_path(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def connection_fields(host: str, values: Mapping[str, Any], base: Path, where: Where) -> dict[str, Any]:
    """Host fields from Ansible's connection variables; relative paths resolve against ``base``."""
    var, conn = _first(values, "ansible_connection")
    conn = None if conn is None else str(conn).removeprefix("ansible.builtin.")
    if conn not in _CONNECTIONS:
        raise ConfigError(f"host {host}: ansible_connection={conn!r} is not supported (use ssh or local)",
                          *where(var))
    fields: dict[str, Any] = {"local": _CONNECTIONS[conn], "strict_host_keys": True, "port": 22}
    var, addr = _first(values, "ansible_host", "ansible_ssh_host")
    fields["address"] = _checked(host, var, addr, where, _to_str, bool, "a host name or address") \
        if addr is not None else host
    var, port = _first(values, "ansible_port", "ansible_ssh_port")
    if port is not None:
        fields["port"] = _checked(host, var, port, where, _to_int, lambda p: 1 <= p <= 65535, "a TCP port")
    var, user = _first(values, "ansible_user", "ansible_ssh_user")
    fields["user"] = None if user is None else _checked(host, var, user, where, _to_str, bool, "a user name")
    var, key = _first(values, "ansible_ssh_private_key_file", "ansible_private_key_file")
    if key is not None:
        fields["key_file"] = _local_path(_checked(host, var, key, where, _to_str, bool, "a path"), base)
    var, checking = _first(values, "ansible_host_key_checking", "ansible_ssh_host_key_checking")
    if checking is not None and str(checking).strip().lower() in ("false", "no", "off", "0"):
        fields["strict_host_keys"] = False
    options = _ssh_options(host, values, where)
    if options.get("proxyjump", "none").lower() != "none":
        fields["proxy_jump"] = options["proxyjump"]
    if "userknownhostsfile" in options:
        fields["known_hosts"] = _local_path(options["userknownhostsfile"].split()[0], base)
    strict = options.get("stricthostkeychecking", "yes").lower()
    if strict not in ("yes", "ask", "no", "off", "accept-new"):
        raise ConfigError(f"host {host}: StrictHostKeyChecking={strict} is not understood "
                          "(use yes, no or accept-new)", *where("ansible_ssh_common_args"))
    if strict in ("no", "off", "accept-new"):
        fields["strict_host_keys"] = False
    return fields


def _ssh_options(host: str, values: Mapping[str, Any], where: Where) -> dict[str, str]:
    """``-o Key=Value`` and ``-J`` from ansible_ssh_common_args then _extra_args; as in ssh, first wins."""
    found: dict[str, str] = {}
    for var in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        if values.get(var) is None:
            continue
        try:
            argv = shlex.split(str(values[var]))
        except ValueError as exc:
            raise ConfigError(f"host {host}: {var}: {exc}", *where(var)) from None
        i = 0
        while i < len(argv):
            flag, value = argv[i][:2], argv[i][2:]
            i += 1
            if flag not in ("-o", "-J"):
                continue
            if not value:
                if i == len(argv):
                    raise ConfigError(f"host {host}: {var}: {flag} needs a value", *where(var))
                value, i = argv[i], i + 1
            key, _, val = value.partition("=") if flag == "-o" else ("proxyjump", "", value)
            if flag == "-o" and not val:
                key, _, val = value.strip().partition(" ")
            key = key.strip().lower()
            if key == "proxycommand":
                raise ConfigError(f"host {host}: ProxyCommand in {var} is not supported, use ProxyJump "
                                  "(-J jumphost or -o ProxyJump=jumphost)", *where(var))
            found.setdefault(key, val.strip())
    return found
