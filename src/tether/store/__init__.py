"""Where sessions are kept: the store protocol and its two databases (SQLite, PostgreSQL), the
append writer, the entry records, ids, the in-memory entry tree, JSONL import/export, copying
between stores and following a session as it grows.

The floor under ``tether.session``: it knows entries and rows, not agents or models, and imports
nothing of tether but ``wire``. ``open_store()`` picks the database from ``$TETHER_DATABASE_URL``
(else the SQLite file in the XDG data dir); ``tether.session.SessionManager`` opens sessions on it.
"""

# Names load on first use (module __getattr__), as in ``tether.session``: `tether -p` with
# --no-session loads none of the store.
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.store.database import open_store as open_store
    from tether.store.entries import (
        ENTRY_FORMAT as ENTRY_FORMAT,
        BranchSummaryEntry as BranchSummaryEntry,
        CompactionEntry as CompactionEntry,
        CustomEntry as CustomEntry,
        Entry as Entry,
        EntryDict as EntryDict,
        EntryType as EntryType,
        LabelEntry as LabelEntry,
        MessageEntry as MessageEntry,
        ModelChangeEntry as ModelChangeEntry,
        ServiceTierChangeEntry as ServiceTierChangeEntry,
        SessionInfoEntry as SessionInfoEntry,
        SystemPromptChangeEntry as SystemPromptChangeEntry,
        ThinkingLevelChangeEntry as ThinkingLevelChangeEntry,
    )
    from tether.store.ids import IdGenerator as IdGenerator, new_id as new_id
    from tether.store.jsonl import ImportFormatError as ImportFormatError
    from tether.store.paths import DATABASE_ENV as DATABASE_ENV, default_db_path as default_db_path
    from tether.store.postgres_store import PostgresStore as PostgresStore
    from tether.store.sqlite_store import SQLiteStore as SQLiteStore
    from tether.store.store import (
        EntryNotFoundError as EntryNotFoundError,
        SchemaVersionError as SchemaVersionError,
        SessionError as SessionError,
        SessionExistsError as SessionExistsError,
        SessionLockedError as SessionLockedError,
        SessionNotFoundError as SessionNotFoundError,
        SessionRecord as SessionRecord,
        SessionStore as SessionStore,
        SessionWatch as SessionWatch,
        StoredEntry as StoredEntry,
        WriterLease as WriterLease,
    )
    from tether.store.tree import CorruptSessionError as CorruptSessionError


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
