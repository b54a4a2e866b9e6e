"""Build hook: ship the top-level ``suites/`` inside the package, as ``benchharness/_suites``.

The product keeps its suites at the top of the repository (``suites/``), outside the Python
package; an installed (non-editable) copy would not have them. Building the wheel copies them in,
and ``config.suites.suite_dirs`` looks there first. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SUITES = Path(__file__).resolve().parent / "suites"


class BuildPyWithSuites(build_py):
    """``build_py`` that also copies ``suites/*.yaml`` to ``benchharness/_suites/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout's suites/ directly
        target = Path(self.build_lib) / "benchharness" / "_suites"
        target.mkdir(parents=True, exist_ok=True)
        for path in sorted(SUITES.glob("*.yaml")):
            shutil.copy2(path, target / path.name)


setup(cmdclass={"build_py": BuildPyWithSuites})
