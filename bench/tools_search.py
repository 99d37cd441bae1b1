"""Tools search: the ``.gitignore``-aware walk and ``grep`` over a generated source tree.

The tree: 600 Python-like modules of ~4 KB under ``src/`` (40 packages x 3 directories x 5), plus
1,200 more under an ignored ``build/`` and ``node_modules/``, inside a git repository with nothing
committed. References are git itself on the same tree: ``git ls-files --others --cached
--exclude-standard`` for the walk and ``git grep --untracked`` for the search (both C, both
honouring ``.gitignore``). Figures are medians of 5 runs; the ratio is ours / git's.
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _summary import record
from tether.tools import GrepParams, Workspace
from tether.tools.files import walk_files
from tether.tools.grep import grep

RUNS = 5


def make_tree(root: Path) -> int:
    body = "".join(
        f"def function_{i}(value):\n    return compute(value, factor={i % 7})\n\n" for i in range(60)
    )
    count = 0
    for top in ("src", "build", "node_modules"):
        for package in range(40):
            for sub in ("core", "util", "io"):
                directory = root / top / f"pkg{package}" / sub
                directory.mkdir(parents=True)
                for module in range(5):
                    marker = "needle_marker\n" if (package + module) % 9 == 0 else ""
                    (directory / f"mod{module}.py").write_text(body + marker)
                    count += 1
    (root / ".gitignore").write_text("build/\nnode_modules\n*.pyc\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return count


def median_seconds(action: Callable[[], object]) -> float:
    times: list[float] = []
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=False).stdout


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        total = make_tree(root)
        workspace = Workspace(root)
        real = workspace.real_root
        ours_files = list(walk_files(workspace, real))
        git_files = git(root, "ls-files", "--others", "--cached", "--exclude-standard").splitlines()
        assert len(ours_files) == len(git_files), (len(ours_files), len(git_files))
        params = GrepParams(pattern=r"needle_\w+", limit=1000)
        ours_hits = grep(workspace, params).details["matches"]
        git_hits = len(git(root, "grep", "-n", "--untracked", "-E", r"needle_\w+").splitlines())
        assert ours_hits == git_hits, (ours_hits, git_hits)

        walk = median_seconds(lambda: list(walk_files(workspace, real)))
        walk_ref = median_seconds(lambda: git(root, "ls-files", "--others", "--cached", "--exclude-standard"))
        search = median_seconds(lambda: grep(workspace, params))
        search_ref = median_seconds(lambda: git(root, "grep", "-n", "--untracked", "-E", r"needle_\w+"))

    print(f"tree: {total} files written, {len(ours_files)} not ignored; {ours_hits} matches")
    print(f"{'operation':<28}{'ours ms':>10}{'git ms':>10}{'ratio':>8}")
    for name, mine, ref in (
        ("walk (.gitignore aware)", walk, walk_ref),
        ("grep needle_\\w+", search, search_ref),
    ):
        print(f"{name:<28}{mine * 1000:>10.1f}{ref * 1000:>10.1f}{mine / ref:>8.2f}")
        record(name, mine / ref, "git")


if __name__ == "__main__":
    main()
