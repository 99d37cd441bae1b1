"""Real escape attempts against the sandbox (bubblewrap): each fails confined and works with it off.

Each attempt is run twice through the real ``bash`` tool, once in ``workspace-write`` and once
with the sandbox ``off``, so a test cannot pass because the attempt was broken to begin with.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tools_support import Names, answer_hello, call, text_of

from tether.agent import AgentContext, BeforeToolCallContext
from tether.ai.paths import data_dir
from tether.errors import ToolError
from tether.tools import Workspace, create_bash_tool, sandbox as sandbox_module, sandbox_sockets
from tether.tools.approval import ApprovalGate, describe_call
from tether.tools.errors import PathOutsideWorkspace
from tether.tools.process import supervised
from tether.tools.prompt_input import run_shell_input
from tether.tools.sandbox import Confined, SandboxPolicy, secret_paths, stricter, unavailable
from tether.wire import ToolCall

pytestmark = pytest.mark.skipif(
    unavailable() is not None and not os.environ.get("TETHER_REQUIRE_SANDBOX"),
    reason=f"no sandbox here: {unavailable()}",
)


@pytest.fixture
def real_dir() -> Iterator[Path]:
    """A folder outside /tmp (which the sandbox replaces by a private one): in the home folder."""
    path = Path(tempfile.mkdtemp(prefix="tether-sandbox-test-", dir=Path.home()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def home(real_dir: Path) -> Path:
    """A home folder with a private key and a tether database in it, like a user's (outside /tmp:
    in the sandbox's private /tmp everything is out of sight, hidden or not)."""
    home = real_dir / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL\n")
    (home / "data").mkdir()
    (home / "data" / "sessions.db").write_text("SESSION-DATABASE\n")
    return home


def policy(home: Path, mode: str = "workspace-write", **changes: object) -> SandboxPolicy:
    return replace(
        SandboxPolicy(mode=mode, hide=secret_paths(home, [home / "data"])),  # type: ignore[arg-type]
        **changes,
    )


def confined(root: Path, home: Path, mode: str = "workspace-write", **changes: object) -> Workspace:
    return Workspace(root, sandbox=policy(home, mode, **changes))


async def outcome(workspace: Workspace, command: str) -> tuple[bool, str]:
    """(succeeded, output) of ``command`` run by the bash tool."""
    try:
        return True, text_of(await call(create_bash_tool(workspace), command=command))
    except ToolError as failure:
        return False, str(failure)


async def both(root: Path, home: Path, command: str) -> tuple[tuple[bool, str], tuple[bool, str]]:
    """The outcome inside the sandbox and with the sandbox off."""
    inside = await outcome(confined(root, home), command)
    outside = await outcome(confined(root, home, "off"), command)
    return inside, outside


async def test_writes_go_to_the_workspace_and_nowhere_else(
    root: Path, home: Path, tmp_path: Path, real_dir: Path
) -> None:
    (ok, _), _ = await both(root, home, "echo made > inside.txt")
    assert ok and (root / "inside.txt").read_text() == "made\n"
    # beside the workspace (in the sandbox's private /tmp: written there, gone with it) and in the
    # user's home folder (read-only: refused, and the model is told how to ask for more)
    for target in (tmp_path / "outside.txt", real_dir / "outside.txt"):
        inside = await outcome(confined(root, home), f"echo escaped > {target}")
        assert not target.exists()
        ok, _ = await outcome(confined(root, home, "off"), f"echo escaped > {target}")
        assert ok and target.read_text() == "escaped\n"
    ok, said = inside
    assert not ok and "Read-only file system" in said and "escalate: true" in said


async def test_symlinks_and_dot_dot_do_not_lead_out(root: Path, home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    for command, name in (("echo x > link/a.txt", "a.txt"), ("echo x > ../elsewhere/b.txt", "b.txt")):
        ok, _ = await outcome(confined(root, home), command)
        assert not ok and not (outside / name).exists(), command
        ok, _ = await outcome(confined(root, home, "off"), command)
        assert ok and (outside / name).exists(), command


async def test_credentials_and_the_session_database_are_invisible(root: Path, home: Path) -> None:
    for path, secret in ((".ssh/id_ed25519", "PRIVATE-KEY"), ("data/sessions.db", "SESSION-DATABASE")):
        (ok_in, said_in), (ok_off, said_off) = await both(root, home, f"cat {home / path}")
        assert secret not in said_in and not ok_in
        assert ok_off and secret in said_off


async def test_credentials_that_are_links_are_invisible_too(root: Path, real_dir: Path) -> None:
    """A dotfile manager (stow, chezmoi, yadm) makes ``~/.aws`` and ``~/.netrc`` links into its
    own folder. A hidden path that was a link was passed over (no mount), so its target, the
    credentials themselves, stayed readable; the file tools refused it all along. (A home
    folder outside /tmp: the sandbox's /tmp is a private one, which hides everything in it.)"""
    home = real_dir / "home"
    dotfiles = real_dir / "dotfiles"
    (dotfiles / "aws").mkdir(parents=True)
    (dotfiles / "aws" / "credentials").write_text("AWS-SECRET-KEY\n")
    (dotfiles / "netrc").write_text("machine example.com password NETRC-PASSWORD\n")
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL\n")
    (home / ".aws").symlink_to(dotfiles / "aws")
    (home / ".netrc").symlink_to(dotfiles / "netrc")
    command = f"cat {home}/.ssh/id_ed25519 {home}/.aws/credentials {home}/.netrc {dotfiles}/netrc"
    (_, said_in), (ok_off, said_off) = await both(root, home, command)
    for secret in ("PRIVATE-KEY", "AWS-SECRET-KEY", "NETRC-PASSWORD"):
        assert secret not in said_in, said_in
        assert secret in said_off
    assert ok_off


OTHER_AGENTS_KEYS = (
    ".pi/agent/auth.json",
    ".pi/agent/models.json",
    ".codex/auth.json",
    ".claude/.credentials.json",
    ".gemini/oauth_creds.json",
    ".config/github-copilot/apps.json",
    ".local/share/opencode/auth.json",
)
"""Where other coding agents keep their API keys and sign-in tokens in the home folder."""


async def test_other_coding_agents_keys_are_invisible(root: Path, real_dir: Path) -> None:
    """pi (whose skills and prompts tether reads from ``~/.pi/agent``), Codex, Claude Code, Gemini
    CLI, Copilot and opencode keep keys beside what a command may read; hidden as tether's own
    ``auth.json`` is, from commands and from the file tools. (A home folder outside /tmp: the
    sandbox's /tmp is a private one, which hides everything in it.)"""
    home = real_dir / "home"
    for relative in OTHER_AGENTS_KEYS:
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(f"KEY-OF {relative}\n")
    (home / ".pi" / "agent" / "skills").mkdir()  # what stays readable beside them
    (home / ".pi" / "agent" / "skills" / "SKILL.md").write_text("a skill\n")
    for relative in OTHER_AGENTS_KEYS:
        (ok_in, said_in), (ok_off, said_off) = await both(root, home, f"cat {home / relative}")
        assert not ok_in and "KEY-OF" not in said_in, relative
        assert ok_off and "KEY-OF" in said_off
        workspace = replace(confined(root, home), allow_outside=True)
        with pytest.raises(PathOutsideWorkspace, match="hidden by the sandbox"):
            workspace.resolve(str(home / relative), reading=True)
    ok, said = await outcome(confined(root, home), f"cat {home}/.pi/agent/skills/SKILL.md")
    assert ok and "a skill" in said


async def test_other_runs_workspaces_are_invisible_when_their_folder_is_hidden(
    home: Path, real_dir: Path
) -> None:
    # a shared worker: every run's workspace in one folder, which the user's `hide` names; a run
    # sees and writes its own workspace, and nothing of the others'
    own, other = real_dir / "runs" / "run-1", real_dir / "runs" / "run-2"
    own.mkdir(parents=True)
    other.mkdir()
    (other / "notes.txt").write_text("OTHER-RUN-NOTES\n")
    command = f"cat {other / 'notes.txt'}"
    inside = await outcome(
        confined(own, home, hide=(real_dir / "runs",)), command + " && echo mine > mine.txt"
    )
    assert not inside[0] and "OTHER-RUN-NOTES" not in inside[1]
    ok, said = await outcome(
        confined(own, home, hide=(real_dir / "runs",)), "echo mine > mine.txt && cat mine.txt"
    )
    assert ok and said == "mine\n" and (own / "mine.txt").read_text() == "mine\n"
    ok, said = await outcome(confined(own, home, "off", hide=(real_dir / "runs",)), command)
    assert ok and "OTHER-RUN-NOTES" in said
    # the file tools agree, even with paths outside the workspace allowed
    workspace = replace(confined(own, home, hide=(real_dir / "runs",)), allow_outside=True)
    with pytest.raises(PathOutsideWorkspace, match="hidden by the sandbox"):
        workspace.resolve(str(other / "notes.txt"), reading=True)
    assert workspace.resolve("mine.txt", reading=True) == own.resolve() / "mine.txt"


async def test_file_tools_refuse_what_the_sandbox_hides(root: Path, home: Path) -> None:
    workspace = replace(confined(root, home), allow_outside=True)
    with pytest.raises(PathOutsideWorkspace, match="hidden by the sandbox"):
        workspace.resolve(str(home / ".ssh" / "id_ed25519"), reading=True)
    assert workspace.resolve(str(root / "x.txt")) == root.resolve() / "x.txt"
    with pytest.raises(ToolError, match="read-only"):
        confined(root, home, "read-only").resolve("x.txt")
    # and with the sandbox off, the same paths are as the workspace policy says
    off = replace(confined(root, home, "off"), allow_outside=True)
    assert off.resolve(str(home / ".ssh" / "id_ed25519"), reading=True).name == "id_ed25519"


async def test_read_only_mode_writes_nothing_but_tmp(root: Path, home: Path) -> None:
    workspace = confined(root, home, "read-only")
    ok, said = await outcome(workspace, "echo x > in-workspace.txt")
    assert not ok and "Read-only file system" in said
    ok, said = await outcome(
        workspace, "echo scratch > /tmp/t && cat /tmp/t && cat " + str(root / "seen.txt")
    )
    assert not ok or "scratch" in said  # /tmp is private and writable
    (root / "seen.txt").write_text("readable\n")
    ok, said = await outcome(workspace, f"cat {root / 'seen.txt'}")
    assert ok and said == "readable\n"


async def test_other_processes_are_invisible(root: Path, home: Path) -> None:
    other = subprocess.Popen(["sleep", "60"])
    try:
        (ok_in, _), (ok_off, said_off) = await both(root, home, f"cat /proc/{other.pid}/cmdline")
        assert not ok_in
        assert ok_off and "sleep" in said_off
    finally:
        other.kill()
        other.wait()


async def test_no_network_unless_allowed(root: Path, home: Path, listener: int) -> None:
    command = (
        'python3 -c \'import socket; s = socket.create_connection(("127.0.0.1", '
        f"{listener}), 2); print(s.recv(5).decode())'"
    )
    (ok_in, said_in), (ok_off, said_off) = await both(root, home, command)
    assert not ok_in and "hello" not in said_in
    assert ok_off and "hello" in said_off
    ok, said = await outcome(confined(root, home, network=True), command)
    assert ok and "hello" in said


@contextlib.contextmanager
def unix_servers(paths: list[Path]) -> Generator[None, None, None]:
    """A Unix socket server at each path answering 'hello' (as the systemd user manager, Docker
    or gpg-agent listen outside the sandbox)."""
    servers: list[socket.socket] = []
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen()
        server.settimeout(0.2)
        servers.append(server)
    stop = threading.Event()
    threads = [threading.Thread(target=answer_hello, args=(server, stop), daemon=True) for server in servers]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        for server in servers:
            server.close()


async def test_the_hosts_unix_sockets_are_out_of_reach(
    root: Path, home: Path, real_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file socket was reachable through the read-only root with the network off: the systemd
    user manager (``systemd-run --user``), Docker, gpg-agent or a local PostgreSQL all run
    outside. The runtime folder (``/run``, here a stand-in for it) is searched before each
    command: a user's runtime folder is emptied, each other socket covered; the workspace's own
    sockets stay."""
    run = real_dir / "run"
    monkeypatch.setattr(sandbox_sockets, "RUNTIME", (str(run),))
    outside = [run / "user" / "1000" / "bus", run / "docker.sock", run / "postgresql" / ".s.PGSQL.5432"]
    outside.append(run / "containerd" / "s" / "deep.sock")
    own = root / "dev.sock"
    connect = "python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(5).decode())' "
    with unix_servers([*outside, own]):
        for path in outside:
            (ok_in, said_in), (ok_off, said_off) = await both(root, home, connect + str(path))
            assert not ok_in and "hello" not in said_in, path
            assert ok_off and "hello" in said_off, (path, said_off)
            ok, said = await outcome(confined(root, home, network=True), connect + str(path))
            assert not ok and "hello" not in said, path
        ok, said = await outcome(confined(root, home), connect + str(own))
        assert ok and "hello" in said


@pytest.mark.parametrize("where", ["home", "workspace"])
async def test_the_ssh_agent_is_out_of_reach_wherever_its_socket_is(
    root: Path, home: Path, real_dir: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """An agent socket outside ``/run`` and ``/tmp`` (1Password's ``~/.1password/agent.sock``,
    and in the workspace when tether runs in the home folder) signed for a confined command:
    ``SSH_AUTH_SOCK`` is unset inside and its socket covered. With the sandbox off (``git push``
    over ssh) the agent is there."""
    agent = (real_dir if where == "home" else root) / ".1password" / "agent.sock"
    monkeypatch.setenv("SSH_AUTH_SOCK", str(agent))
    connect = (
        "echo agent=${SSH_AUTH_SOCK:-none}; python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); "
        f"s.connect(sys.argv[1]); print(s.recv(5).decode())' {agent}"
    )
    with unix_servers([agent]):
        (ok_in, said_in), (ok_off, said_off) = await both(root, home, connect)
    assert not ok_in and "hello" not in said_in and "agent=none" in said_in, said_in
    assert ok_off and "hello" in said_off and f"agent={agent}" in said_off, said_off


@pytest.mark.parametrize("where", ["gnupghome", "workspace"])
async def test_gpg_agent_and_keys_are_out_of_reach_outside_run(
    root: Path, home: Path, real_dir: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Without ``/run/user/<uid>`` gpg-agent listens in ``$GNUPGHOME`` (``S.gpg-agent``, its
    ``.ssh`` and ``.extra`` sockets): one outside the home folder's ``~/.gnupg`` was reachable
    from a confined command, which could sign (a release tag, a commit) or, through the ``.ssh``
    socket, log in with the user's keys, and its ``private-keys-v1.d`` was readable. Now the
    folder is hidden, ``GPG_AGENT_INFO`` unset and the sockets covered (in the workspace too,
    tether run in ``$GNUPGHOME``). With the sandbox off (an escalated command) both are there."""
    gnupg = real_dir / "gnupg" if where == "gnupghome" else root
    (gnupg / "private-keys-v1.d").mkdir(parents=True)
    (gnupg / "private-keys-v1.d" / "K.key").write_text("PRIVATE-KEY-MATERIAL\n")
    monkeypatch.setenv("GNUPGHOME", str(gnupg))
    sockets = [gnupg / name for name in ("S.gpg-agent", "S.gpg-agent.ssh", "S.gpg-agent.extra")]
    monkeypatch.setenv("GPG_AGENT_INFO", f"{sockets[0]}:0:1")
    connect = (
        "echo info=${GPG_AGENT_INFO:-none}; "
        f"cat {gnupg}/private-keys-v1.d/K.key; "
        "python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
        "print(s.recv(5).decode())' "
    )
    with unix_servers(sockets):
        for path in sockets:
            (ok_in, said_in), (ok_off, said_off) = await both(root, home, connect + str(path))
            assert not ok_in and "hello" not in said_in and "info=none" in said_in, said_in
            if where == "gnupghome":
                assert "PRIVATE-KEY-MATERIAL" not in said_in, said_in
            assert ok_off and "hello" in said_off and f"info={sockets[0]}" in said_off, said_off
            assert "PRIVATE-KEY-MATERIAL" in said_off


async def test_a_fork_bomb_stops_at_the_process_limit(root: Path, home: Path) -> None:
    # sleeps that outlast the loop however slow the machine, so they all exist at once
    command = "for i in $(seq 300); do sleep 60 & done; jobs -p | wc -l; kill $(jobs -p)"
    ok, said = await outcome(confined(root, home, pids_max=64), command)
    assert not ok and "fork" in said and "Resource temporarily unavailable" in said
    ok, said = await outcome(confined(root, home, "off"), command)
    assert ok and said.split()[0] == "300"


async def test_the_command_joins_its_cgroup_or_gets_a_process_rlimit(
    root: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the supervisor joins the command's cgroup at a gate; where the join is refused it caps the
    # processes with RLIMIT_NPROC itself, which `ulimit -u` inside shows
    if not sandbox_module.pids_parents():
        pytest.skip("no writable pids cgroup here: every command gets the rlimit")
    ok, said = await outcome(confined(root, home, pids_max=77), "ulimit -u")
    assert ok and said.split()[0] != "77"
    monkeypatch.setattr(Confined, "join", lambda self, pid: False)  # type: ignore[misc]
    ok, said = await outcome(confined(root, home, pids_max=77), "ulimit -u")
    assert ok and said.split()[0] == "77"


def test_a_closed_gate_runs_nothing(tmp_path: Path) -> None:
    # tether died (or gave up) before the supervisor joined its cgroup: the command never starts
    marker = tmp_path / "ran"
    for byte, runs in ((b"", False), (b"1", True)):
        gate, opener = os.pipe()
        child = subprocess.Popen(
            supervised(["touch", str(marker)], gate=gate, nproc=10), pass_fds=(gate,), start_new_session=True
        )
        os.close(gate)
        os.write(opener, byte)
        os.close(opener)
        child.wait(timeout=30)
        assert marker.exists() is runs


def test_groups_a_killed_tether_left_are_swept() -> None:
    parents = sandbox_module.pids_parents()
    if not parents:
        pytest.skip("no writable pids cgroup here")
    stale, fresh = parents[0] / "tether-stale-test", parents[0] / "tether-fresh-test"
    stale.mkdir()
    fresh.mkdir()
    try:
        hour_ago = time.time() - 3600
        os.utime(stale, (hour_ago, hour_ago))
        sandbox_module.sweep.__wrapped__(parents[0])
        assert not stale.exists() and fresh.exists()
    finally:
        for group in (stale, fresh):
            with contextlib.suppress(FileNotFoundError):
                group.rmdir()


def running(marker: str) -> bool:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, check=False)
    return found.returncode == 0


async def test_nothing_it_started_outlives_the_command(root: Path, home: Path) -> None:
    marker = "sleep 3171.5"
    ok, _ = await outcome(confined(root, home), f"setsid {marker} > /dev/null 2>&1 & echo started")
    assert ok
    for _ in range(100):
        if not running(marker):
            break
        await asyncio.sleep(0.02)
    assert not running(marker)
    ok, _ = await outcome(confined(root, home, "off"), f"setsid {marker} > /dev/null 2>&1 & echo started")
    try:
        assert ok and running(marker)
    finally:
        subprocess.run(["pkill", "-f", marker], check=False)


async def test_setuid_programs_gain_nothing(root: Path, home: Path) -> None:
    (ok_in, said_in), (ok_off, said_off) = await both(root, home, "grep NoNewPrivs /proc/self/status")
    assert ok_in and said_in.split() == ["NoNewPrivs:", "1"]
    assert ok_off and said_off.split() == ["NoNewPrivs:", "0"]


async def test_a_setuid_binary_does_not_change_who_runs_it(root: Path, home: Path) -> None:
    # a real set-user-ID program: `id` owned by `nobody` with the bit set, in the workspace; it
    # takes nobody's identity outside and none inside (no_new_privs, nosuid mounts)
    if os.geteuid() != 0:
        pytest.skip("making a set-user-ID program of another user needs root")
    program = root / "setuid-id"
    shutil.copy(shutil.which("id") or "/usr/bin/id", program)
    os.chown(program, 65534, 65534)
    program.chmod(0o4755)
    (ok_in, said_in), (ok_off, said_off) = await both(root, home, f"{program} -u")
    assert ok_in and said_in.split() != ["65534"]
    assert ok_off and said_off.split() == ["65534"]


async def test_user_commands_are_confined_too(root: Path, home: Path, real_dir: Path) -> None:
    target = real_dir / "bang.txt"
    sandbox = confined(root, home).confinement()
    assert sandbox is not None
    message = await run_shell_input(f"echo x > {target}", cwd=root, sandbox=sandbox)
    assert "exitCode" in message and message["exitCode"] != 0 and not target.exists()
    message = await run_shell_input(f"echo x > {target}", cwd=root)
    assert message.get("exitCode") == 0 and target.exists()


def test_confined_commands_need_no_approval_but_escalation_does(root: Path, home: Path) -> None:
    workspace = confined(root, home)
    plain = {"type": "toolCall", "id": "1", "name": "bash", "arguments": {"command": "make"}}
    escalated = {
        **plain,
        "arguments": {"command": "make", "escalate": True, "justification": "needs ~/.cache"},
    }
    assert not workspace.needs_approval(plain)  # type: ignore[arg-type]
    assert workspace.needs_approval(escalated)  # type: ignore[arg-type]
    assert "OUTSIDE the sandbox" in describe_call(escalated) and "needs ~/.cache" in describe_call(escalated)  # type: ignore[arg-type]
    assert confined(root, home, "off").needs_approval(plain)  # type: ignore[arg-type]
    assert Workspace(root).needs_approval(plain)  # type: ignore[arg-type]


def test_without_bubblewrap_every_command_asks(
    root: Path, home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    unavailable.cache_clear()
    try:
        assert "bubblewrap is not installed" in (unavailable() or "")
        workspace = confined(root, home)
        assert workspace.confinement() is None
        assert workspace.needs_approval(
            {"type": "toolCall", "id": "1", "name": "bash", "arguments": {"command": "ls"}}
        )
    finally:
        unavailable.cache_clear()


async def test_where_bubblewrap_cannot_make_namespaces_the_question_says_why(
    root: Path, home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # bwrap is installed (no warning at start-up, which only looks for it) but fails, as where
    # user namespaces are switched off: every command is asked about, saying why
    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    unavailable.cache_clear()
    sandbox_module._bwrap.cache_clear()  # pyright: ignore[reportPrivateUsage]: the probe is cached per process
    try:
        assert sandbox_module.missing() is None
        gate = ApprovalGate(confined(root, home))
        call: ToolCall = {"type": "toolCall", "id": "1", "name": "bash", "arguments": {"command": "ls"}}
        message: Any = {"role": "assistant", "content": [call]}
        context = BeforeToolCallContext(message, call, {"command": "ls"}, AgentContext())
        refused = await gate(context)
        assert refused is not None and refused.block
        assert "sandbox unavailable: bubblewrap cannot create namespaces here (bwrap: No permissions" in (
            refused.reason or ""
        )
    finally:
        unavailable.cache_clear()
        sandbox_module._bwrap.cache_clear()  # pyright: ignore[reportPrivateUsage]: the probe is cached per process


def test_a_project_never_widens_the_sandbox() -> None:
    user = SandboxPolicy("workspace-write", network=False)
    assert stricter(user, SandboxPolicy("off", network=True)) == SandboxPolicy(
        "workspace-write", network=False
    )
    assert stricter(user, SandboxPolicy("read-only")).mode == "read-only"


def test_the_default_hidden_paths_cover_tether_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TETHER_HOME", str(tmp_path))
    hidden = secret_paths(Path.home(), [data_dir()])
    assert Path.home() / ".ssh" in hidden and tmp_path / "data" in hidden and Path("/etc/shadow") in hidden


@pytest.fixture
def web() -> Iterator[int]:
    """An HTTP server on 127.0.0.1 answering every GET with 'page'."""
    import http.server

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"page")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


FETCH = "python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "
"""A confined program fetching the URL after it through the proxy (``HTTP_PROXY``)."""


async def test_allowed_hosts_are_reachable_through_the_proxy_and_nothing_else(
    root: Path, home: Path, web: int
) -> None:
    workspace = confined(root, home, allow_hosts=(f"localhost:{web}",))  # not a web port: named
    ok, said = await outcome(workspace, FETCH + f"http://localhost:{web}/")
    assert ok and said.strip() == "page"
    ok, said = await outcome(workspace, FETCH + f"http://127.0.0.1:{web}/")  # the same server, not allowed
    assert not ok and "HTTP Error 403" in said
    direct = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {web}), 2)'"
    ok, _ = await outcome(workspace, direct)  # ignoring the proxy reaches nothing
    assert not ok
    ok, said = await outcome(confined(root, home), FETCH + f"http://localhost:{web}/")  # no allow list
    assert not ok and "page" not in said


async def test_a_name_a_wildcard_allows_reaches_no_private_address(
    root: Path, home: Path, web: int, names: Names
) -> None:
    """A confined program fetching a name under an allowed ``*.example.test`` that DNS answers
    with 127.0.0.1 got the host's own web server: whoever runs a name under an allowed domain
    chooses where it points (the host's loopback, a cloud's metadata service). Named itself,
    it is reached."""
    names.answers["inner.example.test"] = [["127.0.0.1"]]
    url = f"http://inner.example.test:{web}/"
    ok, said = await outcome(confined(root, home, allow_hosts=(f"*.example.test:{web}",)), FETCH + url)
    assert not ok and "HTTP Error 403" in said and "page" not in said
    named = (f"*.example.test:{web}", f"inner.example.test:{web}")
    ok, said = await outcome(confined(root, home, allow_hosts=named), FETCH + url)
    assert ok and said.strip() == "page"
