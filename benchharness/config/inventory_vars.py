"""Benchmark and connection variables of inventory hosts: conversion, validation, SSH options.

Every variable is checked per host; an error names the host, the variable and where it was set.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchharness.core.errors import ConfigError
from benchharness.transport.sshconfig import SSHConfigError, default_config, resolve, split_args

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


def _to_version(v: Any) -> str:
    # a float is refused: unquoted, 3.20 would already be the number 3.2
    if not isinstance(v, str) or not re.fullmatch(r"\d+(?:\.\d+)+", v.strip()):
        raise ValueError(v)
    return v.strip()


def _to_ip(v: Any) -> str:
    return str(ipaddress.ip_address(_to_str(v)))


def _to_gpus(v: Any) -> int | list[int]:
    """A GPU count (``8``) or the GPUs' indices (``[0, 1, 2, 3]``, ``0,1,2,3``)."""
    if isinstance(v, list | tuple) or (isinstance(v, str) and "," in v):
        items = v.split(",") if isinstance(v, str) else v
        return [_to_int(i) for i in items if str(i).strip()]
    return _to_int(v)


def _to_link_layer(v: Any) -> str:
    """``InfiniBand`` or ``Ethernet`` (as /sys/class/infiniband/*/ports/*/link_layer spells them)."""
    text = _to_str(v).lower()
    if text in ("infiniband", "ib"):
        return "InfiniBand"
    if text in ("ethernet", "roce", "eth"):
        return "Ethernet"
    raise ValueError(v)


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
    "gid_ip": (_to_ip, bool, "an IP address"),
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
    # one NIC and one transceiver, for the training projection's USD and MWh (analysis/nic_cost.py)
    "nic_price_usd": (_to_num, lambda x: x >= 0, "a number >= 0"),
    "nic_power_w": (_to_num, lambda x: x >= 0, "a number >= 0"),
    "optic_price_usd": (_to_num, lambda x: x >= 0, "a number >= 0"),
    "optic_power_w": (_to_num, lambda x: x >= 0, "a number >= 0"),
    "optics_per_nic": (_to_int, lambda x: x >= 0, "an integer >= 0"),
    "bench_python": (_to_str, bool, "a path"),
    "mpi_rsh_agent": (_to_str, bool, "a path"),
    "bench_netns": (_to_str, bool, "a network namespace name"),
    "telemetry_cpu_cgroup": (_to_str, bool, "a cgroup directory (the host's CPU time: a container, a lab host)"),
    "link_layer": (_to_link_layer, bool, "InfiniBand or Ethernet"),
    "traffic_class": (_to_int, lambda x: 0 <= x <= 255, "an integer 0..255"),
    # RCCL/NCCL network plugin (NCCL_NET_PLUGIN), e.g. librccl-anp.so for AMD Pollara (docs/collectives.md)
    "nccl_net_plugin": (_to_str, bool, "a network plugin name or library (NCCL_NET_PLUGIN)"),
    "launch_ssh_key": (_to_str, bool, "a path on the launch node"),
    "iperf3_version": (_to_version, bool, 'a quoted version such as "3.16" (unquoted, 3.20 reads as 3.2)'),
    "launch_known_hosts": (_to_str, bool, "a path on the launch node"),
    # the host's BMC, read from the controller for node power (telemetry/bmc.py, docs/power.md)
    "bmc_address": (_to_str, bool, "a BMC address or name"),
    "bmc_protocol": (lambda v: _to_str(v).lower(), lambda x: x in ("ipmi", "redfish"), "ipmi or redfish"),
    "bmc_port": (_to_int, lambda x: 1 <= x <= 65535, "a port number 1..65535"),
    "bmc_password_env": (_to_str, bool, "the name of an environment variable of the controller"),
    "bmc_password_file": (_to_str, bool, "a path on the controller"),
}
#: Variables that would put a secret into the inventory (and from there into logs and run records).
SECRET_VARS = {"bmc_password": "name an environment variable (bmc_password_env) or a file (bmc_password_file) that holds it"}
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
    for var, instead in SECRET_VARS.items():
        if out.get(var) is not None:
            raise ConfigError(f"host {host}: {var} must not be written in the inventory; {instead}", *where(var))
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
    """Host fields from Ansible's connection variables merged with ssh_config, as ssh would see them.

    Relative paths of the inventory resolve against ``base``; ``-F FILE`` in the SSH arguments
    names the config file, else ``~/.ssh/config`` is read when it exists.
    """
    var, conn = _first(values, "ansible_connection")
    conn = None if conn is None else str(conn).removeprefix("ansible.builtin.")
    if conn not in _CONNECTIONS:
        raise ConfigError(f"host {host}: ansible_connection={conn!r} is not supported (use ssh or local)",
                          *where(var))
    var, addr = _first(values, "ansible_host", "ansible_ssh_host")
    target = _checked(host, var, addr, where, _to_str, bool, "a host name or address") if addr is not None else host
    if _CONNECTIONS[conn]:
        return {"local": True, "address": target, "port": 22, "user": None, "strict_host_keys": True}
    # Ansible's own -o User/Port/IdentityFile come before the common and extra args: they win.
    options: dict[str, str] = {}
    var, user = _first(values, "ansible_user", "ansible_ssh_user")
    if user is not None:
        options["user"] = _checked(host, var, user, where, _to_str, bool, "a user name")
    var, port = _first(values, "ansible_port", "ansible_ssh_port")
    if port is not None:
        options["port"] = str(_checked(host, var, port, where, _to_int, lambda p: 1 <= p <= 65535, "a TCP port"))
    var, key = _first(values, "ansible_ssh_private_key_file", "ansible_private_key_file")
    if key is not None:
        options["identityfile"] = _local_path(_checked(host, var, key, where, _to_str, bool, "a path"), base)
    extra, config_arg, flags, args_var = _ssh_args(host, values, where)
    for k, v in extra.items():
        options.setdefault(k, v)
    if "userknownhostsfile" in options:
        options["userknownhostsfile"] = _local_path(options["userknownhostsfile"].split()[0], base)
    if "identityfile" in options:
        options["identityfile"] = _local_path(options["identityfile"], base)
    strict = options.get("stricthostkeychecking", "yes").lower()
    if strict not in ("yes", "ask", "no", "off", "accept-new"):
        raise ConfigError(f"host {host}: StrictHostKeyChecking={strict} is not understood "
                          "(use yes, no or accept-new)", *where(args_var))
    config = Path(_local_path(config_arg, base)) if config_arg else default_config()
    if config_arg and (config is None or not config.is_file()):
        raise ConfigError(f"host {host}: ssh config file {config} (-F) not found", *where(args_var))
    try:
        view = resolve(target, options, config, flags)
    except SSHConfigError as exc:
        raise ConfigError(f"host {host}: {exc}", *(where(args_var) if exc.option.lower() in options
                                                   else (str(config), None))) from None
    except OSError as exc:
        raise ConfigError(f"host {host}: cannot read ssh config: {exc.strerror}", str(config)) from None
    fields: dict[str, Any] = {
        "local": False, "address": view.address, "port": view.port, "user": view.user,
        "key_file": view.key_files[0] if view.key_files else None, "known_hosts": view.known_hosts,
        "proxy_jump": view.proxy_jump, "proxy_command": view.proxy_command,
        "strict_host_keys": (view.strict or "yes") not in ("no", "off", "accept-new"),
        "ssh": {"target": target, "config_file": view.config_file, "key_files": list(view.key_files),
                "connect_timeout": view.connect_timeout, "keepalive_s": view.keepalive_s,
                "keepalive_count": view.keepalive_count, "ignored": list(view.ignored)},
    }
    var, checking = _first(values, "ansible_host_key_checking", "ansible_ssh_host_key_checking")
    if checking is not None and str(checking).strip().lower() in ("false", "no", "off", "0"):
        fields["strict_host_keys"] = False
    return fields


def _ssh_args(host: str, values: Mapping[str, Any], where: Where) -> tuple[dict[str, str], str | None, list[str], str]:
    """Options, ``-F`` file and ignored flags of ansible_ssh_common_args then _extra_args (first wins)."""
    found: dict[str, str] = {}
    config: str | None = None
    flags: list[str] = []
    last = "ansible_ssh_common_args"
    for var in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        if values.get(var) is None:
            continue
        last = var if not found and config is None else last
        try:
            options, cfg, ignored = split_args(str(values[var]))
        except ValueError as exc:
            raise ConfigError(f"host {host}: {var}: {exc}", *where(var)) from None
        for k, v in options.items():
            found.setdefault(k, v)
        config = config or cfg
        flags += ignored
    return found, config, flags, last
