"""Confining what the model runs: ``bash`` and ``!cmd`` inside an OS sandbox (bubblewrap).

A prompt before every command is a poor guard: people stop reading it. Codex and Claude Code
confine commands instead, and so do we. A confined command sees:

- the whole file system **read-only**, with the workspace writable (``workspace-write``) or not
  (``read-only``), and a private, empty ``/tmp``;
- **no credentials**: ``~/.ssh``, ``~/.aws``, ``~/.config/gh`` and the like, ``/etc/shadow``, the
  tether home's data (the session database) and its key files are replaced by empty ones, as is
  anything the user adds (``sandbox.hide``); and the **other sessions' workspaces** the session
  store knows (``other_workspaces``: on a shared worker, a run sees its own workspace only);
- **no network** unless allowed: its own network namespace, where even ``127.0.0.1`` is its own;
  and no Unix socket of the host's (``tether.tools.sandbox_sockets``: the systemd user manager
  or Docker's socket would run anything outside), nor the SSH agent or gpg-agent wherever
  their sockets are;
- its own PID namespace (``/proc`` shows only its processes; when the command ends, everything it
  left running dies with the namespace), no new privileges (setuid binaries do not elevate), no
  capabilities, and at most ``pids_max`` processes (a fork bomb stops there).

Why bubblewrap: Debian ships it, it needs no daemon and no root, it does mounts, namespaces and
``PR_SET_NO_NEW_PRIVS`` in one exec, and it is what Claude Code uses on Linux. Landlock would
confine paths but not hide them nor the network on the kernels we meet, so it is not a fallback
we rely on. The process limit uses the cgroup ``pids`` controller where this process may create a
cgroup (cgroup v2 delegated, or v1), and ``RLIMIT_NPROC`` otherwise; the command's supervisor
(``tether.tools.process``) joins the group or sets the limit before it starts ``bwrap``
(``Confined`` says why there), and the group is removed after.

Where no sandbox can run (no ``bwrap``, no user namespaces, not Linux), ``unavailable()`` says
why in one line: the front end prints it and the approval gate asks before every command, as
without a sandbox. Nothing ever falls back to full access silently.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from tether.tools.sandbox_sockets import agent_mounts, socket_mounts

SandboxMode = Literal["read-only", "workspace-write", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "off")
"""From the strictest to the widest: a project may only move a user's choice to the left."""

DEFAULT_PIDS_MAX = 1024
"""Processes (and threads) a confined command may have at once: plenty for a build, finite for a
fork bomb."""

CREDENTIAL_PATHS = (
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube",
    ".pypirc",
    ".npmrc",
    ".config/gh",
    ".config/gcloud",
    ".config/hub",
    ".password-store",
    # other coding agents' keys and sign-in tokens: pi's beside the skills and prompts tether
    # reads in ~/.pi/agent, Codex's, Claude Code's, Gemini CLI's, Copilot's, opencode's
    ".pi/agent/auth.json",
    ".pi/agent/models.json",
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".gemini/oauth_creds.json",
    ".config/github-copilot",
    ".local/share/opencode/auth.json",
)
"""Relative to the home folder: what a command never needs to see to work on a repository."""
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/ssh")
"""Readable to a command run by root (containers, CI): the sandbox keeps root's uid."""

SANDBOX_HINT_MARKERS = (
    "Read-only file system",
    "Permission denied",
    "Operation not permitted",
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Connection refused",
    "No such file or directory",
)
"""Phrases in a failed command's output that suggest the sandbox refused something."""


WRITABLE = "the workspace but its .git, .tether, .mcp.json, .pi, .claude and .agents, and /tmp"
"""What ``workspace-write`` lets a command write, in the model's words (``tether.tools.sandbox_protect``
says why the control files are not)."""


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """How commands the model or the user runs are confined (``docs/sandbox.md``)."""

    mode: SandboxMode = "workspace-write"
    network: bool = False
    """Let confined commands reach the network (the host's, including its loopback)."""
    hide: tuple[Path, ...] = ()
    """Further paths replaced by empty ones inside the sandbox."""
    pids_max: int = DEFAULT_PIDS_MAX
    allow_hosts: tuple[str, ...] = ()
    """Without ``network``: hosts (``*.example.com`` for subdomains) reachable over HTTP(S)
    through tether's proxy (``tether.tools.sandbox_proxy``)."""
    other_workspaces: tuple[Path, ...] = ()
    """The workspaces of the store's other sessions, hidden like ``hide`` (not a setting: the
    session factory fills it once per session, see ``other_workspaces``)."""
    escalation_timeout: float = 120.0
    """Seconds an RPC client has to answer whether a command may run outside the sandbox
    (``tether.rpc.escalation``); no answer by then is a no."""
    protect: tuple[Path, ...] = ()
    """Paths kept read-only even when a writable workspace holds them, a missing one held by a
    placeholder while a command runs (not a setting: the session factory gives the home folder's
    start-up files, ``sandbox_protect.STARTUP_PATHS``)."""
    own: tuple[Path, ...] = ()
    """tether's own folders, kept read-only as ``protect`` is, but made (``0700``) when missing
    rather than held by a placeholder: one left by a killed tether would keep tether itself from
    making them (not a setting: the session factory gives the config folder, whose extensions
    and settings the next start obeys, and the data folder)."""
    mcp: bool = False
    """Start stdio MCP servers inside the sandbox too (the session's workspace, its network rule
    but not ``allow_hosts``, ``RLIMIT_NPROC`` for their processes): off by default, since most
    servers write caches in the home folder or need the network."""

    @property
    def proxied(self) -> bool:
        """Whether commands get the allow-list proxy (some hosts allowed, not the whole network)."""
        return self.active and not self.network and bool(self.allow_hosts)

    @property
    def active(self) -> bool:
        return self.mode != "off"

    def describe(self) -> str:
        """A few words for prompts and hints: ``workspace-write, network off``."""
        if not self.active:
            return "off"
        network = "on" if self.network else "off"
        if self.proxied:
            network = "only " + ", ".join(self.allow_hosts)
        return f"{self.mode}, network {network}"


def stricter(a: SandboxPolicy, b: SandboxPolicy) -> SandboxPolicy:
    """The narrower of two policies, field by field (a project never widens the user's)."""
    mode = a.mode if SANDBOX_MODES.index(a.mode) <= SANDBOX_MODES.index(b.mode) else b.mode
    return SandboxPolicy(
        mode=mode,
        network=a.network and b.network,
        hide=tuple(dict.fromkeys((*a.hide, *b.hide))),
        protect=tuple(dict.fromkeys((*a.protect, *b.protect))),
        own=tuple(dict.fromkeys((*a.own, *b.own))),
        pids_max=min(a.pids_max, b.pids_max),
        allow_hosts=tuple(h for h in a.allow_hosts if h in b.allow_hosts),
        mcp=a.mcp or b.mcp,
        escalation_timeout=min(a.escalation_timeout, b.escalation_timeout),
    )


def missing() -> str | None:
    """Why no sandbox can run here, as far as a cheap look tells (platform, ``bwrap`` on PATH):
    what a front end checks at start-up, where probing namespaces would cost an exec (and
    ``shutil``, which ``tether -p`` otherwise never loads)."""
    if not sys.platform.startswith("linux"):
        return f"no sandbox on {sys.platform} yet (tether confines commands with bubblewrap on Linux)"
    folders = os.environ.get("PATH", os.defpath).split(os.pathsep)
    if not any(os.access(os.path.join(folder, "bwrap"), os.X_OK) for folder in folders if folder):
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    return None


@cache
def unavailable() -> str | None:
    """Why no sandbox can run here (one line), or ``None`` when bubblewrap really works."""
    import subprocess  # loads with the first command, not at start-up

    reason = missing()
    if reason is not None:
        return reason
    try:
        probe = subprocess.run(
            [_bwrap(), *_namespaces(network=False), "--ro-bind", "/", "/", "--", "/bin/true"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not start: {exc}"
    if probe.returncode != 0:
        last = probe.stderr.strip().splitlines()[-1:] or [f"exit status {probe.returncode}"]
        return f"bubblewrap cannot create namespaces here ({last[0]})"
    return None


OTHER_WORKSPACES_MAX = 200
"""How many of the store's workspaces (the most recently used) are hidden: each is a stat and a
mount in every confined command, about 2 µs of CPU together (``bench/sandbox_other_workspaces.py``).
A worker whose runs' workspaces share a folder hides them all with one ``hide`` entry."""

SYSTEM_TREES = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/dev",
    "/proc",
    "/sys",
    "/run",
)
"""What every confined command needs to run (programs, libraries, configuration, devices): a
session once started in one of them, or in a folder inside, must not hide it from the others."""


def other_workspaces(cwds: Sequence[str], keep: Sequence[Path], home: Path) -> tuple[Path, ...]:
    """The folders of other sessions (``cwds``: the store's workspaces, newest first) that a
    confined command and the file tools must not see, resolved. Left visible: the folders in
    ``keep`` (this workspace, the folders it reads), their ancestors (hiding one would hide the
    workspace) and what lies inside them (part of this workspace), the home folder and its
    ancestors (a session run there would otherwise hide nearly everything; its credentials are
    hidden anyway), the system's own folders (``SYSTEM_TREES``, the interpreter's prefix) with
    their ancestors and what they hold, and paths that no longer exist."""
    kept = [Path(os.path.realpath(p)) for p in keep]
    system = [Path(os.path.realpath(p)) for p in (*SYSTEM_TREES, sys.base_prefix, sys.prefix)]
    inside = [*kept, *system]
    spared = {
        Path(os.path.realpath(home)),
        *(a for k in (Path(os.path.realpath(home)), *inside) for a in k.parents),
    }
    found: dict[Path, None] = {}
    for cwd in cwds:
        real = Path(os.path.realpath(cwd))
        if real in spared or any(real.is_relative_to(k) for k in inside) or not real.is_dir():
            continue
        found[real] = None
        if len(found) == OTHER_WORKSPACES_MAX:
            break
    return tuple(found)


def secret_paths(home: Path, tether_dirs: Sequence[Path] = ()) -> tuple[Path, ...]:
    """The default hidden paths: the home folder's credentials, the system's, tether's own, and
    gpg's home folder when ``$GNUPGHOME`` puts it elsewhere than ``~/.gnupg`` (its private keys
    in ``private-keys-v1.d``, its agent's sockets when there is no ``/run/user/<uid>``)."""
    named = os.environ.get("GNUPGHOME")
    gnupg = Path(os.path.abspath(os.path.expanduser(named))) if named else None
    return (
        *(home / relative for relative in CREDENTIAL_PATHS),
        # not one holding the home folder (``GNUPGHOME=~``): that would hide everything
        *([gnupg] if gnupg is not None and not home.is_relative_to(gnupg) else []),
        *(Path(p) for p in SYSTEM_SECRETS),
        *tether_dirs,
    )


@dataclass(frozen=True, slots=True)
class Sandbox:
    """A policy bound to one workspace: turns a command line into its confined form."""

    policy: SandboxPolicy
    writable: tuple[Path, ...]
    """The workspace roots: writable in ``workspace-write``, readable in ``read-only``."""
    readable: tuple[Path, ...] = ()
    """Further folders to show read-only although they may live in ``/tmp`` (bash's spools)."""
    hidden: tuple[Path, ...] = ()
    """Paths replaced by empty ones (``secret_paths`` plus the policy's ``hide``)."""
    others: tuple[Path, ...] = ()
    """Other sessions' workspaces, resolved and sifted once per session (``other_workspaces``):
    each only checked to be a folder still, then emptied (a stat and a mount each)."""

    def argv(
        self,
        argv: Sequence[str],
        cwd: Path,
        proxy: Path | None = None,
        protected: Sequence[str] | None = None,
        hidden: Sequence[Path] | None = None,
    ) -> list[str]:
        """``bwrap [mounts and namespaces] -- argv``: run from ``cwd``; with ``proxy`` (the Unix
        socket of ``sandbox_proxy.host_proxy``), HTTP(S) to the allowed hosts goes through it.
        ``protected``: the mounts of a ``Protection`` the caller holds (``confine``); without,
        in ``workspace-write``, the protected paths that exist are mounted read-only and a
        missing one is left out (a long-lived process cannot hold its placeholder). ``hidden``:
        the hidden paths resolved already (``resolved_hidden``), by ``confine``."""
        args = [_bwrap(), *_namespaces(network=self.policy.network)]
        args += [
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/var/tmp",
        ]
        if hidden is None:
            hidden = self.resolved_hidden()
        # a hidden folder holding a workspace (the folder of every run's workspace on a shared
        # worker) is emptied first, then the workspace is bound back into it: its siblings stay out
        for folder in _holding(hidden, self.writable):
            args += ["--tmpfs", str(folder)]
        bind = "--bind" if self.policy.mode == "workspace-write" else "--ro-bind"
        for root in self.writable:
            args += [bind, str(root), str(root)]
        if self.policy.mode == "workspace-write":
            if protected is None:
                from tether.tools.sandbox_protect import Protection

                kept = self.kept(hidden)
                protected = Protection.take(
                    self.writable, placeholders=False, extra=kept, named=self.named()
                ).mounts
            args += protected
        for folder in self.readable:
            args += ["--ro-bind-try", str(folder), str(folder)]
        args += _hiding(hidden, keep=self.writable)
        args += socket_mounts(self.writable)
        args += agent_mounts(self.writable)
        for folder in map(str, self.others):
            if os.path.isdir(folder):
                args += ["--tmpfs", folder]
        args += ["--chdir", str(cwd), "--setenv", "TMPDIR", "/tmp"]
        if proxy is not None:
            from tether.tools.sandbox_proxy import forwarded, proxy_environment

            args += ["--ro-bind", str(proxy.parent), str(proxy.parent)]
            for name, value in proxy_environment().items():
                args += ["--setenv", name, value]
            # The base interpreter runs the forwarder (-I -S: the standard library only): a venv's
            # own folder may lie in /tmp, which the sandbox replaces (a CI clone does); the base
            # is shown too when it lives there.
            python = os.path.realpath(sys.executable)
            if Path(python).is_relative_to("/tmp") or Path(python).is_relative_to("/var/tmp"):
                args += ["--ro-bind", sys.base_prefix, sys.base_prefix]
            argv = forwarded(argv, proxy, python)
        return [*args, "--", *argv]

    @contextlib.contextmanager
    def confine(self, argv: Sequence[str], cwd: Path, proxy: Path | None = None) -> Generator[Confined]:
        """The confined command line, with a fresh ``pids`` cgroup for it and the workspace's
        protected paths held (``tether.tools.sandbox_protect``) while the block runs; in any
        mode, the first command of a process sweeps the placeholders a killed tether left."""
        from tether.tools.sandbox_protect import Protection, sweep

        hidden = self.resolved_hidden()
        kept = self.kept(hidden)
        sweep(tuple(kept))
        protection = (
            Protection.take(self.writable, extra=kept, named=self.named(), make=kept[: len(self.policy.own)])
            if self.policy.mode == "workspace-write"
            else Protection()
        )
        try:
            group = PidsGroup.create(self.policy.pids_max)
            try:
                argv = self.argv(argv, cwd, proxy, protection.mounts, hidden)
                yield Confined(argv, self.policy.pids_max, group)
            finally:
                if group is not None:
                    group.remove()
        finally:
            protection.release()

    def resolved_hidden(self) -> list[Path]:
        """The hidden paths, resolved (once a command: a credential that is a link, ``~/.aws``
        made by a dotfile manager, is hidden at its target, which a read through the link
        reaches)."""
        return [Path(os.path.realpath(path)) for path in self.hidden]

    def kept(self, hidden: Sequence[Path]) -> list[Path]:
        """What stays read-only inside a writable root besides its control files, resolved: the
        policy's ``own`` folders (first: ``confine`` makes them) and ``protect``, tether's own
        installation (``sandbox_protect.installation``) and the ``hidden`` paths, so that one
        missing is not created there (a ``~/.config/tether/settings.json`` turning the sandbox off
        at the next start)."""
        from tether.tools.sandbox_protect import installation

        named = (*self.policy.own, *self.policy.protect, *installation())
        return [*(Path(os.path.realpath(path)) for path in named), *hidden]

    def named(self) -> list[Path]:
        """``kept``'s paths as named, in its order: a link on the way to one must stay a link."""
        from tether.tools.sandbox_protect import installation

        return [*self.policy.own, *self.policy.protect, *installation(), *self.hidden]

    def hint(self, output: str) -> str | None:
        """A note for the model when a failed command may have been stopped by the sandbox."""
        if not any(marker in output for marker in SANDBOX_HINT_MARKERS):
            return None
        return (
            f"This command ran in a sandbox ({self.policy.describe()}; writable: "
            f"{WRITABLE if self.policy.mode == 'workspace-write' else '/tmp only'}). If it failed because the sandbox "
            "refused a write, a path or the network, run it again with escalate: true and a "
            "justification; the user is asked before it runs outside the sandbox."
        )


@dataclass(frozen=True, slots=True)
class Confined:
    """A command line ready to run confined, and how to cap its process count.

    The cap is not part of ``argv``: joining a cgroup costs the joiner an RCU grace period in the
    kernel (5-25 ms of waiting, no CPU, measured on cgroup v1), so a shell hop that joins and then
    execs ``bwrap`` put that wait on every command. Instead the process runner starts the command's
    supervisor held at a gate, moves it into ``group`` (``join``) while the supervisor's
    interpreter starts, and opens the gate; everything the supervisor starts is born inside the
    group, which costs nothing. Without a group the supervisor sets ``RLIMIT_NPROC`` to
    ``pids_max`` itself (no ``prlimit`` exec either)."""

    argv: list[str]
    pids_max: int
    group: PidsGroup | None

    def join(self, pid: int) -> bool:
        """Move ``pid`` (the held supervisor) into the group; ``False`` when there is none or the
        kernel refused (the supervisor then falls back to ``RLIMIT_NPROC``)."""
        if self.group is None:
            return False
        try:
            self.group.procs.write_text(f"{pid}\n")
        except OSError:
            return False
        return True


@cache
def _bwrap() -> str:
    """Where ``bwrap`` is, looked up once (``PATH`` walks are not free, and it does not move)."""
    import shutil

    return shutil.which("bwrap") or "bwrap"


def _namespaces(*, network: bool) -> list[str]:
    args = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    return [*args, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]


def _holding(paths: Sequence[Path], roots: Sequence[Path]) -> list[Path]:
    """(Of resolved paths.) The hidden folders that hold a workspace root below them (not the root itself: a user who
    chose to work in a hidden folder sees it)."""
    return [
        path
        for path in dict.fromkeys(paths)
        if any(root != path and root.is_relative_to(path) for root in roots) and path.is_dir()
    ]


def _hiding(paths: Sequence[Path], *, keep: Sequence[Path]) -> list[str]:
    """(Of resolved paths.) Mounts replacing each existing path by an empty one, after the workspace roots are bound,
    so what lies inside a root is hidden too. A path holding a root is left to ``_holding``, and
    a root itself stays (the user chose to work there)."""
    args: list[str] = []
    for path in dict.fromkeys(paths):
        if any(root == path or root.is_relative_to(path) for root in keep):
            continue
        if not path.exists():
            continue  # nothing to hide
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        else:
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


@dataclass(frozen=True, slots=True)
class PidsGroup:
    """One command's ``pids`` cgroup: its processes and threads, capped at a number."""

    path: Path

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    @classmethod
    def create(cls, limit: int) -> PidsGroup | None:
        """A new cgroup capped at ``limit`` tasks, or ``None`` where we may not make one."""
        import uuid

        for parent in pids_parents():
            sweep(parent)
            path = parent / f"tether-{uuid.uuid4().hex[:12]}"
            try:
                path.mkdir()
            except OSError:
                continue
            try:
                (path / "pids.max").write_text(f"{limit}\n")
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            return cls(path)
        return None

    def remove(self) -> None:
        """Delete the group. Its last tasks are still being reaped when the command's process has
        ended (the PID namespace's init goes last), so the kernel may refuse for a few
        milliseconds: a thread retries then, and the command's result is not held up for it."""
        if not self._try_remove():
            import threading

            threading.Thread(target=self._retry, name="tether-cgroup-cleanup").start()

    def _try_remove(self) -> bool:
        try:
            self.path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            return False

    def _retry(self) -> None:
        import time

        with contextlib.suppress(OSError):
            for line in self.procs.read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(line), 9)
        for _ in range(500):
            if self._try_remove():
                return
            time.sleep(0.01)


STALE_GROUP_AGE = 60.0
"""Seconds after which an empty ``tether-*`` cgroup is a leftover: a group is empty only between
its creation and the join a few milliseconds later, or after its command ended."""


@cache
def sweep(parent: Path) -> None:
    """Remove the empty groups a killed tether left behind (once a process, per parent). The
    kernel refuses to remove a group with tasks in it, so a running command's group survives."""
    import time

    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            if entry.name.startswith("tether-") and entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > STALE_GROUP_AGE:
                        os.rmdir(entry.path)


@cache
def pids_parents() -> tuple[Path, ...]:
    """Cgroup folders where a child with a ``pids.max`` can be made: our own cgroup v2 folder when
    it has the controller delegated, else the v1 ``pids`` hierarchy's root."""
    candidates: list[Path] = []
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return ()
    for line in lines:
        _, controllers, relative = line.split(":", 2)
        if controllers == "":
            unified = Path("/sys/fs/cgroup") / relative.lstrip("/")
            for base in (unified, Path("/sys/fs/cgroup/unified") / relative.lstrip("/")):
                controls = base / "cgroup.subtree_control"
                with contextlib.suppress(OSError):
                    if "pids" in controls.read_text().split():
                        candidates.append(base)
        elif "pids" in controllers.split(","):
            candidates.append(Path("/sys/fs/cgroup/pids") / relative.lstrip("/"))
    return tuple(c for c in candidates if os.access(c, os.W_OK))
