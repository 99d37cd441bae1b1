"""The workspace policy: which paths the tools may touch and which calls need the user's approval.

Every path a tool receives goes through ``Workspace.resolve``. Relative paths are taken from the
workspace root; the result is the *real* path (symlinks followed), so ``../x``, ``/etc/passwd``
and a symlink pointing out of the tree are all recognised as outside. Outside paths are refused
unless the user allowed them (``allow_outside``, i.e. ``--allow-outside``, or ``extra_roots``), and
a write outside the root still asks for approval, like every ``bash`` command, unless
``auto_approve`` is set. Approving calls (``--yes``) never widens the workspace by itself.
``read_roots`` may be read but not written: the folders of the user's skills, which the system
prompt tells the model to read when a task matches one.

With a sandbox (``sandbox``, ``tether.tools.sandbox``) commands run confined, so ``bash`` no longer
asks unless the model asks to run a command outside it (``escalate``). The file tools then agree
with the sandbox: what it hides (credentials, the session database) they refuse even with
``allow_outside``, in ``read-only`` mode they write nothing, and in ``workspace-write`` a write to
what it keeps read-only (``.tether``, ``.mcp.json``, ``.git``, ...: ``tether.tools.sandbox_protect``)
asks first, as a command escalated out of the sandbox does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.errors import ToolError
from tether.tools.errors import PathOutsideWorkspace
from tether.tools.sandbox import Sandbox, SandboxPolicy, unavailable
from tether.tools.spool import Spools
from tether.wire import ToolCall
from tether.wire.file_names import path_from_text, path_text

WRITE_TOOLS = frozenset({"write", "edit"})
"""Tools whose ``path`` argument is written to."""
ALWAYS_ASK_TOOLS = frozenset({"bash"})
"""Tools that can do anything, so every call asks (unless auto-approved)."""


@dataclass(frozen=True, slots=True)
class Workspace:
    root: Path
    extra_roots: tuple[Path, ...] = ()
    """Further directories the user allowed, as if they were part of the workspace."""
    read_roots: tuple[Path, ...] = ()
    """Further directories the reading tools (``read``, ``ls``, ``find``, ``grep``) may use,
    never the writing ones: the folders of the skills the system prompt lists."""
    allow_outside: bool = False
    """Allow any path (writes outside the roots still need approval)."""
    auto_approve: bool = False
    """Approve every call without asking (``--yes``)."""
    env_passthrough: tuple[str, ...] = ()
    """Environment variables tool processes see although they look like credentials
    (``shellEnvPassthrough``; see ``tether.tools.process.tool_environment``)."""
    spools: Spools = field(default_factory=Spools, repr=False, compare=False)
    """Where ``bash`` saves long output; removed when the session ends."""
    sandbox: SandboxPolicy | None = None
    """How commands are confined (``None`` or mode ``off``: not at all). Its ``hide`` list should
    hold every secret path (``tether.tools.sandbox.secret_paths``): the file tools refuse them too."""
    _real_roots: tuple[Path, ...] = field(init=False, repr=False, compare=False)
    _real_read_roots: tuple[Path, ...] = field(init=False, repr=False, compare=False)
    _real_hidden: tuple[tuple[Path, str], ...] = field(init=False, repr=False, compare=False)
    """The sandbox's hidden paths, resolved once, each with what it holds (for the refusal)."""

    def __post_init__(self) -> None:
        real = tuple(Path(os.path.realpath(p)) for p in (self.root, *self.extra_roots))
        object.__setattr__(self, "_real_roots", real)
        object.__setattr__(
            self, "_real_read_roots", tuple(Path(os.path.realpath(p)) for p in self.read_roots)
        )
        policy = self.sandbox
        hidden = (
            [(Path(os.path.realpath(h)), "holds credentials or session data") for h in policy.hide]
            + [(h, "is another session's workspace") for h in policy.other_workspaces]
            if policy is not None and policy.active
            else []
        )
        object.__setattr__(self, "_real_hidden", tuple(hidden))

    @property
    def real_root(self) -> Path:
        return self._real_roots[0]

    def resolve(self, path: str, *, reading: bool = False) -> Path:
        """The real path a tool argument names; raises ``PathOutsideWorkspace`` for refused paths.
        ``reading``: the tool only reads there, so ``read_roots`` are allowed too."""
        if not path:
            raise ToolError("path must not be empty")
        unnameable = _unnameable(path)
        if unnameable is not None:
            raise ToolError(f"Path {path!r} holds {unnameable}, which no file name can hold.")
        candidate = self._named(path)
        real = Path(os.path.realpath(self.real_root / candidate))
        if self.sandbox is not None and self.sandbox.active:
            self._check_sandbox(path, real, reading=reading)
        if self.allow_outside or self.contains(real) or (reading and _within(real, self._real_read_roots)):
            return real
        via_link = self.contains(Path(os.path.abspath(self.real_root / candidate)))
        how = " through a symbolic link" if via_link else ""
        raise PathOutsideWorkspace(
            f"Path {path!r} resolves{how} to {path_text(real)}, outside the workspace "
            f"{path_text(self.real_root)}. "
            "Only files inside the workspace can be accessed (the user can allow more: --allow-outside)."
        )

    def readable(self, real: Path) -> bool:
        """Whether the reading tools may use ``real`` (a resolved path): what ``resolve`` with
        ``reading`` returns rather than refuses."""
        if self.sandbox is not None and self.sandbox.active and self.hiding(real) is not None:
            return False
        return self.allow_outside or self.contains(real) or _within(real, self._real_read_roots)

    def _named(self, path: str) -> Path:
        """The name a tool argument means. The tools show a name that is not UTF-8 with its odd
        bytes written ``\\xff`` (``display``), so the model hands that text back: it means those
        bytes unless a file is named by the text itself (``tether.wire.file_names``), and a new
        file goes where its folder exists, read either way."""
        candidate = Path(os.path.expanduser(path))
        if "\\x" not in path:
            return candidate
        decoded = path_from_text(path)
        # no escape of a byte (``\x41``), or of UTF-8 ones (``\xc3\xa9`` is é, which ``display``
        # writes as é): one reading; else the text itself when a file has that name
        if decoded == path or path_text(decoded) != path or os.path.lexists(self.real_root / candidate):
            return candidate
        named = Path(os.path.expanduser(decoded))
        if os.path.lexists(self.real_root / named):
            return named
        # a new file: in the folder that exists (``notes\x80/new`` goes into a real ``notes\x80``);
        # with the odd bytes in its own name alone, both readings have the same folder
        if (
            named.parent != candidate.parent
            and os.path.lexists(self.real_root / named.parent)
            and not os.path.lexists(self.real_root / candidate.parent)
        ):
            return named
        return candidate

    def _check_sandbox(self, path: str, real: Path, *, reading: bool) -> None:
        assert self.sandbox is not None
        found = self.hiding(real)
        if found is not None:
            hidden, holds = found
            raise PathOutsideWorkspace(
                f"Path {path!r} is hidden by the sandbox ({path_text(hidden)} {holds})."
            )
        if not reading and self.sandbox.mode == "read-only":
            raise ToolError(f"Cannot write {path!r}: the sandbox is read-only (--sandbox read-only).")

    def hiding(self, real: Path) -> tuple[Path, str] | None:
        """The hidden path that keeps ``real`` (a resolved path) from the tools, with what it
        holds, or ``None``. A path inside a workspace root that a hidden folder holds stays
        allowed (the root's siblings stay hidden), as the sandbox's mounts have it."""
        hidden, holds = next(((h, what) for h, what in self._real_hidden if _within(real, (h,))), (None, ""))
        if hidden is None or any(
            root.is_relative_to(hidden) and _within(real, (root,)) for root in self._real_roots
        ):
            return None
        return hidden, holds

    def holds_root(self, real: Path) -> bool:
        """Whether one of the workspace's roots lies below ``real`` (a resolved folder): a walk
        enters such a hidden folder for that root alone (``hiding``)."""
        return any(root != real and root.is_relative_to(real) for root in self._real_roots)

    @property
    def hidden_paths(self) -> frozenset[str]:
        """The sandbox's hidden paths, resolved (empty when it is off): a walk down from a
        visible folder that never follows a link reaches what they hold only through them."""
        return frozenset(str(h) for h, _ in self._real_hidden)

    def confinement(self) -> Sandbox | None:
        """The sandbox commands run in, or ``None`` when they run unconfined (off or unavailable)."""
        if self.sandbox is None or not self.sandbox.active or unavailable() is not None:
            return None
        spools = self.spools.directory
        return Sandbox(
            self.sandbox,
            writable=self._real_roots,
            readable=(spools,) if spools is not None else (),
            hidden=self.sandbox.hide,
            others=self.sandbox.other_workspaces,
        )

    def contains(self, real_path: Path) -> bool:
        """Whether an already-resolved path lies inside one of the allowed roots."""
        return _within(real_path, self._real_roots)

    def display(self, real_path: Path) -> str:
        """A path as the model should see it: relative to the root when inside it, its bytes
        that are not UTF-8 written ``\\xff`` (``tether.wire.file_names``), which ``resolve``
        reads back."""
        try:
            relative = real_path.relative_to(self.real_root)
        except ValueError:
            return path_text(real_path)
        return path_text(relative) if relative.parts else "."

    def needs_approval(self, tool_call: ToolCall) -> bool:
        """Whether the user must approve this call before it runs."""
        if self.auto_approve:
            return False
        name = tool_call["name"]
        if name in ALWAYS_ASK_TOOLS:
            return tool_call["arguments"].get("escalate") is True or self.confinement() is None
        if name in WRITE_TOOLS:
            return (
                not self._inside_roots(tool_call["arguments"]) or self.protected_write(tool_call) is not None
            )
        return False

    def protected_write(self, tool_call: ToolCall) -> str | None:
        """What a ``write``/``edit`` call would change that the sandbox keeps read-only (the
        workspace's ``.tether``, ``.mcp.json``, ``.git``, ...: ``tether.tools.sandbox_protect``;
        tether's config folder and own installation when the workspace holds them), said for the
        approval question, or ``None``. Only in ``workspace-write``: ``read-only`` refuses every
        write, and with the sandbox off nothing is protected."""
        if (
            tool_call["name"] not in WRITE_TOOLS
            or self.sandbox is None
            or self.sandbox.mode != "workspace-write"
        ):
            return None
        path = tool_call["arguments"].get("path")
        if not isinstance(path, str) or not path or _unnameable(path) is not None:
            return None  # the tool refuses it (``resolve``); nothing is written
        from tether.tools.sandbox_protect import WHAT_READS, inside, installation, protected_by

        real = Path(os.path.realpath(self.real_root / self._named(path)))
        name = protected_by(real, self._real_roots)
        if name is not None:
            return f"{name}, which {WHAT_READS[name]}"
        own = [Path(os.path.realpath(p)) for p in self.sandbox.own]
        installed = [Path(os.path.realpath(p)) for p in installation()]
        protected = [*own, *(Path(os.path.realpath(p)) for p in self.sandbox.protect), *installed]
        folder = next(
            (p for p in inside(protected, self._real_roots) if real == p or real.is_relative_to(p)), None
        )
        if folder is None:
            return None
        from tether.tools.sandbox_protect import STARTUP_PATHS

        home = Path(os.path.realpath(Path.home()))
        relative = folder.relative_to(home).as_posix() if folder.is_relative_to(home) else ""
        if folder in own:
            return f"{path_text(folder)}, tether's configuration (extensions, settings)"
        if relative in STARTUP_PATHS:
            return f"{path_text(folder)}, which {STARTUP_PATHS[relative]}"
        if folder in installed:
            return f"{path_text(folder)}, tether's own installation, which runs at its next start"
        return path_text(folder)

    def _inside_roots(self, arguments: Mapping[str, Any]) -> bool:
        path = arguments.get("path")
        if not isinstance(path, str) or not path or _unnameable(path) is not None:
            return True  # validation or ``resolve`` rejects it; nothing is written
        real = Path(os.path.realpath(self.real_root / self._named(path)))
        return self.contains(real)


def _within(real_path: Path, roots: tuple[Path, ...]) -> bool:
    return any(real_path == root or real_path.is_relative_to(root) for root in roots)


def _unnameable(path: str) -> str | None:
    """What in ``path`` no file name can hold, said, or ``None``: a NUL, or a lone surrogate that
    is no odd byte of a name (``os.fsdecode`` reads byte 0xff as ``\\udcff``; ``\\ud800`` is
    none). The path functions raised ``ValueError`` or ``UnicodeEncodeError`` for them from deep
    inside, which reached the model, or the approval hook, as a codec's complaint."""
    if "\0" in path:
        return "a NUL character"
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        return f"a lone surrogate (U+{ord(path[exc.start]):04X})"
    return None
