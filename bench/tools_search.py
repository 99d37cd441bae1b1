"""Tools search: the ``.gitignore``-aware walk and ``grep`` over a generated source tree.

The tree: 600 Python-like modules of ~4 KB under ``src/`` (40 packages x 3 directories x 5), plus
1,200 more under an ignored ``build/`` and ``node_modules/``, inside a git repository with nothing
committed. References are git itself on the same tree: ``git ls-files --others --cached
--exclude-standard`` for the walk and ``git grep --untracked`` for the search (both C, both
honouring ``.gitignore``). Figures are medians of 5 interleaved runs; the ratio is ours / git's,
taken per run (median, range).
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _summary import interleaved, record_paired
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


def seconds(action: Callable[[], object]) -> Callable[[], float]:
    """A measure: the wall time of one call of ``action`` (git runs in a process of its own)."""

    def measure() -> float:
        start = time.perf_counter()
        action()
        return time.perf_counter() - start

    return measure


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
        found = grep(workspace, params).details
        assert found is not None
        ours_hits = found["matches"]
        git_hits = len(git(root, "grep", "-n", "--untracked", "-E", r"needle_\w+").splitlines())
        assert ours_hits == git_hits, (ours_hits, git_hits)

        walk, walk_ref, search, search_ref = interleaved(
            [
                seconds(lambda: list(walk_files(workspace, real))),
                seconds(lambda: git(root, "ls-files", "--others", "--cached", "--exclude-standard")),
                seconds(lambda: grep(workspace, params)),
                seconds(lambda: git(root, "grep", "-n", "--untracked", "-E", r"needle_\w+")),
            ],
            RUNS,
        )

    print(f"tree: {total} files written, {len(ours_files)} not ignored; {ours_hits} matches")
    print(f"{'operation':<28}{'ours ms':>10}{'git ms':>10}{'ratio (range)':>20}")
    for name, mine, ref in (
        ("walk (.gitignore aware)", walk, walk_ref),
        ("grep needle_\\w+", search, search_ref),
    ):
        paired = record_paired(name, mine, ref, "git")
        ours_ms, git_ms = statistics.median(mine) * 1000, statistics.median(ref) * 1000
        print(
            f"{name:<28}{ours_ms:>10.1f}{git_ms:>10.1f}"
            f"{statistics.median(paired):>8.2f} ({min(paired):.2f}-{max(paired):.2f})"
        )


if __name__ == "__main__":
    main()
