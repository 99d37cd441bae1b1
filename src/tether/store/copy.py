"""Copying sessions between stores (SQLite → PostgreSQL and back), ids and trees intact.

A copy keeps each session's id, cwd, times, title, fork parent, every entry (all branches, same
ids and parents, same append order) and its leaf; the counters follow from the entries. It is
idempotent and resumable: a session already in the target gets only the entries it lacks, so
running the same copy twice changes nothing and an interrupted one finishes where it stopped.
A live session copies as far as it is written; copying again catches up.

A target session that went its own way (it has entries the source lacks, because it was
written to after an earlier copy) is left alone and reported, never rewound.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from tether.store.entries import EntryDict
from tether.store.store import (
    SessionExistsError,
    SessionLockedError,
    SessionRecord,
    SessionStore,
    create_as,
)
from tether.store.tree import parse_payload

BATCH = 500
"""Entries per append transaction: a long session is not one giant statement, and an
interrupted copy keeps what it wrote."""


@dataclass(slots=True)
class CopyReport:
    sessions: int = 0
    """Sessions now complete in the target (new, completed, or already there)."""
    entries: int = 0
    """Entries written by this run."""
    skipped: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """(session id, why) of each session left alone."""


def copy_sessions(
    source: SessionStore, target: SessionStore, session_ids: Sequence[str] | None = None
) -> CopyReport:
    """Copy the given sessions (default: all), oldest first; see the module docstring."""
    records = [source.get_session(i) for i in session_ids] if session_ids else source.list_sessions()[::-1]
    report = CopyReport()
    for record in records:
        try:
            report.entries += copy_session(source, target, record)
            report.sessions += 1
        except _Diverged:
            report.skipped.append((record.id, "the target's copy has entries the source lacks"))
        except SessionLockedError as err:
            report.skipped.append((record.id, str(err)))
    return report


class _Diverged(Exception):
    pass


def copy_session(source: SessionStore, target: SessionStore, record: SessionRecord) -> int:
    """Bring one session of ``source`` into ``target``; returns how many entries it wrote."""
    stored = source.entries(record.id)
    with contextlib.suppress(SessionExistsError):  # copied before, maybe in part: complete it
        create_as(target, record)
    lease = target.acquire_writer(record.id)
    try:
        have = [e.id for e in target.entries(record.id)]
        if have != [e.id for e in stored[: len(have)]]:
            raise _Diverged
        missing: list[EntryDict] = [parse_payload(e.payload) for e in stored[len(have) :]]
        for start in range(0, len(missing), BATCH):
            batch = missing[start : start + BATCH]
            target.append(lease, batch, batch[-1]["id"], record.updated)
        target.set_leaf(lease, record.leaf_id, record.updated)
    finally:
        lease.release()
    return len(missing)
