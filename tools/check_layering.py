"""Fail when the layering check finds anything: import cycles, private names imported across modules,
files over 400 lines, or a package's private module imported from outside that package.

The check itself is ``shared/tools/layering.py`` (beside the clone: ``../shared``). It always exits 0
and ends with one summary line; this script runs it, prints its findings and exits 1 unless every count
in that line is 0 (or 2 when the tool is missing or prints no summary). CI runs it on the newest stack:

    python tools/check_layering.py [PACKAGE_DIR] [--tool PATH]
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT.parent / "shared" / "tools" / "layering.py"
SUMMARY = re.compile(
    r"^layering: (?P<cycles>\d+) cycles, (?P<private>\d+) private imports across modules, "
    r"(?P<long>\d+) files over \d+ lines, (?P<foreign>\d+) private modules taken across packages$"
)


def counts(output: str) -> dict[str, int] | None:
    """The four counts of the tool's last summary line, or None when it printed none."""
    for line in reversed(output.splitlines()):
        found = SUMMARY.match(line.strip())
        if found:
            return {name: int(n) for name, n in found.groupdict().items()}
    return None


def main(argv: list[str]) -> int:
    tool = TOOL
    if "--tool" in argv:
        i = argv.index("--tool")
        tool = Path(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    package = argv[0] if argv else str(ROOT / "nnx_lab")
    if not tool.is_file():
        print(f"check_layering: {tool} is missing (shared/tools beside the clone)", file=sys.stderr)
        return 2
    run = subprocess.run([sys.executable, str(tool), package], capture_output=True, text=True)
    print(run.stdout, end="")
    print(run.stderr, end="", file=sys.stderr)
    found = counts(run.stdout)
    if run.returncode != 0 or found is None:
        print(f"check_layering: {tool.name} exited {run.returncode} without its summary line", file=sys.stderr)
        return 2
    if any(found.values()):
        print("check_layering: failed, every count must be 0", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
