"""``tests/`` mirrors the package: a test module lives in the folder of the package folder it tests.

``tests/<folder>/`` holds the tests of ``rewind/<folder>/``; ``tests/instrumentors/`` and
``tests/exporters/`` those of ``instrumentors/`` and ``exporters/``. Only the tests of the
repository as a whole sit flat in ``tests/`` (``PROJECT_WIDE``), and the few suites that are
no single package folder's have folders of their own (``SUITES``). CONTRIBUTING.md, "Where
tests go", says the same for people.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent

#: Tests whose subject is the repository, not one package folder: the only flat test modules.
PROJECT_WIDE = {
    "test_architecture.py",  # the layers contract over the whole package
    "test_bench_smoke.py",  # benchmarks/
    "test_chaos_runner.py",  # tests/chaos/, the chaos suite's verdicts
    "test_ci_skips.py",  # .ci/
    "test_corpus.py",  # old recordings through today's encoder, writer, readers and replay
    "test_docs.py",  # the samples of README.md and docs/
    "test_packaging.py",  # the sdist and the wheel
    "test_readme.py",  # make demo
    "test_tests_layout.py",  # tests/ itself
}

#: Folders of tests/ that are a suite of their own rather than one package folder's tests.
SUITES = {
    "frameworks": "the real-agent battery (make test-frameworks)",
    "installed": "the installed wheel and sdist, run from an empty folder (make test-installed)",
    "pytest_plugin": "the pytest plugin, driving example projects through pytester",
    "real_traffic": "replays of responses recorded from the real providers",
}


def package_folders() -> set[str]:
    """The folders a test folder may mirror: rewind's subpackages, instrumentors/, exporters/."""
    return {init.parent.name for init in (REPO / "rewind").glob("*/__init__.py")} | {"instrumentors", "exporters"}


def every_test_module() -> list[Path]:
    """Every ``test_*.py`` under tests/ (the proxy's npm packages aside)."""
    return [path for path in TESTS.rglob("test_*.py") if "node_modules" not in path.parts]


def test_only_project_wide_tests_sit_flat_in_tests() -> None:
    flat = {path.name for path in TESTS.glob("test_*.py")}
    misplaced = sorted(flat - PROJECT_WIDE)
    assert not misplaced, f"move each into tests/<package folder>/ of what it tests (CONTRIBUTING.md): {misplaced}"
    assert flat == PROJECT_WIDE, f"PROJECT_WIDE names tests that are gone: {sorted(PROJECT_WIDE - flat)}"


def test_every_test_folder_mirrors_a_package_folder_or_is_a_named_suite() -> None:
    folders = {path.relative_to(TESTS).parts[0] for path in every_test_module() if path.parent != TESTS}
    strays = sorted(folders - package_folders() - SUITES.keys())
    assert not strays, f"tests/<folder>/ must be named after the package folder it tests: {strays}"


def test_no_two_test_modules_share_a_basename() -> None:
    # tests/ folders have no __init__.py, so pytest imports each test module by its basename:
    # a second module of the same name fails to import, or is collected in place of the first.
    counts = Counter(path.name for path in every_test_module())
    assert {name: n for name, n in counts.items() if n > 1} == {}
