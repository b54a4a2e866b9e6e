"""The programs that the loopback lab and the project's tests run on this machine, each with the
Debian package that brings it: the one list of them.

``setup.sh`` installs every package named here (``tests/test_setup_packages.py`` checks it, and
finds commands that the tests or the lab run but this list lacks). ``bench lab up`` checks its own
before it makes anything, and a test session with ``BENCH_TESTS_REQUIRE_REAL_PARTS=1`` checks all
of them at its start, so that a missing package is named at once rather than by a crash a quarter
of an hour later. What benchmark *hosts* need is declared by each tool adapter (``ToolFacts``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass

#: Where root's programs are on Debian, searched besides ``PATH`` (a non-login root shell may lack sbin).
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Needed:
    """One program run by name, the Debian package that installs it, and who runs it."""

    command: str
    package: str
    used_by: str

    def describe(self) -> str:
        """``nft (Debian package nftables)``."""
        return f"{self.command} (Debian package {self.package})"


def _group(used_by: str, package: str, *commands: str) -> tuple[Needed, ...]:
    return tuple(Needed(c, package, used_by) for c in commands)


LAB = "the loopback lab"
COMMANDS: tuple[Needed, ...] = (
    # the lab itself (benchharness/lab): namespaces, veth, bridges, tc shaping, sshd per host
    *_group(LAB, "iproute2", "ip", "tc", "rdma"),
    *_group("tests/test_pasted_health_lab.py (snapshots of a lab host's TCP counters)", "iproute2", "nstat"),
    *_group(LAB, "openssh-server", "sshd"),
    *_group(LAB, "openssh-client", "ssh", "ssh-keygen"),
    *_group(LAB, "util-linux", "unshare", "nsenter", "setsid", "switch_root", "taskset"),
    *_group(LAB, "hostname", "hostname"),
    *_group(LAB, "dash", "sh"),
    *_group(LAB, "coreutils", "sleep", "mkdir", "timeout", "stdbuf", "printf", "true"),
    # what `bench run` runs on the lab's hosts (this machine's programs, inside the namespaces)
    *_group("the tools run on lab hosts", "iperf3", "iperf3"),
    *_group("the tools run on lab hosts", "perftest", "ib_write_bw", "ib_write_lat", "ib_read_bw",
            "ib_read_lat", "ib_send_bw", "ib_send_lat"),
    *_group("the tools run on lab hosts", "ucx-utils", "ucx_perftest", "ucx_info"),
    *_group("the tools run on lab hosts", "sockperf", "sockperf"),
    *_group("the tools run on lab hosts", "openmpi-bin", "mpirun"),
    *_group("the tools run on lab hosts", "python3-torch", "torchrun"),
    *_group("the tools run on lab hosts", "numactl", "numactl"),
    *_group("the tools run on lab hosts", "python3", "python3"),
    # what the probe reads on lab hosts
    *_group("the host probe", "pciutils", "lspci", "setpci"),
    *_group("the host probe", "ethtool", "ethtool"),
    *_group("the host probe", "hwloc", "lstopo-no-graphics"),
    *_group("the host probe", "lm-sensors", "sensors"),
    *_group("the host probe", "ibverbs-utils", "ibv_devinfo"),
    *_group("the host probe", "infiniband-diags", "ibstat"),
    # tests with real parts
    *_group("the fabric health tests (packet loss)", "nftables", "nft"),
    *_group("the BMC power tests (an IPMI BMC simulator) and bench run's IPMI power reads", "openipmi", "ipmi_sim", "sdrcomp"),
    *_group("the BMC power tests and bench run's IPMI power reads", "ipmitool", "ipmitool"),
    *_group("the Slurm tests", "slurm-wlm", "slurmctld", "slurmd", "srun", "salloc", "sinfo", "scancel"),
    *_group("the Slurm tests", "munge", "munged"),
    *_group("the browser tests", "chromium", "chromium"),
    *_group("the browser tests", "chromium-driver", "chromedriver"),
    *_group("the soft-RoCE VM tests", "qemu-system-x86", "qemu-system-x86_64"),
    *_group("the soft-RoCE VM tests", "cpio", "cpio"),
    *_group("the soft-RoCE VM tests", "kmod", "kmod", "modprobe"),
    *_group("the soft-RoCE VM tests", "bash", "bash"),
    *_group("the soft-RoCE VM tests", "libc-bin", "ldd"),
    *_group("the soft-RoCE VM tests", "mount", "mount", "umount"),
    *_group("the provisioning tests (a C build)", "make", "make"),
    *_group("the provisioning tests (a C build)", "gcc", "cc"),
    *_group("the provisioning tests", "dpkg", "dpkg-query"),
    *_group("the counter tests", "grep", "grep"),
)
BY_COMMAND: dict[str, Needed] = {n.command: n for n in COMMANDS}
LAB_UP = ("ip", "ssh-keygen", "unshare", "sshd", "sh", "hostname")
"""What ``bench lab up`` runs for any lab (``tc`` too when a link is shaped, ``rdma`` for rxe)."""


def package_of(command: str) -> str | None:
    """The Debian package that brings ``command`` (None: not on the list)."""
    needed = BY_COMMAND.get(command)
    return needed.package if needed else None


def missing(commands: Iterable[str] | None = None, path: str | None = None) -> list[Needed]:
    """Of ``commands`` (default: the whole list), those not installed, in list order. ``path``:
    where to look (default: ``PATH`` and Debian's system directories). A command not on the list
    is reported with package ``?``."""
    names = list(commands) if commands is not None else [n.command for n in COMMANDS]
    search = path if path is not None else f"{os.environ.get('PATH', '')}:{SYSTEM_PATH}"
    return [BY_COMMAND.get(c, Needed(c, "?", "")) for c in names if shutil.which(c, path=search) is None]


def describe_missing(needed: Iterable[Needed]) -> str:
    """``nft (Debian package nftables), make (Debian package make)``."""
    return ", ".join(n.describe() for n in needed)
