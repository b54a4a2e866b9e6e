"""The SSH view OpenSSH (and so Ansible) has of a host: inventory options over ``ssh_config``.

Ansible runs ``ssh -o User=.. -o Port=.. -o IdentityFile=.. <common/extra args> ansible_host``;
OpenSSH takes the first value it obtains for an option, command line before the config file.
paramiko's SSHConfig has the same rule, so the inventory's options go in as a leading
``Host *`` block in front of the config file, and one ``lookup`` gives the merged view, with
``%h %p %r`` of ProxyCommand/ProxyJump expanded by paramiko.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Options the SSH transport acts on.
HONOURED = frozenset({
    "host", "hostname", "user", "port", "identityfile", "proxyjump", "proxycommand", "connecttimeout",
    "serveraliveinterval", "serveralivecountmax", "userknownhostsfile", "stricthostkeychecking",
})
#: Options that change nothing the harness needs (one connection per host is kept open anyway,
#: it never prompts, it offers only the keys it is given when any are given).
NO_EFFECT = frozenset({
    "identitiesonly", "batchmode", "loglevel", "controlmaster", "controlpath", "controlpersist",
    "passwordauthentication", "kbdinteractiveauthentication", "challengeresponseauthentication",
    "pubkeyauthentication", "preferredauthentications", "hashknownhosts", "compression",
    "forwardx11", "forwardx11trusted", "requesttty", "updatehostkeys", "checkhostip",
    "addkeystoagent", "usekeychain", "visualhostkey", "gssapiauthentication",
})
#: Command-line flags of ssh that are either read here (-o -J -F) or change nothing above.
_FLAGS_WITH_VALUE = {"-o", "-J", "-F", "-i", "-l", "-p", "-E", "-c", "-m", "-b", "-D", "-L", "-R", "-W",
                     "-O", "-S", "-Q", "-w", "-B", "-e", "-I"}
_FLAGS_NO_EFFECT = {"-q", "-v", "-vv", "-vvv", "-C", "-T", "-t", "-tt", "-n", "-x", "-4", "-6", "-K",
                    "-k", "-N", "-a"}


@dataclass(frozen=True)
class SSHView:
    """Where and how a host is reached over SSH, after the inventory and ssh_config are merged."""

    target: str
    address: str
    port: int
    user: str | None
    key_files: tuple[str, ...] = ()
    proxy_jump: str | None = None
    proxy_command: str | None = None
    known_hosts: str | None = None
    strict: str | None = None
    connect_timeout: float | None = None
    keepalive_s: float | None = None
    keepalive_count: int = 3
    config_file: str | None = None
    #: Options and flags that were given but that the transport cannot honour.
    ignored: tuple[str, ...] = field(default=())


class SSHConfigError(ValueError):
    """A value in the SSH options or the config file that is not usable; ``option`` names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


def split_args(text: str) -> tuple[dict[str, str], str | None, list[str]]:
    """``-o K=V``, ``-J``, ``-F`` of an ssh argument string: (options, config file, ignored flags).

    Option keys are lower case and, as in ssh, the first value of an option wins.
    Raises ValueError on bad quoting or a flag without its value.
    """
    argv = shlex.split(text)
    options: dict[str, str] = {}
    config: str | None = None
    ignored: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        flag, value = arg[:2], arg[2:]
        if flag not in _FLAGS_WITH_VALUE:
            if arg not in _FLAGS_NO_EFFECT:
                ignored.append(arg)
            continue
        if not value:
            if i == len(argv):
                raise ValueError(f"{flag} needs a value")
            value, i = argv[i], i + 1
        if flag == "-o":
            key, sep, val = value.partition("=")
            if not sep:
                key, _, val = value.strip().partition(" ")
            options.setdefault(key.strip().lower(), val.strip())
        elif flag == "-J":
            options.setdefault("proxyjump", value)
        elif flag == "-F":
            config = config or value
        elif flag == "-i":
            options.setdefault("identityfile", value)
        elif flag == "-l":
            options.setdefault("user", value)
        elif flag == "-p":
            options.setdefault("port", value)
        else:
            ignored.append(f"{flag} {value}")
    return options, config, ignored


def default_config() -> Path | None:
    """The user's ``~/.ssh/config`` if there is one (what ssh reads without ``-F``)."""
    path = Path.home() / ".ssh" / "config"
    return path if path.is_file() else None


def _quote(value: str) -> str:
    return f'"{value}"' if any(c.isspace() for c in value) and not value.startswith('"') else value


def _load(options: Mapping[str, str], config_file: Path | None) -> Any:
    import paramiko

    lead = "".join(f"  {k} {_quote(v) if k in ('identityfile', 'userknownhostsfile') else v}\n"
                   for k, v in options.items())
    text = config_file.read_text() if config_file else ""
    return paramiko.SSHConfig.from_text(("Host *\n" + lead + "\n" if lead else "") + text)


def _number(found: Mapping[str, Any], key: str, name: str, positive: bool = False) -> float | None:
    if key not in found:
        return None
    try:
        value = float(str(found[key]).split()[0])
    except (ValueError, IndexError):
        raise SSHConfigError(name, f"{name}={found[key]!r} is not a number") from None
    if value < 0 or (positive and value == 0):
        raise SSHConfigError(name, f"{name}={found[key]!r} must be {'> 0' if positive else '>= 0'}")
    return value


def _none_or(value: Any) -> str | None:
    text = str(value).strip() if value is not None else ""
    return None if not text or text.lower() == "none" else text


def resolve(target: str, options: Mapping[str, str], config_file: Path | None,
            ignored_flags: Sequence[str] = ()) -> SSHView:
    """The merged view of ``target`` (ansible_host or the inventory name).

    ``options``: the inventory's options, lower-case keys (``user``, ``port``, ``identityfile``
    from ansible_user/port/key and every ``-o``); they take precedence over ``config_file``.
    Raises SSHConfigError naming the option that is unusable, OSError if the file is unreadable.
    """
    found = dict(_load(options, config_file).lookup(target))
    port = _number(found, "port", "Port", positive=True) or 22
    if port != int(port) or port > 65535:
        raise SSHConfigError("Port", f"Port={found['port']!r} is not a TCP port")
    jump, command = _none_or(found.get("proxyjump")), _none_or(found.get("proxycommand"))
    if jump and command:  # ssh uses the one obtained first: the inventory's, else ProxyJump
        command = command if "proxycommand" in options and "proxyjump" not in options else None
        jump = jump if command is None else None
    count = _number(found, "serveralivecountmax", "ServerAliveCountMax")
    known = str(found["userknownhostsfile"]).split()[0] if found.get("userknownhostsfile") else None
    return SSHView(
        target=target, address=str(found.get("hostname") or target), port=int(port),
        user=str(found["user"]) if found.get("user") else None,
        key_files=tuple(str(Path(k).expanduser()) for k in found.get("identityfile") or ()),
        proxy_jump=jump, proxy_command=command,
        known_hosts=str(Path(known).expanduser()) if known else None,
        strict=str(found["stricthostkeychecking"]).lower() if found.get("stricthostkeychecking") else None,
        connect_timeout=_number(found, "connecttimeout", "ConnectTimeout", positive=True),
        keepalive_s=_number(found, "serveraliveinterval", "ServerAliveInterval") or None,
        keepalive_count=int(count) if count is not None and count >= 1 else 3,
        config_file=str(config_file) if config_file else None,
        ignored=tuple(sorted(k for k in found if k not in HONOURED | NO_EFFECT)) + tuple(ignored_flags),
    )


def parse_jump(spec: str) -> tuple[str | None, str, int | None]:
    """``[user@]host[:port]`` (or ``[v6]:port``, ``ssh://user@host:port``) of one ProxyJump hop."""
    spec = spec.strip().removeprefix("ssh://")
    user = None
    if "@" in spec:
        user, spec = spec.rsplit("@", 1)
    port: int | None = None
    host = spec
    if spec.startswith("[") and "]" in spec:
        host, _, rest = spec[1:].partition("]")
        port = int(rest[1:]) if rest.startswith(":") else None
    elif spec.count(":") == 1:
        host, port_text = spec.split(":")
        port = int(port_text)
    return user or None, host, port


def hop_view(spec: str, config_file: str | None) -> SSHView:
    """One ProxyJump hop as ssh reaches it: the hop's own entry of the config file, spec first."""
    user, host, port = parse_jump(spec)
    options = {k: v for k, v in (("user", user), ("port", str(port) if port else None)) if v}
    return resolve(host, options, Path(config_file) if config_file else None)


def warning_line(views: Mapping[str, Sequence[str]]) -> str | None:
    """One warning naming every option not honoured, with the hosts it applies to (None: none)."""
    by_option: dict[str, list[str]] = {}
    for host, ignored in views.items():
        for option in ignored:
            by_option.setdefault(option, []).append(host)
    if not by_option:
        return None
    parts = [f"{opt} ({', '.join(hosts[:3])}{' ...' if len(hosts) > 3 else ''})"
             for opt, hosts in sorted(by_option.items())]
    return "warning: SSH options not honoured by bench (ignored): " + "; ".join(parts)
