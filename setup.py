"""Everything about the distribution is in pyproject.toml; this file only ships one start-up hook.

``zz_agent_rewind_otel.pth`` must sit at the top of site-packages (a ``.pth`` file runs at
interpreter start-up only there), which pyproject.toml alone cannot express. It makes
``REWIND_RECORD`` / ``REWIND_REPLAY`` work under plain ``python`` and fail closed under
``opentelemetry-instrument`` (see ``rewind/_autostart/startup.py``). The name sorts late so
the ``.pth`` files that make packages importable (editable installs) run first.
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH = "zz_agent_rewind_otel.pth"
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rewind", "_autostart", PTH)


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


setup(cmdclass={"build_py": BuildPyWithPth})
