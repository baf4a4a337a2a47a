"""Count the skips of each suite CI ran and fail on any skip the allow-list does not expect.

    python .ci/skips.py REPORTS_DIR [.ci/expected-skips]

Reads every ``REPORTS_DIR/<suite>.xml`` (pytest's ``--junitxml``; the Makefile writes them
when ``REPORTS`` is set) and prints, per suite, its test and skip counts, then each skip
reason that ``.ci/expected-skips`` does not allow, with the tests it skipped. Exit status 0
when every skip is expected, 1 otherwise, 2 when there is no report to read.
"""

from __future__ import annotations

import fnmatch
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def allow_list(path: Path) -> list[tuple[str, re.Pattern[str]]]:
    rules = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            suite, reason = line.split(None, 1)
            rules.append((suite, re.compile(reason.strip())))
    return rules


def skips(report: Path) -> tuple[int, list[tuple[str, str]]]:
    """(number of tests, [(test, skip reason)]) of one junit file."""
    cases = ET.parse(report).getroot().iter("testcase")
    total, skipped = 0, []
    for case in cases:
        total += 1
        for skip in case.findall("skipped"):
            reason = skip.get("message") or skip.text or ""
            skipped.append((f"{case.get('classname')}::{case.get('name')}", reason))
    return total, skipped


def expected(suite: str, reason: str, rules: list[tuple[str, re.Pattern[str]]]) -> bool:
    return any(fnmatch.fnmatch(suite, glob) and pattern.search(reason) for glob, pattern in rules)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    reports = sorted(Path(argv[0]).glob("*.xml"))
    rules = allow_list(Path(argv[1]) if len(argv) > 1 else HERE / "expected-skips")
    if not reports:
        print(f"no junit report in {argv[0]}: did the suites run with REPORTS={argv[0]}?", file=sys.stderr)
        return 2
    unexpected = 0
    print(f"{'suite':<32} {'tests':>6} {'skipped':>8} {'unexpected':>11}")
    for report in reports:
        total, skipped = skips(report)
        bad = [(test, reason) for test, reason in skipped if not expected(report.stem, reason, rules)]
        unexpected += len(bad)
        print(f"{report.stem:<32} {total:>6} {len(skipped):>8} {len(bad):>11}")
        for reason, count in Counter(reason for _, reason in bad).most_common():
            tests = [test for test, why in bad if why == reason]
            print(f"  UNEXPECTED x{count}: {reason}\n    e.g. {tests[0]}")
    if unexpected:
        print(
            f"{unexpected} unexpected skip(s): install what they need in the suite's make target, "
            "or allow the reason in .ci/expected-skips with why",
            file=sys.stderr,
        )
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
