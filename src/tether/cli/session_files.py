"""``tether sessions import PATH…``, ``tether sessions export ID``, ``tether sessions delete ID``
and ``tether --export FILE``: session files in and out.

Import tells the two formats apart by the header: a tether export names its ``format``, a pi
session file does not. Each file is imported on its own; a bad one is reported (one line naming
the file and what is wrong) and the others still go in. Export writes tether's JSONL export, or
with ``--format pi`` a pi session file (``tether.session.pi_files``).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.session import SessionManager
    from tether.store import SessionRecord


def import_session_file(sessions: SessionManager, path: Path, problems: list[str]) -> SessionRecord:
    """Store a pi session file or a tether export (``tether sessions import``, ``/import``);
    raises ``ValueError``, ``OSError`` or ``SessionError`` saying what is wrong with it. The
    entries of a pi file that tether cannot store are left out, each reported in ``problems``."""
    from tether.session.pi_files import import_pi_session, session_file_kind

    if not path.is_file():
        raise ValueError(_not_a_file(path))
    kind = session_file_kind(path)
    if kind is None:
        raise ValueError("neither a pi session file nor a tether export (no session header first)")
    return import_pi_session(sessions, path, problems) if kind == "pi" else sessions.import_file(path)


def _not_a_file(path: Path) -> str:
    """Why ``path``, not a regular file, cannot be read as a session file: missing, a folder, or
    a pipe or a device (a FIFO would block the read forever, /dev/zero never end). A missing file
    was said to be a pipe or a device (``/import``), or "not a session file" (``--export``)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:  # no permission to look, a link loop
        return exc.strerror or str(exc)
    if stat.S_ISDIR(mode):
        return "a folder, not a session file"
    return "not a regular file (a pipe or a device cannot be imported)"


def import_files(paths: list[str]) -> int:
    """Import every file; print ``<new id>  <file>`` per success. Exit 1 if any failed."""
    from tether.session import SessionManager
    from tether.store import SessionError

    failed = 0
    with SessionManager() as sessions:
        for name in paths:
            path = Path(name)
            problems: list[str] = []
            try:
                record = import_session_file(sessions, path, problems)
            except (SessionError, OSError, ValueError) as exc:
                sys.stderr.write(f"error: {name}: {exc}\n")
                failed += 1
                continue
            finally:
                sys.stderr.writelines(f"note: {problem}\n" for problem in problems)
            sys.stdout.write(f"{record.id}  {name}\n")
    return 1 if failed else 0


def export_file(session_id: str, kind: str, output: str | None) -> int:
    """Write one session to ``output`` (default ``./<id>.jsonl``, ``./<id>.html`` for the page
    ``--export`` writes); print the path."""
    if kind == "html":
        return export_html(session_id, output or f"{session_id}.html", command="sessions export")
    from tether.session import SessionManager
    from tether.session.pi_files import export_pi_session
    from tether.store import SessionError

    path = Path(output) if output else Path(f"{session_id}.jsonl")
    with SessionManager() as sessions:
        try:
            if kind == "pi":
                export_pi_session(sessions, session_id, path, on_skip=say_skipped)
            else:
                sessions.export(session_id, path, on_skip=say_skipped)
        except (SessionError, OSError) as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 1
    sys.stdout.write(f"{path}\n")
    return 0


def say_skipped(why: str) -> None:
    """One line on stderr for an entry left out for its damaged row (an export, ``sessions
    follow``)."""
    sys.stderr.write(f"tether: {why}; skipped\n")


def export_html(source: str, output: str | None, *, command: str = "--export") -> int:
    """``tether --export FILE [OUTPUT]`` (pi's flag): a session file — a tether export or a pi
    session file — or the id of a stored session, as one HTML page (default
    ``tether-session-<name>.html``); print the path."""
    import tempfile

    from tether.ai.paths import config_dir
    from tether.session import SessionManager
    from tether.session.export_html import page_colours, write_stored_html
    from tether.session.pi_files import import_pi_session, session_file_kind
    from tether.session.settings import load_settings
    from tether.store import SessionError

    path = Path(os.path.expanduser(source))  # ~nosuchuser: as spelled, not a RuntimeError
    name = path.stem if path.suffix == ".jsonl" else path.name
    out = Path(output) if output else Path(f"tether-session-{name}.html")
    try:
        # the user's theme, as /export uses it (pi's --export takes its default theme)
        colours, dark, problem = page_colours(load_settings(config_dir(), Path.cwd()).theme, config_dir())
        if problem is not None:
            sys.stderr.write(f"note: {problem}\n")
        if not path.is_file():
            if path.exists() or "/" in source or source.endswith(".jsonl"):
                raise ValueError(_not_a_file(path))
            with SessionManager() as sessions:  # a stored session's id
                write_stored_html(out, sessions, source, say_skipped, colours=colours, dark=dark)
        else:
            kind = session_file_kind(path)
            if kind is None:
                raise ValueError("neither a pi session file nor a tether export (no session header first)")
            with (
                tempfile.TemporaryDirectory() as scratch,
                SessionManager.at(Path(scratch) / "x.db") as sessions,
            ):
                problems: list[str] = []
                try:
                    record = (
                        import_pi_session(sessions, path, problems)
                        if kind == "pi"
                        else sessions.import_file(path)
                    )
                finally:
                    sys.stderr.writelines(f"note: {problem}\n" for problem in problems)
                write_stored_html(out, sessions, record.id, say_skipped, colours=colours, dark=dark)
    except (SessionError, OSError, ValueError) as exc:
        sys.stderr.write(f"tether: {command} {source}: {exc}\n")
        return 1
    sys.stdout.write(f"Exported to: {out}\n")
    return 0


def delete_session(session_id: str, *, yes: bool) -> int:
    """``tether sessions delete ID``: ask first (on a terminal) unless ``yes``."""
    from tether.session import SessionManager
    from tether.session.stats import SessionRow
    from tether.store import SessionError

    with SessionManager() as sessions:
        try:
            row = SessionRow.of(sessions.store.get_session(session_id))
            if not yes:
                if not sys.stdin.isatty():
                    sys.stderr.write(
                        "tether: sessions delete asks first; pass --yes to delete without asking\n"
                    )
                    return 2
                sys.stderr.write(f"{row}\n")
                if input(f"Delete session {session_id}? [y/N] ").strip().lower() not in ("y", "yes"):
                    sys.stderr.write("kept\n")
                    return 1
            sessions.delete(session_id)
        except SessionError as exc:
            sys.stderr.write(f"tether: {exc}\n")
            return 1
    sys.stdout.write(f"deleted {session_id}\n")
    return 0
