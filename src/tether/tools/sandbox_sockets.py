"""The host's Unix sockets, out of a confined command's reach.

A network namespace cuts a command off from the network and from abstract Unix sockets, but a
socket that is a file (``/run/...``) stays reachable through the read-only root: ``connect`` needs
no write to the file system. Those sockets are doors to programs running outside the sandbox, as
the user: the systemd user manager and the session bus (``systemd-run --user`` starts any
command, unconfined), the system bus, Docker's and containerd's sockets (root), gpg-agent and
ssh-agent (sign with the user's keys), Wayland and PulseAudio, a local PostgreSQL (tether's own
database when it is one, with peer authentication). So every confined command gets, in
``/run`` (and ``/var/run`` when it is a folder of its own):

- each user's runtime folder (``/run/user/<uid>``, ``$XDG_RUNTIME_DIR``: agents, buses, display
  servers) replaced by an empty one, unless a workspace lies inside it;
- each other socket within ``SCAN_DEPTH`` levels covered by ``/dev/null`` (``connect`` is then
  refused), found afresh before each command (a daemon started since is covered too), looking
  at ``SCAN_MAX`` entries at most.

Workspaces keep their own sockets (a dev server's, a test's). ``/tmp`` is already private. The
SSH agent is out of reach wherever its socket is (``agent_mounts``: 1Password's and Secretive's
live in the home folder, which may be the workspace), and so is gpg-agent in its home folder
(``$GNUPGHOME``), as in Codex and Claude Code, whose Linux sandboxes refuse every Unix socket:
a command that could sign with the user's keys could push to any repository the user may, sign
a release, or log in to their servers. Not covered: other sockets elsewhere
on the disk (add their folders to ``sandbox.hide``), and with the network shared
(``--sandbox-network``) abstract sockets such as X11's ``@/tmp/.X11-unix/X0``.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

RUNTIME = ("/run", "/var/run")
SCAN_DEPTH = 4
"""``/run/containerd/s/<hash>``, ``/run/systemd/journal/socket``: daemons put theirs shallow."""
SCAN_MAX = 4096
"""Entries looked at per command: ``/run`` holds a few hundred on a desktop; a bound on the cost."""


def socket_mounts(keep: Sequence[Path]) -> list[str]:
    """``bwrap`` arguments hiding the host's Unix sockets below ``RUNTIME`` but those inside ``keep``."""
    args: list[str] = []
    budget = [SCAN_MAX]
    seen: set[str] = set()
    roots = [str(root).rstrip("/") + "/" for root in keep]
    for top in RUNTIME:
        real = os.path.realpath(top)
        if real in seen or not os.path.isdir(real):
            continue
        seen.add(real)
        users = os.path.join(real, "user")
        for entry in _entries(users, budget):
            if entry.is_dir(follow_symlinks=False) and not _holds(entry.path, keep):
                args += ["--tmpfs", entry.path]
                seen.add(entry.path)
        args += _sockets(real, SCAN_DEPTH, roots, seen, budget)
    return args


def agent_mounts(keep: Sequence[Path]) -> list[str]:
    """``bwrap`` arguments that take the SSH agent and gpg-agent away from a confined command:
    no ``SSH_AUTH_SOCK`` nor ``GPG_AGENT_INFO`` in its environment (ssh then does not try the
    agent, and says nothing), and ``/dev/null`` over the sockets they name, resolved, wherever they are (in
    a workspace too) but in ``/tmp`` outside ``keep``, the workspaces (private already), so a
    command that knows the path cannot connect either; and over gpg-agent's sockets in its home
    folder (``$GNUPGHOME`` or ``~/.gnupg``: ``S.gpg-agent``, ``S.gpg-agent.ssh``, ...), where it
    listens when there is no ``/run/user/<uid>``. A command run outside the sandbox
    (``--sandbox off``, or one the user let escalate) keeps both agents: ``git push`` over ssh
    and ``git tag -s`` work there."""
    args = ["--unsetenv", "SSH_AUTH_SOCK", "--unsetenv", "GPG_AGENT_INFO"]
    named = [os.environ.get("SSH_AUTH_SOCK", ""), os.environ.get("GPG_AGENT_INFO", "").split(":")[0]]
    gnupg = os.path.expanduser(os.environ.get("GNUPGHOME") or "~/.gnupg")
    for entry in _entries(gnupg, [SCAN_MAX]):
        if entry.name.startswith("S."):
            named.append(entry.path)
    roots = [str(root).rstrip("/") + "/" for root in keep]
    covered: set[str] = set()
    for path in filter(None, named):
        real = os.path.realpath(path)
        if real in covered or (real.startswith(("/tmp/", "/var/tmp/")) and not _inside(real, roots)):
            continue
        with contextlib.suppress(OSError):  # gone: nothing to reach
            if stat.S_ISSOCK(os.stat(real).st_mode):
                args += ["--ro-bind", "/dev/null", real]
                covered.add(real)
    return args


def _sockets(folder: str, depth: int, keep: Sequence[str], skip: set[str], budget: list[int]) -> list[str]:
    args: list[str] = []
    for entry in _entries(folder, budget):
        # the entry's type comes with the listing: only what is neither a folder, a file nor a
        # link costs a stat
        if entry.is_dir(follow_symlinks=False):
            if depth > 1 and entry.path not in skip and not _inside(entry.path, keep):
                args += _sockets(entry.path, depth - 1, keep, skip, budget)
        elif not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
            try:
                is_socket = stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode)
            except OSError:
                continue
            if is_socket and not _inside(entry.path, keep):
                args += ["--ro-bind", "/dev/null", entry.path]
    return args


def _inside(path: str, keep: Sequence[str]) -> bool:
    """Whether ``path`` is one of ``keep`` (folders ending in ``/``) or inside one."""
    return (path + "/").startswith(tuple(keep))


def _entries(folder: str, budget: list[int]) -> list[os.DirEntry[str]]:
    """The entries of ``folder`` (none if unreadable), counted against ``budget``."""
    if budget[0] <= 0:
        return []
    try:
        with os.scandir(folder) as entries:
            found = [entry for entry, _ in zip(entries, range(budget[0]), strict=False)]
    except OSError:
        return []
    budget[0] -= len(found)
    return found


def _holds(folder: str, keep: Sequence[Path]) -> bool:
    """Whether a workspace root is ``folder`` or lies inside it."""
    return any(root == Path(folder) or root.is_relative_to(folder) for root in keep)
