"""Everything about the distribution is in pyproject.toml except two things it cannot express.

**Which packages ship.** They are discovered, never listed: every folder under ``rewind/`` is a
package (``rewind.report.static`` too, which holds the report's template, CSS and scripts), and
the top-level folders ``instrumentors/`` and ``exporters/`` ship as ``rewind.instrumentors`` and
``rewind.exporters`` with whatever subpackages they grow. ``packages.find`` in pyproject.toml
finds packages under the name of their folder and cannot rename one, hence this discovery here;
the folder mapping itself stays in pyproject.toml's ``package-dir``. A hand-written list once
shipped a wheel without ``rewind.what_if`` (``tests/test_packaging.py`` builds one and checks it).

**The start-up hook.** ``zz_agent_rewind_otel.pth`` must sit at the top of site-packages (a
``.pth`` file runs at interpreter start-up only there). It makes ``REWIND_RECORD`` /
``REWIND_REPLAY`` work under plain ``python`` and fail closed under ``opentelemetry-instrument``
(see ``rewind/_autostart/startup.py``). The name sorts late so the ``.pth`` files that make
packages importable (editable installs) run first.
"""

from __future__ import annotations

import os

from setuptools import find_namespace_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PTH = "zz_agent_rewind_otel.pth"
SOURCE = os.path.join(HERE, "rewind", "_autostart", PTH)
# Top-level folders installed as subpackages of rewind (pyproject.toml's package-dir says the same).
MAPPED = {"rewind.instrumentors": "instrumentors", "rewind.exporters": "exporters"}
NOT_PACKAGES = ["__pycache__", "*.__pycache__", "*.__pycache__.*"]


def discovered_packages() -> list[str]:
    """Every package of the distribution, found on disk: rewind's folders, then the mapped ones."""
    packages = find_namespace_packages(where=HERE, include=["rewind", "rewind.*"], exclude=NOT_PACKAGES)
    for package, folder in MAPPED.items():
        inner = find_namespace_packages(where=os.path.join(HERE, folder), exclude=NOT_PACKAGES)
        packages += [package, *(f"{package}.{name}" for name in inner)]
    return sorted(packages)


class BuildPyWithPth(build_py):
    """build_py, plus the start-up hook at the root of the wheel (regular and editable)."""

    def run(self) -> None:
        super().run()
        self.copy_file(SOURCE, os.path.join(self.build_lib, PTH), preserve_mode=False)
        if getattr(self, "editable_mode", False):
            # An editable wheel takes its root files from install_lib, not from build_lib.
            install = self.get_finalized_command("install")
            self.copy_file(SOURCE, os.path.join(install.install_lib, PTH), preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), os.path.join(self.build_lib, PTH)]


setup(packages=discovered_packages(), cmdclass={"build_py": BuildPyWithPth})
