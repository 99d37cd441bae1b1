"""``SessionManager``: create, list, open, fork, delete, export and import sessions."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from tether.session.branching import settle_leaf
from tether.session.session import Session, now_ms
from tether.store.database import open_store
from tether.store.entries import ENTRY_FORMAT, EntryDict
from tether.store.ids import new_id
from tether.store.store import EntryNotFoundError, SessionRecord, SessionStore, WriterLease
from tether.store.tree import EntryTree, paused_gc
from tether.wire import ModelInfo
from tether.wire.file_names import path_text


class SessionManager:
    """Sessions in one store: by default ``$TETHER_DATABASE_URL``'s, else the SQLite file under
    the XDG data dir (see ``tether.store.database``).

    ``close()`` (or leaving ``with``) closes the store only if the manager opened it
    (``SessionManager()``, ``SessionManager.at(location)``): a store passed in stays the caller's
    to close, so several managers (a server's, each request's) can share one."""

    def __init__(self, store: SessionStore | None = None, *, _owns_store: bool = False) -> None:
        """``_owns_store`` (``at``'s): the store passed in was opened for this manager, which
        closes it."""
        self._owns_store = store is None or _owns_store
        self.store: SessionStore = store if store is not None else open_store()
        self.closed = False
        """``close()`` was called: a core whose store then fails to write names this as why."""

    @classmethod
    def at(cls, location: str | os.PathLike[str]) -> SessionManager:
        """Sessions at a PostgreSQL URL, a ``sqlite:`` URL or a SQLite file path."""
        return cls(open_store(location), _owns_store=True)

    def create(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        title: str | None = None,
        model: ModelInfo | None = None,
        thinking_level: str | None = None,
        system_prompt: str | None = None,
        deferred: bool = False,
        parent_session_id: str | None = None,
    ) -> Session:
        """A new, empty, writable session; initial settings become its first entries.

        ``deferred``: store nothing until the first message is appended (see ``Session``), so a
        run that fails before it, or a start left at once, leaves no empty session behind. Every
        front end creates its sessions so. ``parent_session_id``: the session this one was
        started from (a fork before the first message copies nothing, yet is still its child)."""
        session_id, where, created = new_id(), path_text(cwd if cwd is not None else Path.cwd()), now_ms()
        if deferred:
            record = SessionRecord(
                id=session_id,
                cwd=where,
                title=title,
                created=created,
                updated=created,
                leaf_id=None,
                version=ENTRY_FORMAT,
                parent_session_id=parent_session_id,
                parent_entry_id=None,
                first_prompt=None,
                entry_count=0,
                message_count=0,
                cost=0.0,
                input_tokens=0,
                output_tokens=0,
                cache_read_tokens=0,
                cache_write_tokens=0,
            )
            session = Session(self.store, record, EntryTree(), None, unstored=True)
        else:
            record = self.store.create_session(
                session_id,
                where,
                created,
                title=title,
                version=ENTRY_FORMAT,
                parent_session_id=parent_session_id,
            )
            lease = self.store.acquire_writer(record.id)
            # Nothing to read back: nobody else knows the new id, so the row is as created and
            # the tree empty (``open`` re-reads both once it holds the lease).
            session = Session(self.store, record, EntryTree(), lease)
        if model is not None:
            session.set_model(model)
        if thinking_level is not None:
            session.set_thinking_level(thinking_level)
        if system_prompt is not None:
            session.set_system_prompt(system_prompt)
        return session

    def list(
        self, cwd: str | os.PathLike[str] | None = None, limit: int | None = None, *, empty: bool = True
    ) -> list[SessionRecord]:
        """Sessions newest first (all, or those of ``cwd``) with title, first prompt, counts, cost.

        ``empty=False`` leaves out the sessions without a message (made by an older tether or
        a ``create`` without ``deferred``): nothing to resume there."""
        where = path_text(cwd) if cwd is not None else None
        records = self.store.list_sessions(where, limit)
        if empty:
            return records
        kept = [r for r in records if r.message_count]
        if limit is not None and len(kept) < len(records):  # empty ones took places: read on
            kept = [r for r in self.store.list_sessions(where) if r.message_count][:limit]
        return kept

    def workspaces(self, limit: int) -> list[str]:
        """The folders sessions ran in, most recently used first, at most ``limit``."""
        return self.store.workspaces(limit)

    def open(self, session_id: str, *, readonly: bool = False) -> Session:
        """Open a session at its persisted leaf; writable unless ``readonly``."""
        if readonly:
            return self._load(self.store.get_session(session_id), None)
        return self._writable(self.store.get_session(session_id))

    def resume(self, cwd: str | os.PathLike[str]) -> Session | None:
        """Open the most recently updated session of ``cwd`` that has a message, if any."""
        newest = self.list(cwd, limit=1, empty=False)
        return self.open(newest[0].id) if newest else None

    def fork(self, session_id: str, entry_id: str | None = None) -> Session:
        """A new session holding the path up to ``entry_id`` (default: the leaf), linked to its parent.

        Copied entries keep their ids, so the two sessions can be compared entry by entry.
        """
        source = self.store.get_session(session_id)
        tree = EntryTree.from_stored(self.store.entries(session_id))
        target = source.leaf_id if entry_id is None else entry_id
        if target is not None and target not in tree:
            raise EntryNotFoundError(session_id, target)
        leaf = settle_leaf(tree, target)
        path = [node.entry for node in tree.path(leaf)]
        record = self.store.create_session(
            new_id(),
            source.cwd,
            now_ms(),
            parent_session_id=source.id,
            parent_entry_id=leaf,
            title=source.title,
            version=ENTRY_FORMAT,
        )
        lease = self.store.acquire_writer(record.id)
        try:
            if path:
                record = self.store.append(lease, path, path[-1]["id"], record.created)
        except BaseException:
            lease.release()
            raise
        return self._load(record, lease)

    def delete(self, session_id: str) -> None:
        """Delete a session; refused (``SessionLockedError``) while someone writes to it."""
        lease = self.store.acquire_writer(session_id)
        try:
            self.store.delete_session(lease)
        finally:
            lease.release()

    def export(
        self, session_id: str, path: str | os.PathLike[str], *, on_skip: Callable[[str], None] | None = None
    ) -> Path:
        """Write the session (every branch) to a versioned JSONL file; see ``tether.store.jsonl``.
        ``on_skip`` hears of each entry left out for a damaged row (``sound_entries``)."""
        from tether.store.jsonl import write_export  # export and import only

        record, kept = self.sound_entries(session_id, on_skip)
        out = Path(path)
        write_export(out, record, [payload for _, payload in kept])
        return out

    def sound_entries(
        self, session_id: str, on_skip: Callable[[str], None] | None = None
    ) -> tuple[SessionRecord, list[tuple[EntryDict, bytes]]]:
        """The session's record and entries (each as a dict and as its payload) for an export,
        in either format, without the entries whose row is damaged (``jsonl.sound_entries``)."""
        from tether.store.jsonl import sound_entries  # export and import only

        store = self.store
        return sound_entries(
            store.get_session(session_id), store.entries(session_id), on_skip or (lambda _: None)
        )

    def import_file(self, path: str | os.PathLike[str]) -> SessionRecord:
        """Recreate an exported session with its ids, times and leaf; errors name the line."""
        from tether.store.jsonl import read_export

        data = read_export(Path(path))
        header = data.header
        record = self.store.create_session(
            header["id"],
            header["cwd"],
            header["created"],
            parent_session_id=_opt_str(header.get("parentSessionId")),
            parent_entry_id=_opt_str(header.get("parentEntryId")),
            title=_opt_str(header.get("title")),
            version=ENTRY_FORMAT,
        )
        lease = self.store.acquire_writer(record.id)
        try:
            entries: list[EntryDict] = data.entries
            if entries:
                self.store.append(lease, entries, entries[-1]["id"], header["updated"])
            record = self.store.set_leaf(lease, _opt_str(header.get("leafId")), header["updated"])
        except BaseException:
            self.store.delete_session(lease)
            raise
        finally:
            lease.release()
        return record

    def close(self) -> None:
        """Close the store if this manager opened it; a store passed in is left open."""
        self.closed = True
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _writable(self, record: SessionRecord) -> Session:
        lease = self.store.acquire_writer(record.id)
        try:
            # Re-read the row: the leaf as of holding the lease.
            return self._load(self.store.get_session(record.id), lease)
        except BaseException:
            lease.release()
            raise

    def _load(self, record: SessionRecord, lease: WriterLease | None) -> Session:
        with paused_gc():
            tree = EntryTree.from_stored(self.store.entries(record.id))
            return Session(self.store, record, tree, lease)


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) else None
