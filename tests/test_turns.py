"""tests/turns.py: an ``alone`` test waits for the tests running beside it and keeps new ones out;
an ``apart`` test does so for tests with real parts only."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

HOLDER = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from turns import turn
with turn({mode!r}, Path({lock!r}), Path({gate!r}), Path({real!r})):
    print("in", flush=True)
    sys.stdin.readline()
print("out", flush=True)
"""


class Holder:
    """A process that takes a turn and keeps it until told to leave."""

    def __init__(self, tmp: Path, mode: str) -> None:
        code = HOLDER.format(tests=str(Path(__file__).parent), mode=mode, lock=str(tmp / "lock"),
                             gate=str(tmp / "gate"), real=str(tmp / "real"))
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def wait_in(self) -> None:
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == "in\n"  # blocks until it holds its turn (hang guard: pytest's)

    def is_in(self, within: float) -> bool:
        """Whether it holds its turn within ``within`` seconds (it may not print before then)."""
        assert self.proc.stdout is not None
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        return bool(sel.select(within))

    def wait_blocked_on(self, path: Path) -> None:
        """Until the kernel lists it as a waiter for ``path``'s lock (``/proc/locks``: "->")."""
        inode = path.stat().st_ino
        deadline = time.monotonic() + 60  # hang guard
        while time.monotonic() < deadline:
            for line in Path("/proc/locks").read_text().splitlines():
                fields = line.split()
                if len(fields) >= 7 and fields[1] == "->" and fields[5] == str(self.proc.pid) \
                        and fields[6].rsplit(":", 1)[-1] == str(inode):
                    return
            time.sleep(0.05)
        pytest.fail(f"process {self.proc.pid} never waited on {path}")

    def leave(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        assert self.proc.wait(30) == 0


@pytest.fixture
def holders(tmp_path: Path):
    made: list[Holder] = []

    def make(mode: str) -> Holder:
        made.append(Holder(tmp_path, mode))
        return made[-1]

    yield make
    for h in made:
        h.proc.kill()
        h.proc.wait()


def test_tests_that_share_run_together(holders) -> None:
    a, b = holders("real"), holders("plain")
    a.wait_in()
    b.wait_in()  # both hold it at once
    a.leave()
    b.leave()


def test_alone_waits_for_the_running_test_and_new_ones_wait_for_it(holders, tmp_path: Path) -> None:
    running = holders("plain")
    running.wait_in()
    alone = holders("alone")
    alone.wait_blocked_on(tmp_path / "lock")  # the test beside it still runs; it holds the gate
    later = holders("real")
    later.wait_blocked_on(tmp_path / "gate")  # a new test does not slip in before the waiting alone one
    running.leave()
    alone.wait_in()
    assert not later.is_in(0.5)  # nor while it runs
    alone.leave()
    later.wait_in()
    later.leave()


def test_apart_keeps_tests_with_real_parts_out_and_lets_the_others_in(holders, tmp_path: Path) -> None:
    running = holders("real")
    running.wait_in()
    apart = holders("apart")
    apart.wait_blocked_on(tmp_path / "real")  # waits for the test with real parts beside it
    plain_early = holders("plain")
    plain_early.wait_blocked_on(tmp_path / "gate")  # none slips in before the waiting apart test
    running.leave()
    apart.wait_in()
    plain_early.wait_in()  # a test without real parts runs beside it
    real = holders("real")
    real.wait_blocked_on(tmp_path / "real")  # one with real parts waits ...
    plain = holders("plain")
    plain.wait_in()  # ... without holding the gate: the next test without real parts passes
    plain.leave()
    plain_early.leave()
    assert not real.is_in(0.5)
    apart.leave()
    real.wait_in()
    real.leave()


def test_the_vm_goes_first_and_the_tests_without_real_parts_next(tmp_path: Path) -> None:
    """The order turns.py gives: apart, plain, long lab tests longest first, other real, alone."""
    sys.path.insert(0, str(Path(__file__).parent))
    from turns import _turn_order

    class Item:
        def __init__(self, *marks: pytest.MarkDecorator) -> None:
            self.marks = {m.name: m.mark for m in marks}

        def get_closest_marker(self, name: str) -> pytest.Mark | None:
            return self.marks.get(name)

    items = {"alone": Item(pytest.mark.lab, pytest.mark.alone), "real": Item(pytest.mark.lab),
             "long60": Item(pytest.mark.lab, pytest.mark.long(60)), "plain": Item(),
             "long200": Item(pytest.mark.lab, pytest.mark.long(200)), "apart": Item(pytest.mark.rdma_vm, pytest.mark.apart)}
    order = sorted(items, key=lambda k: _turn_order(items[k]))  # type: ignore[arg-type]
    assert order == ["apart", "plain", "long200", "long60", "real", "alone"]


GROUPED = {
    "conftest.py": "import sys\nsys.path.insert(0, {tests!r})\nfrom turns import pytest_collection_modifyitems  # noqa\n",
    "test_one.py": "import os\n\n{tests_one}",
    "test_two.py": "import os\nimport pytest\n\npytestmark = pytest.mark.xdist_group('shared')\n\n{tests_two}",
    "test_three.py": "import os\nimport pytest\n\npytestmark = pytest.mark.xdist_group('shared')\n\n{tests_three}",
    # lab tests that share a module fixture (a lab) stay together; it is made once
    "test_four.py": "import os\nimport pytest\n\npytestmark = pytest.mark.lab\n\n"
                    "@pytest.fixture(scope='module')\ndef made():\n    with open({made!r}, 'a') as f:\n"
                    "        f.write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n\n{tests_four}",
}


def test_a_files_tests_and_a_named_group_each_run_on_one_worker(tmp_path: Path) -> None:
    """xdist's loadgroup with turns' default (a file is a group): the versions installed keep groups
    together (pytest 9.2 made xdist 3.8 ignore every group, and fixtures were made once per worker)."""
    log = tmp_path / "log"

    def tests(stem: str, n: int) -> str:
        return "".join(f"def test_{stem}_{i}():\n    with open({str(log)!r}, 'a') as f:\n"
                       f"        f.write('{stem} ' + os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n\n" for i in range(n))

    project = tmp_path / "p"
    project.mkdir()
    for name, text in GROUPED.items():
        (project / name).write_text(text.format(tests=str(Path(__file__).parent), tests_one=tests("one", 8),
                                                tests_two=tests("two", 4), tests_three=tests("three", 4),
                                                made=str(tmp_path / "made"),
                                                tests_four=tests("four", 6).replace("():", "(made):")))
    (project / "pytest.ini").write_text("[pytest]\nmarkers =\n    lab: a lab test\n")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p", "no:cacheprovider",
                          str(project)], capture_output=True, text=True, timeout=300, cwd=project)
    assert res.returncode == 0, res.stdout + res.stderr
    ran = [line.split() for line in log.read_text().splitlines()]
    assert len(ran) == 22
    workers = {stem: {w for s, w in ran if s == stem} for stem in ("one", "two", "three", "four")}
    assert len(workers["one"]) == 1, workers
    assert len(workers["two"] | workers["three"]) == 1, workers
    assert len(workers["four"]) == 1 and len((tmp_path / "made").read_text().splitlines()) == 1, workers
