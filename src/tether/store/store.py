"""The store interface: what a session backend must do, and the records it returns.

Backends (SQLite, PostgreSQL) share one contract, checked by one test suite run on both:

- entries are append-only; ``append`` writes entries, the new leaf and the session counters in
  **one transaction**, so a crash leaves either all of an append or none of it, and a resume
  never has to guess the leaf;
- only the holder of a session's ``WriterLease`` may append to it or move its leaf; a second
  writer gets ``SessionLockedError`` at once (it never waits and never interleaves), naming the
  holder's pid (and host, where writers can be on several);
- reads need no lease and see only committed data; ``watch`` tells a reader (in any process)
  that a session may have changed, so it can follow the session as it is written.

The interface is synchronous: one append is a sub-millisecond local transaction (about a
loopback round trip for PostgreSQL), cheaper than a thread hop. A host that wants a remote
backend off its event loop can call it in a thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from tether.store.entries import EntryDict
from tether.store.errors import (
    EntryNotFoundError as EntryNotFoundError,
    SchemaVersionError as SchemaVersionError,
    SessionDatabaseError as SessionDatabaseError,
    SessionError as SessionError,
    SessionExistsError as SessionExistsError,
    SessionLockedError as SessionLockedError,
    SessionNotFoundError as SessionNotFoundError,
)
from tether.store.lease import WriterLease as WriterLease
from tether.wire.json_line import replace_lone_surrogates

if TYPE_CHECKING:
    from tether.store.writer import Commit


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One row of the session table: identity, leaf and the counters ``list`` shows."""

    id: str
    cwd: str
    title: str | None
    created: int
    """Unix ms."""
    updated: int
    """Unix ms of the last append or leaf move."""
    leaf_id: str | None
    version: int
    """Entry format version the session was written with."""
    parent_session_id: str | None
    parent_entry_id: str | None
    """For a fork: the entry of the parent session it was forked at."""
    first_prompt: str | None
    entry_count: int
    message_count: int
    cost: float
    """Total USD of every assistant message ever appended, abandoned branches included."""
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int

    def identity(self) -> dict[str, Any]:
        """Who the session is, in the wire's names: the export header's fields
        (``tether.store.jsonl``) and the start of the HTTP API's session object
        (``tether.serve``), in that order."""
        return {
            "id": self.id,
            "cwd": self.cwd,
            "title": self.title,
            "created": self.created,
            "updated": self.updated,
            "leafId": self.leaf_id,
            "parentSessionId": self.parent_session_id,
            "parentEntryId": self.parent_entry_id,
        }


class StoredEntry(NamedTuple):
    """An entry as a backend returns it: indexed columns plus the JSON payload, parsed lazily.

    A named tuple because sessions are opened by the ten thousand rows.
    """

    id: str
    parent_id: str | None
    type: str
    created: int
    payload: bytes


class SessionWatch(Protocol):
    """A reader's subscription to one session's appends (see ``SessionStore.watch``)."""

    def wait(self, timeout: float) -> bool:
        """Block until the session may have changed (True) or ``timeout`` seconds pass (False).

        A True can be spurious; the caller re-reads (``entries_after``) and waits again.
        """
        ...

    def close(self) -> None: ...


class SessionStore(Protocol):
    """A durable home for sessions. See the module docstring for the contract."""

    def create_session(
        self,
        session_id: str,
        cwd: str,
        created: int,
        *,
        parent_session_id: str | None = None,
        parent_entry_id: str | None = None,
        title: str | None = None,
        version: int,
    ) -> SessionRecord:
        """Insert an empty session; ``SessionExistsError`` if the id is taken."""
        ...

    def get_session(self, session_id: str) -> SessionRecord:
        """``SessionNotFoundError`` if missing."""
        ...

    def list_sessions(self, cwd: str | None = None, limit: int | None = None) -> list[SessionRecord]:
        """Sessions, newest ``updated`` first; only those of ``cwd`` when given."""
        ...

    def workspaces(self, limit: int) -> list[str]:
        """The distinct ``cwd`` of the sessions, most recently updated first, at most ``limit``:
        what a confined command must not see of the other sessions (one query)."""
        ...

    def acquire_writer(self, session_id: str) -> WriterLease:
        """Become the session's only writer, or raise ``SessionLockedError`` at once."""
        ...

    def acquire_new_writer(self, record: SessionRecord) -> WriterLease:
        """Become the only writer of a new session, ``record`` (its row as ``create_session``
        makes it), perhaps before the row is in the store: then the first write under the lease
        inserts it in its own transaction (``SessionExistsError`` if the id is taken). For a
        session held in a handle until its first message (``SessionManager.create(deferred=True)``)."""
        ...

    def append(
        self, lease: WriterLease, entries: Sequence[EntryDict], leaf_id: str, updated: int
    ) -> SessionRecord:
        """Append entries, set the leaf and bump counters in one transaction."""
        ...

    def append_later(
        self, lease: WriterLease, entries: Sequence[EntryDict], leaf_id: str, updated: int
    ) -> Commit:
        """``append``, perhaps committed later by another thread (with other appends), in the
        order of the calls; the ``Commit`` returned is done once it was tried, and its
        ``failure(lease)`` says whether it was written."""
        ...

    def set_leaf(self, lease: WriterLease, leaf_id: str | None, updated: int) -> SessionRecord:
        """Move the leaf (branching) without writing an entry."""
        ...

    def entries(self, session_id: str) -> list[StoredEntry]:
        """Every entry of the session in append order."""
        ...

    def entries_after(self, session_id: str, entry_id: str | None) -> list[StoredEntry]:
        """Entries appended after ``entry_id`` (all when ``None``), in append order."""
        ...

    def newest_entry_id(self, session_id: str) -> str | None: ...

    def watch(self, session_id: str) -> SessionWatch:
        """Start watching a session for appends; appends committed after this call are noticed."""
        ...

    def delete_session(self, lease: WriterLease) -> None:
        """Delete the session and its entries (children forks keep their own copies)."""
        ...

    def check_present(self) -> None:
        """Raise ``SessionDatabaseError`` if what is stored can no longer be found where the store
        was opened: a SQLite file deleted (or replaced) under it, whose writes since go to the
        unlinked file and are lost at exit. Called once per run after its writes settle, never
        per message; ``close`` checks too. Usually a ``stat``; SQLite checkpoints a file moved or
        renamed under it (its ``-wal`` keeps the old name). PostgreSQL: nothing to check."""
        ...

    def close(self) -> None: ...


def create_as(store: SessionStore, record: SessionRecord) -> SessionRecord:
    """Insert ``record``'s session, empty, as ``create_session`` does: its id, folder, time, fork
    parent, title and format version (its counters and leaf follow from what is appended later).
    For whoever holds a row made elsewhere (a copy from another store, a deferred session's start)."""
    return store.create_session(
        record.id,
        record.cwd,
        record.created,
        parent_session_id=record.parent_session_id,
        parent_entry_id=record.parent_entry_id,
        title=record.title,
        version=record.version,
    )


# --- counters shared by every backend -----------------------------------------------------------


def advanced_record(
    record: SessionRecord, entries: Sequence[EntryDict], leaf_id: str, updated: int
) -> SessionRecord:
    """The session row after appending ``entries``, as every backend's ``append`` computes it:
    for a writer that has the row before its append is committed (``append_later``)."""
    c = count_entries(entries)
    # Built directly, not with ``dataclasses.replace`` (a field walk and a keyword call): this
    # runs for every entry a run records.
    return SessionRecord(
        record.id,
        record.cwd,
        c.title if c.title is not None else record.title,
        record.created,
        max(record.updated, updated),
        leaf_id,
        record.version,
        record.parent_session_id,
        record.parent_entry_id,
        record.first_prompt if record.first_prompt is not None else c.first_prompt,
        record.entry_count + c.entries,
        record.message_count + c.messages,
        record.cost + c.cost,
        record.input_tokens + c.input_tokens,
        record.output_tokens + c.output_tokens,
        record.cache_read_tokens + c.cache_read_tokens,
        record.cache_write_tokens + c.cache_write_tokens,
    )


@dataclass(slots=True)
class Counters:
    """What one append adds to a session row; derived from entries so any backend agrees."""

    entries: int = 0
    messages: int = 0
    cost: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    first_prompt: str | None = None
    title: str | None = None


def count_entries(entries: Sequence[EntryDict]) -> Counters:
    """Counter deltas of ``entries``; the first user prompt and the newest title among them.

    Written for speed (the writer's thread counts every stored message: P6): the usual entry
    is a message, tested first, and an assistant's usage is read inline, into local variables
    (an attribute of ``Counters`` read and written back per field cost each assistant message
    ~40 bytecodes more), made into ``Counters`` once."""
    messages = input_tokens = output_tokens = cache_read = cache_write = 0
    cost = 0.0
    first_prompt: str | None = None
    title: str | None = None
    for entry in entries:
        kind = entry.get("type")
        if kind == "message":
            value = entry.get("message")
            if not isinstance(value, dict):
                continue
            # Annotated, not ``cast`` (a call, and a ``dict[str, Any]`` made, for every message).
            message: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
            messages += 1
            role = message.get("role")
            if role == "assistant":
                value = message.get("usage")
                if not isinstance(value, dict):
                    continue
                usage: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
                # An exact ``int``/``float`` is taken without ``_int``'s two ``isinstance`` calls;
                # a value of another type (a bool, a string) counts as none.
                value = usage.get("input")
                input_tokens += value if type(value) is int else _int(value)
                value = usage.get("output")
                output_tokens += value if type(value) is int else _int(value)
                value = usage.get("cacheRead")
                cache_read += value if type(value) is int else _int(value)
                value = usage.get("cacheWrite")
                cache_write += value if type(value) is int else _int(value)
                value = usage.get("cost")
                if isinstance(value, dict):
                    spent: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
                    total = spent.get("total")
                    if type(total) is float or (
                        isinstance(total, int | float) and not isinstance(total, bool)
                    ):
                        cost += float(total)
            elif role == "user" and first_prompt is None:
                first_prompt = prompt_text(message.get("content"))
        elif kind == "session_info":
            value = entry.get("title")
            if isinstance(value, str):
                title = listing_text(value)
    return Counters(
        len(entries),
        messages,
        cost,
        input_tokens,
        output_tokens,
        cache_read,
        cache_write,
        first_prompt,
        title,
    )


FIRST_PROMPT_CHARS = 200


def prompt_text(content: object) -> str:
    """The text of a user message's content, cut for listing."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        blocks = [_obj(block) for block in cast(list[object], content)]
        text = " ".join(str(b.get("text", "")) for b in blocks if b is not None and b.get("type") == "text")
    else:
        text = ""
    return listing_text(text[:FIRST_PROMPT_CHARS])


def listing_text(text: str) -> str:
    """Text for the session row: NUL (which PostgreSQL's text cannot hold) and lone surrogates
    (which no UTF-8 can: ``replace_lone_surrogates``) shown as U+FFFD, on every backend alike."""
    return replace_lone_surrogates(text.replace("\0", "\ufffd"))


def _obj(value: object) -> dict[str, Any] | None:
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
