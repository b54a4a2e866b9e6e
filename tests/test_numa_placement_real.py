"""Real Open MPI places the ranks the planner's mpirun line asks for on a DGX-shaped topology.

This machine has one NUMA node and two CPUs, so mpirun is given a synthetic hwloc topology
(``--mca hwloc_base_topo_file``): two packages, one NUMA node each, 56 cores each, made by hwloc's
own ``lstopo --input "pack:2 numa:1 core:56 pu:1(indexes=...)"``. The PU indexes put this
machine's CPU 0 in NUMA node 0 and CPU 1 in NUMA node 1, so Open MPI really binds each rank
(``hwloc_set_cpubind``) and the kernel's ``Cpus_allowed_list`` of the rank says which NUMA node
it got. (``--report-bindings`` prints an empty binding for a synthetic topology here, so the
ranks report their affinity themselves.) The placement flags come from ``bench plan`` of the
allreduce suite on inventories/dgx-b200-8rail.ini; the old ``ppr:8:node`` is shown to be wrong.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from benchharness.config.inventory import load_inventory
from benchharness.config.suites import load_suite
from benchharness.planning.plan import build_plan
from benchharness.tools import get_tool

ROOT = Path(__file__).resolve().parents[1]
CORES = 56
# NUMA 0 holds PU 0 and 2..56, NUMA 1 holds PU 1 and 57..111: on this 2-CPU machine the
# binding of a rank to NUMA n leaves it CPU n.
INDEXES = ",".join(map(str, [0, *range(2, CORES + 1), 1, *range(CORES + 1, 2 * CORES)]))
REPORT = 'echo "$OMPI_COMM_WORLD_LOCAL_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"'

pytestmark = pytest.mark.skipif(not (shutil.which("mpirun") and shutil.which("lstopo-no-graphics")
                                     and len(os.sched_getaffinity(0)) >= 2),
                                reason="needs Open MPI, hwloc's lstopo (setup.sh installs both) and 2 CPUs")


@pytest.fixture(scope="module")
def topology(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hwloc") / "dgx-2x56.xml"
    xml = subprocess.run(["lstopo-no-graphics", "--input", f"pack:2 numa:1 core:{CORES} pu:1(indexes={INDEXES})",
                          "--of", "xml"], capture_output=True, text=True, check=True, timeout=60).stdout
    assert xml.count('type="NUMANode"') == 2 and xml.count('type="Core"') == 2 * CORES
    path.write_text(xml)
    return path


def planned_placement() -> list[str]:
    """``--map-by X --bind-to Y`` of the allreduce plan on the 8-rail DGX inventory."""
    inv = load_inventory(str(ROOT / "inventories" / "dgx-b200-8rail.ini"))
    plan = build_plan(load_suite("allreduce"), inv.hosts, inventory=inv)
    (cmd,) = get_tool(plan.steps[0].tool).commands(plan.steps[0])
    argv = list(cmd.argv)
    out = []
    for flag in ("--map-by", "--bind-to"):
        out += [flag, argv[argv.index(flag) + 1]]
    return out


def gpu_numa() -> list[int]:
    """NUMA node of GPU 0..7 as the inventory says (the rail beside each GPU)."""
    host = load_inventory(str(ROOT / "inventories" / "dgx-b200-8rail.ini")).hosts[0]
    by_gpu = {g: r.numa_node for r in host.rails for g in r.nearest_gpus}
    return [int(by_gpu[g]) for g in range(8)]  # type: ignore[arg-type]


def bound_nodes(topology: Path, placement: list[str]) -> list[int]:
    """NUMA node each local rank 0..7 was bound to by real mpirun (CPU n = NUMA n here)."""
    argv = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "hwloc_base_topo_file", str(topology),
            "--mca", "btl", "self", "-np", "8", "-H", "localhost:8", *placement, "sh", "-c", REPORT]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    got = dict(line.split() for line in res.stdout.splitlines() if line.strip())
    assert sorted(map(int, got)) == list(range(8)), res.stdout
    return [int(got[str(r)]) for r in range(8)]


def test_each_rank_runs_on_its_gpus_numa_node(topology: Path) -> None:
    placement = planned_placement()
    assert placement == ["--map-by", "ppr:4:numa", "--bind-to", "numa"]
    assert bound_nodes(topology, placement) == gpu_numa() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_the_old_per_node_mapping_alternates_numa_nodes(topology: Path) -> None:
    # what the issue saw: ranks of GPUs 1 and 3 (NUMA 0) on NUMA 1
    assert bound_nodes(topology, ["--map-by", "ppr:8:node", "--bind-to", "numa"]) == [0, 1, 0, 1, 0, 1, 0, 1]
