"""``tether sessions import PATH…`` and ``tether sessions export ID``: session files in and out.

Import tells the two formats apart by the header: a tether export names its ``format``, a pi
session file does not. Each file is imported on its own; a bad one is reported (one line naming
the file and what is wrong) and the others still go in. Export writes tether's JSONL export, or
with ``--format pi`` a pi session file (``tether.session.pi_files``).
"""

from __future__ import annotations

import sys
from pathlib import Path


def import_files(paths: list[str]) -> int:
    """Import every file; print ``<new id>  <file>`` per success. Exit 1 if any failed."""
    from tether.session import SessionError, SessionManager
    from tether.session.pi_files import import_pi_session, session_file_kind

    failed = 0
    with SessionManager() as sessions:
        for name in paths:
            path = Path(name)
            try:
                kind = session_file_kind(path)
                if kind is None:
                    raise ValueError(
                        "neither a pi session file nor a tether export (no session header first)"
                    )
                record = import_pi_session(sessions, path) if kind == "pi" else sessions.import_file(path)
            except (SessionError, OSError, ValueError) as exc:
                sys.stderr.write(f"error: {name}: {exc}\n")
                failed += 1
                continue
            sys.stdout.write(f"{record.id}  {name}\n")
    return 1 if failed else 0


def export_file(session_id: str, kind: str, output: str | None) -> int:
    """Write one session to ``output`` (default ``./<id>.jsonl``); print the path."""
    from tether.session import SessionError, SessionManager
    from tether.session.pi_files import export_pi_session

    path = Path(output) if output else Path(f"{session_id}.jsonl")
    with SessionManager() as sessions:
        try:
            if kind == "pi":
                export_pi_session(sessions, session_id, path)
            else:
                sessions.export(session_id, path)
        except (SessionError, OSError) as exc:
            sys.stderr.write(f"error: {exc}\n")
            return 1
    sys.stdout.write(f"{path}\n")
    return 0
