from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from tools_support import call, text_of

from tether.agent import AgentContext, BeforeToolCallContext
from tether.ai.abort import AbortController
from tether.errors import ToolError
from tether.tools import (
    TOOL_FACTORIES,
    ApprovalGate,
    PathOutsideWorkspace,
    Workspace,
    create_coding_tools,
    create_edit_tool,
    create_ls_tool,
    create_read_tool,
    create_write_tool,
)
from tether.tools.sandbox import SandboxPolicy
from tether.wire import ToolCall


def tool_call(name: str, **arguments: Any) -> ToolCall:
    return {"type": "toolCall", "id": "c1", "name": name, "arguments": arguments}


def Context(call: ToolCall) -> BeforeToolCallContext:
    message: Any = {"role": "assistant", "content": [call]}
    return BeforeToolCallContext(message, call, call["arguments"], AgentContext())


def test_relative_paths_resolve_inside_the_root(workspace: Workspace, root: Path) -> None:
    assert workspace.resolve("a/../b.txt") == root.resolve() / "b.txt"
    assert workspace.resolve(str(root / "c")) == root.resolve() / "c"
    assert workspace.display(root.resolve() / "x/y") == "x/y"
    assert workspace.display(root.resolve()) == "."


@pytest.mark.parametrize("path", ["..", "../x", "a/../../x", "/etc/passwd", "~"])
def test_escapes_are_refused(workspace: Workspace, path: str) -> None:
    with pytest.raises(PathOutsideWorkspace, match="outside the workspace"):
        workspace.resolve(path)


def test_symlink_escape_is_refused_and_named(workspace: Workspace, root: Path) -> None:
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    (root / "link").symlink_to(outside)
    with pytest.raises(
        PathOutsideWorkspace, match=re.escape("'link/secret' resolves through a symbolic link to")
    ):
        workspace.resolve("link/secret")


def test_symlink_inside_the_workspace_is_fine(workspace: Workspace, root: Path) -> None:
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real")
    assert workspace.resolve("alias/f") == root.resolve() / "real/f"


def test_extra_roots_and_allow_outside(root: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    assert Workspace(root, extra_roots=(other,)).resolve(str(other / "f")) == other.resolve() / "f"
    assert Workspace(root, allow_outside=True).resolve("/etc/hostname") == Path("/etc/hostname").resolve()


async def test_tools_refuse_escapes_with_the_policy_message(workspace: Workspace, root: Path) -> None:
    (root.parent / "secret.txt").write_text("s")
    with pytest.raises(PathOutsideWorkspace, match="Only files inside the workspace can be accessed"):
        await call(create_read_tool(workspace), path="../secret.txt")


def test_needs_approval(root: Path, tmp_path: Path) -> None:
    workspace = Workspace(root, allow_outside=True)
    assert workspace.needs_approval(tool_call("bash", command="ls"))
    assert not workspace.needs_approval(tool_call("write", path="inside.txt", content=""))
    assert workspace.needs_approval(tool_call("write", path=str(tmp_path / "out.txt"), content=""))
    assert workspace.needs_approval(tool_call("edit", path="../out.txt"))
    assert not workspace.needs_approval(tool_call("read", path="../out.txt"))
    assert not Workspace(root, auto_approve=True).needs_approval(tool_call("bash", command="rm -rf /"))


async def test_ApprovalGate_asks_only_when_needed_and_blocks_on_refusal(workspace: Workspace) -> None:
    asked: list[str] = []
    answer = False

    async def ask(call: ToolCall, question: str) -> bool:
        asked.append(question)
        return answer

    hook = ApprovalGate(workspace, ask=ask)
    assert await hook(Context(tool_call("read", path="x")), None) is None
    assert asked == []
    decision = await hook(Context(tool_call("bash", command="make")), None)
    assert decision is not None and decision.block
    assert decision.reason == "The user declined this bash call. Do not retry it as is."
    assert asked == ["Run command: make"]
    answer = True
    assert await hook(Context(tool_call("bash", command="make")), None) is None
    controller = AbortController()
    controller.abort()
    aborted = await hook(Context(tool_call("bash", command="make")), controller.signal)
    assert aborted is not None and aborted.block and len(asked) == 2


async def test_create_coding_tools(workspace: Workspace, root: Path) -> None:
    tools = create_coding_tools(workspace)
    assert [tool.name for tool in tools] == list(TOOL_FACTORIES)
    for tool in tools:
        schema = tool.parameters
        assert isinstance(schema, dict) and schema["additionalProperties"] is False, tool.name
        assert all(prop.get("description") for prop in schema["properties"].values()), tool.name
        assert len(tool.description) > 40
    assert [tool.name for tool in create_coding_tools(workspace, ["ls", "read"])] == ["ls", "read"]
    with pytest.raises(ValueError, match="Unknown tool"):
        create_coding_tools(workspace, ["read", "telnet"])
    (root / "f.txt").write_text("hi\n")
    read = create_coding_tools(workspace, ["read"])[0]
    assert text_of(await call(read, path="f.txt")) == "1\thi"


@pytest.mark.parametrize("swapped", ["f", "sub"])
async def test_a_name_turned_into_a_link_after_the_check_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str
) -> None:
    """A command running beside the file tools (``bash`` in the same batch) can turn a checked
    name, or a folder on its way, into a link out of the workspace between ``resolve`` and the
    open: the key the sandbox hides was read, and ``~/.bashrc`` written. The open follows no
    link the check did not see."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    for folder in (root, root / "sub", outside):
        (folder / "f").write_text("SECRET outside\n" if folder == outside else "plain\n")
    target = root / swapped

    def resolve_then_swap(self: Workspace, path: str, *, reading: bool = False) -> Path:
        real = checked(self, path, reading=reading)
        if target.is_dir():
            target.rename(root / "moved")
        else:
            target.unlink()
        target.symlink_to(outside if swapped == "sub" else outside / "f")
        return real

    checked = Workspace.resolve
    monkeypatch.setattr(Workspace, "resolve", resolve_then_swap)
    workspace = Workspace(root)
    name = "f" if swapped == "f" else "sub/f"
    calls: list[tuple[Any, dict[str, Any]]] = [
        (create_read_tool, {"path": name}),
        (create_write_tool, {"path": name, "content": "PWNED\n"}),
        (create_edit_tool, {"path": name, "old_string": "SECRET", "new_string": "PWNED"}),
    ]
    for create, arguments in calls:
        with pytest.raises(ToolError, match="changed into a link or moved"):
            await call(create(workspace), **arguments)
        target.unlink()  # back as it was for the next tool
        if swapped == "sub":
            (root / "moved").rename(target)
        else:
            target.write_text("plain\n")
    assert (outside / "f").read_text() == "SECRET outside\n"


@pytest.mark.parametrize("swapped", ["docs", "sub"])
async def test_ls_lists_no_hidden_folder_swapped_in_after_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str
) -> None:
    """``ls`` checked the folder's real path, then listed it by name: a command beside it turning
    the folder, or one on its way, into a link to a folder the sandbox hides in that moment had
    the names in there listed (``ls`` in a loop against ``ln -sfn`` in a loop hit it). The swap
    is made at that moment here, by the check's own hook."""
    root = tmp_path / "ws"
    (root / "sub" / "docs").mkdir(parents=True)
    (root / "sub" / "docs" / "readme.md").write_text("plain\n")
    (root / "vault" / "docs").mkdir(parents=True)
    (root / "vault" / "docs" / "PRIVATE-NAME.key").write_text("secret\n")
    target = root / "sub" / "docs" if swapped == "docs" else root / "sub"

    def resolve_then_swap(self: Workspace, path: str, *, reading: bool = False) -> Path:
        real = checked(self, path, reading=reading)
        target.rename(target.with_name("moved"))
        target.symlink_to(root / "vault" / swapped if swapped == "docs" else root / "vault")
        return real

    checked = Workspace.resolve
    workspace = Workspace(root, sandbox=SandboxPolicy(hide=(root / "vault",)))
    ls = create_ls_tool(workspace)
    assert text_of(await call(ls, path="sub/docs")) == "readme.md"
    monkeypatch.setattr(Workspace, "resolve", resolve_then_swap)
    with pytest.raises(ToolError, match="changed into a link or moved") as refused:
        await call(ls, path="sub/docs")
    assert "PRIVATE-NAME" not in str(refused.value)


async def test_ls_marks_a_link_as_a_folder_only_where_the_tools_may_read(tmp_path: Path) -> None:
    """``ls`` asked each entry whether it is a folder, following links: a ``/`` after a link told
    what ``read`` refuses to tell, that a folder is there outside the workspace, or in one the
    sandbox hides. A link to a folder the tools may read keeps its ``/``."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "real").mkdir(parents=True)
    (root / "vault" / "keys").mkdir(parents=True)
    outside.mkdir()
    (root / "inside").symlink_to(root / "real")
    (root / "out").symlink_to(outside)
    (root / "hidden").symlink_to(root / "vault" / "keys")
    (root / "dangling").symlink_to(tmp_path / "missing")
    workspace = Workspace(root, sandbox=SandboxPolicy(hide=(root / "vault",)))
    listed = text_of(await call(create_ls_tool(workspace), path="."))
    assert listed.splitlines() == ["dangling", "hidden", "inside/", "out", "real/", "vault/"]
    allowed = Workspace(root, allow_outside=True)
    assert "out/" in text_of(await call(create_ls_tool(allowed), path=".")).splitlines()


@pytest.mark.parametrize("path", ["a\ud800b.txt", "\udfff", "\\xff\ud800", "a\x00b"])
async def test_a_path_no_file_name_can_hold_is_one_tool_error(root: Path, path: str) -> None:
    """A lone surrogate that is no odd byte of a name (``\\ud800``; ``\\udcff`` is byte 0xff) or
    a NUL raised ``UnicodeEncodeError`` or ``ValueError`` from inside the path functions, in the
    tool and in the approval hook before it. Now the tool says what is wrong in one line, and no
    question is asked about a write that cannot happen."""
    workspace = Workspace(root, sandbox=SandboxPolicy(mode="workspace-write"))
    for tool in (create_read_tool(workspace), create_write_tool(workspace), create_ls_tool(workspace)):
        arguments: dict[str, Any] = {"path": path, "content": "x"} if tool.name == "write" else {"path": path}
        with pytest.raises(ToolError, match="which no file name can hold") as refused:
            await call(tool, **arguments)
        assert "\n" not in str(refused.value) and str(refused.value).encode()  # one line, encodable
    for name in ("write", "edit"):
        assert not workspace.needs_approval(tool_call(name, path=path, content="x"))
        assert workspace.protected_write(tool_call(name, path=path)) is None
    asked: list[str] = []

    async def ask(call: ToolCall, question: str) -> bool:
        asked.append(question)
        return True

    gate = ApprovalGate(workspace, ask=ask)
    assert await gate(Context(tool_call("write", path=path, content="x")), None) is None and asked == []
