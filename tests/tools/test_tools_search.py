from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from tools_support import call, details_of, text_of

from tether.errors import ToolError
from tether.tools import Workspace, create_find_tool, create_grep_tool, create_ls_tool
from tether.tools.files import walk_files
from tether.tools.sandbox import SandboxPolicy, secret_paths

TREE = [
    "README.md",
    "main.py",
    "debug.log",
    "build/out.o",
    "build/keep.txt",
    "src/app.py",
    "src/app.pyc",
    "src/gen/schema.py",
    "src/lib/util.py",
    "src/lib/notes.log",
    "docs/guide.md",
    "docs/build/page.html",
    "node_modules/pkg/index.js",
    ".hidden/config",
    "a/b/c/deep.py",
    "weird name.txt",
]
GITIGNORES = {
    ".gitignore": "# comment\n*.log\n!src/lib/notes.log\n/build/\nnode_modules\n*.py[cod]\n",
    "src/.gitignore": "gen/\n",
    "docs/.gitignore": "build\n",
}


def make_tree(root: Path, files: list[str], ignores: dict[str, str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"contents of {name}\nneedle in {name}\n")
    for name, text in ignores.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def git_visible(root: Path) -> set[str]:
    """The oracle: files git itself considers not ignored."""
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    listed = subprocess.run(
        ["git", "ls-files", "--others", "--cached", "--exclude-standard", "-z"],
        cwd=root,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root)},
    ).stdout.decode()
    return {name for name in listed.split("\0") if name}


def ours(workspace: Workspace, root: Path) -> set[str]:
    return {path.relative_to(root.resolve()).as_posix() for path in walk_files(workspace, root.resolve())}


def test_walk_matches_git_on_a_realistic_tree(workspace: Workspace, root: Path) -> None:
    make_tree(root, TREE, GITIGNORES)
    expected = git_visible(root)
    assert "src/lib/notes.log" in expected and "debug.log" not in expected  # the oracle is sane
    assert ours(workspace, root) == expected


SEGMENTS = ["a", "b", "x.py", "y.txt", "z.log"]
PATTERN_PARTS = st.sampled_from(["a", "b", "*", "**", "x.py", "*.py", "?.txt", "[xy].*", "z.log", "*.log"])


@st.composite
def ignore_lines(draw: st.DrawFn) -> str:
    parts = draw(st.lists(PATTERN_PARTS, min_size=1, max_size=3))
    line = "/".join(parts)
    if draw(st.booleans()):
        line = "/" + line
    if draw(st.integers(0, 4)) == 0:
        line += "/"
    if draw(st.integers(0, 3)) == 0:
        line = "!" + line
    return line


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(ignore_lines(), min_size=1, max_size=5),
    nested=st.lists(ignore_lines(), max_size=3),
)
def test_walk_matches_git_on_generated_rules(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], nested: list[str]
) -> None:
    root = tmp_path_factory.mktemp("gen")
    files = [
        f"{d1}/{d2}/{leaf}" for d1 in ("a", "b") for d2 in ("a", "b") for leaf in SEGMENTS[2:]
    ] + SEGMENTS[2:]
    ignores = {".gitignore": "\n".join(lines) + "\n"}
    if nested:
        ignores["a/.gitignore"] = "\n".join(nested) + "\n"
    make_tree(root, files, ignores)
    assert ours(Workspace(root), root) == git_visible(root), (lines, nested)


async def test_grep_respects_gitignore_and_reports_path_line_text(workspace: Workspace, root: Path) -> None:
    make_tree(root, TREE, GITIGNORES)
    result = await call(create_grep_tool(workspace), pattern="needle in")
    lines = text_of(result).splitlines()
    expected = sorted(name for name in git_visible(root) if not name.endswith(".gitignore"))
    assert sorted(line.split(":", 1)[0] for line in lines) == expected
    assert "src/app.py:2:needle in src/app.py" in lines
    assert details_of(result)["matches"] == len(expected)


async def test_grep_glob_case_literal_and_context(workspace: Workspace, root: Path) -> None:
    (root / "src").mkdir()
    (root / "src/a.py").write_text("one\nTwo(x)\nthree\nfour\nfive\nsix two(x)\n")
    (root / "b.txt").write_text("two(x)\n")
    tool = create_grep_tool(workspace)
    text = text_of(await call(tool, pattern="two(x)", literal=True, ignore_case=True, glob="*.py"))
    assert text == "src/a.py:2:Two(x)\nsrc/a.py:6:six two(x)"
    text = text_of(await call(tool, pattern=r"^t", context=1, path="src"))
    assert text == "src/a.py-2-Two(x)\nsrc/a.py:3:three\nsrc/a.py-4-four"
    text = text_of(await call(tool, pattern="two", glob="src/**"))
    assert text == "src/a.py:6:six two(x)"


async def test_grep_limit_adds_a_note(workspace: Workspace, root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * 50)
    result = await call(create_grep_tool(workspace), pattern="hit", limit=10)
    text = text_of(result)
    assert text.count("many.txt:") == 10
    assert "[Results stopped after 10 matches" in text
    assert details_of(result)["truncated"] is True


async def test_grep_skips_binary_files_and_handles_bad_input(workspace: Workspace, root: Path) -> None:
    (root / "bin.dat").write_bytes(b"needle\x00\x01")
    tool = create_grep_tool(workspace)
    assert text_of(await call(tool, pattern="needle")) == "No matches for 'needle' in .."
    with pytest.raises(ToolError, match=re.escape("Invalid regular expression '(unclosed'")):
        await call(tool, pattern="(unclosed")
    with pytest.raises(ToolError, match="Path not found: nowhere"):
        await call(tool, pattern="x", path="nowhere")


async def test_grep_and_find_do_not_follow_links_out_of_the_workspace(
    workspace: Workspace, root: Path
) -> None:
    secret = root.parent / "secret.txt"
    secret.write_text("needle outside\n")
    (root / "link.txt").symlink_to(secret)
    (root / "inside.txt").write_text("needle inside\n")
    assert text_of(await call(create_grep_tool(workspace), pattern="needle")) == "inside.txt:1:needle inside"
    assert text_of(await call(create_find_tool(workspace), pattern="*.txt")) == "inside.txt"


async def test_find_by_name_and_by_path(workspace: Workspace, root: Path) -> None:
    make_tree(root, TREE, GITIGNORES)
    tool = create_find_tool(workspace)
    assert text_of(await call(tool, pattern="*.py")).splitlines() == [
        "a/b/c/deep.py",
        "main.py",
        "src/app.py",
        "src/lib/util.py",
    ]
    assert text_of(await call(tool, pattern="src/**/*.py")).splitlines() == ["src/app.py", "src/lib/util.py"]
    assert text_of(await call(tool, pattern="*.py", path="src/lib")) == "src/lib/util.py"
    assert text_of(await call(tool, pattern="/src/*.py")) == "src/app.py"
    assert text_of(await call(tool, pattern="*.rs")) == "No files match '*.rs' in .."
    limited = await call(tool, pattern="*", limit=2)
    assert "[Stopped at 2 paths" in text_of(limited)
    with pytest.raises(ToolError, match="not found"):
        await call(tool, pattern="*", path="missing")


async def test_ls_lists_everything_with_directory_marks(workspace: Workspace, root: Path) -> None:
    make_tree(root, TREE, GITIGNORES)
    tool = create_ls_tool(workspace)
    listing = text_of(await call(tool)).splitlines()
    assert listing == sorted(listing, key=str.lower)
    assert {".gitignore", ".hidden/", "build/", "node_modules/", "debug.log", "weird name.txt"} <= set(
        listing
    )
    assert text_of(await call(tool, path="src/lib")).splitlines() == ["notes.log", "util.py"]
    (root / "empty").mkdir()
    assert text_of(await call(tool, path="empty")) == "empty is empty."
    with pytest.raises(ToolError, match="is a file"):
        await call(tool, path="main.py")
    with pytest.raises(ToolError, match="Directory not found"):
        await call(tool, path="nope")
    assert "more entries not shown" in text_of(await call(tool, limit=3))


async def test_grep_skips_fifos_instead_of_blocking(workspace: Workspace, root: Path) -> None:
    os.mkfifo(root / "pipe")
    (root / "a.txt").write_text("needle\n")
    assert text_of(await call(create_grep_tool(workspace), pattern="needle")) == "a.txt:1:needle"


async def test_grep_byte_budget_counts_only_what_is_shown(workspace: Workspace, root: Path) -> None:
    (root / "wide.txt").write_text(("x" * 400 + " hit\n") * 500)
    result = await call(create_grep_tool(workspace), pattern="hit", limit=1000)
    text = text_of(result)
    shown = text.count("wide.txt:")
    assert 0 < shown < 500
    assert details_of(result)["matches"] == shown and details_of(result)["truncated"] is True
    assert f"[Results stopped after {shown} matches" in text


async def test_searches_leave_out_what_the_sandbox_hides(tmp_path: Path) -> None:
    # `read` refuses a hidden path even with --allow-outside; grep and find (in their child
    # process) must not read or name it either: not in a workspace that is the home folder, not
    # through a link out of the workspace, not when given the path itself
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE key\n")
    (home / "notes.txt").write_text("PRIVATE? no, mine\n")
    other = tmp_path / "other-session"
    other.mkdir()
    (other / "plan.txt").write_text("PRIVATE plan of another session\n")
    policy = SandboxPolicy(hide=secret_paths(home), other_workspaces=(other,))
    in_home = Workspace(home, sandbox=policy)
    assert (
        text_of(await call(create_grep_tool(in_home), pattern="PRIVATE")) == "notes.txt:1:PRIVATE? no, mine"
    )
    assert text_of(await call(create_find_tool(in_home), pattern="*")) == "notes.txt"
    with pytest.raises(ToolError, match="hidden by the sandbox"):
        await call(create_grep_tool(in_home), pattern="PRIVATE", path=".ssh")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "key").symlink_to(home / ".ssh" / "id_ed25519")
    (root / "plan").symlink_to(other / "plan.txt")
    (root / "own.txt").write_text("PRIVATE own\n")
    linked = Workspace(root, allow_outside=True, sandbox=policy)
    assert text_of(await call(create_grep_tool(linked), pattern="PRIVATE")) == "own.txt:1:PRIVATE own"
    assert text_of(await call(create_find_tool(linked), pattern="*")) == "own.txt"
    with pytest.raises(ToolError, match="hidden by the sandbox"):
        await call(create_find_tool(linked), pattern="*", path=str(other))
    # with the sandbox off, the links are followed as --allow-outside allows
    off = Workspace(root, allow_outside=True, sandbox=SandboxPolicy(mode="off", hide=secret_paths(home)))
    assert "key:1:PRIVATE key" in text_of(await call(create_grep_tool(off), pattern="PRIVATE"))


async def test_searches_walk_a_root_the_user_allowed_inside_a_hidden_folder(tmp_path: Path) -> None:
    # the sandbox hides ~/.config but the user allowed ~/.config/proj: read reaches it, and
    # find and grep skipped the whole of ~/.config and never listed it; its siblings stay hidden
    home = tmp_path / "home"
    (home / ".config" / "proj" / "src").mkdir(parents=True)
    (home / ".config" / "proj" / "src" / "a.txt").write_text("needle mine\n")
    (home / ".config" / "tether").mkdir()
    (home / ".config" / "tether" / "settings.json").write_text("needle secret\n")
    (home / ".config" / "loose.txt").write_text("needle secret\n")
    (home / "notes.txt").write_text("needle notes\n")
    workspace = Workspace(
        home, extra_roots=(home / ".config" / "proj",), sandbox=SandboxPolicy(hide=(home / ".config",))
    )
    assert text_of(await call(create_find_tool(workspace), pattern="*")).splitlines() == [
        ".config/proj/src/a.txt",
        "notes.txt",
    ]
    assert text_of(await call(create_grep_tool(workspace), pattern="needle")).splitlines() == [
        ".config/proj/src/a.txt:1:needle mine",
        "notes.txt:1:needle notes",
    ]


def test_grep_reads_nothing_that_became_a_link_out_after_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the walk checks each name; a command running beside grep may turn one into a link out
    # before it is read (the search process reads what the walk gave it): it reads nothing out,
    # and a link that stays inside the workspace is still searched
    from tether.tools import files
    from tether.tools.grep import grep

    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "key").write_text("needle: the key outside\n")
    (root / "f").write_text("nothing here\n")
    (root / "notes.txt").write_text("needle in the notes\n")
    (root / "link").symlink_to("notes.txt")
    walk = files.walk_files

    def walk_then_swap(workspace: Workspace, start: Path) -> Iterator[Path]:
        for path in walk(workspace, start):
            if path.name == "f":
                path.unlink()
                path.symlink_to(outside / "key")
            yield path

    monkeypatch.setattr(files, "walk_files", walk_then_swap)
    found = text_of(grep(Workspace(root), {"pattern": "needle"}))
    assert found.splitlines() == ["link:1:needle in the notes", "notes.txt:1:needle in the notes"]
