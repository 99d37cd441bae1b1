"""Durable sessions: an append-only entry tree in a database, resume, branch, fork, prompt hooks,
lowering to the model and compaction.

Stored history is written only by the runtime (ids and timestamps are assigned by ``Session``,
never by callers); prompt hooks edit a transient copy of each request (``PromptEditor``) and
persist only through ``Session.append_synthetic``.

    manager = SessionManager()                     # $TETHER_DATABASE_URL, else $XDG_DATA_HOME/tether/sessions.db
    session = manager.resume(cwd) or manager.create(cwd, model=model)
    bound = AgentSession(Agent(model=model, tools=tools), session, hooks=[my_hook])
    await bound.prompt("fix the failing test")     # recorded as it runs; compacts when needed
    bound.close()                                  # releases the session's writer lock
"""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. The TYPE_CHECKING imports give type checkers the names.
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.session.agent_session import AgentSession
    from tether.session.branching import BranchError, pending_tool_calls
    from tether.session.budget import (
        DEFAULT_KEEP_RECENT_TOKENS,
        DEFAULT_RESERVE_TOKENS,
        CompactionSettings,
        context_tokens,
        estimate_tokens,
        is_context_overflow,
        should_compact,
    )
    from tether.session.compaction import (
        CompactionError,
        CompactionResult,
        compact,
        summarize,
        summarize_branch,
    )
    from tether.session.context import ModelRef, SessionContext, build_context
    from tether.session.convert import (
        LlmMessage,
        convert_to_llm,
        lower_for,
        lower_message,
        supports_developer_role,
        to_provider_messages,
    )
    from tether.session.database import open_store
    from tether.session.entries import (
        ENTRY_FORMAT,
        BranchSummaryEntry,
        CompactionEntry,
        CustomEntry,
        Entry,
        EntryDict,
        EntryType,
        LabelEntry,
        MessageEntry,
        ModelChangeEntry,
        ServiceTierChangeEntry,
        SessionInfoEntry,
        SystemPromptChangeEntry,
        ThinkingLevelChangeEntry,
    )
    from tether.session.ids import IdGenerator, new_id
    from tether.session.jsonl import ImportFormatError
    from tether.session.manager import SessionManager
    from tether.session.paths import DATABASE_ENV, default_db_path
    from tether.session.postgres_store import PostgresStore
    from tether.session.prompt import (
        PromptEditError,
        PromptEditor,
        PromptHook,
        PromptInput,
        PromptPart,
        run_prompt_hooks,
    )
    from tether.session.replay import replay_events
    from tether.session.runtime import SessionRuntime
    from tether.session.session import ReadOnlySessionError, Session
    from tether.session.sqlite_store import SQLiteStore
    from tether.session.store import (
        EntryNotFoundError,
        SchemaVersionError,
        SessionError,
        SessionExistsError,
        SessionLockedError,
        SessionNotFoundError,
        SessionRecord,
        SessionStore,
        SessionWatch,
        StoredEntry,
        WriterLease,
    )
    from tether.session.tree import CorruptSessionError

_LAZY = {
    "AgentSession": "tether.session.agent_session",
    "BranchError": "tether.session.branching",
    "pending_tool_calls": "tether.session.branching",
    "DEFAULT_KEEP_RECENT_TOKENS": "tether.session.budget",
    "DEFAULT_RESERVE_TOKENS": "tether.session.budget",
    "CompactionError": "tether.session.compaction",
    "CompactionResult": "tether.session.compaction",
    "CompactionSettings": "tether.session.budget",
    "compact": "tether.session.compaction",
    "context_tokens": "tether.session.budget",
    "estimate_tokens": "tether.session.budget",
    "is_context_overflow": "tether.session.budget",
    "should_compact": "tether.session.budget",
    "summarize": "tether.session.compaction",
    "summarize_branch": "tether.session.compaction",
    "ModelRef": "tether.session.context",
    "SessionContext": "tether.session.context",
    "build_context": "tether.session.context",
    "DATABASE_ENV": "tether.session.paths",
    "open_store": "tether.session.database",
    "LlmMessage": "tether.session.convert",
    "convert_to_llm": "tether.session.convert",
    "lower_for": "tether.session.convert",
    "lower_message": "tether.session.convert",
    "supports_developer_role": "tether.session.convert",
    "to_provider_messages": "tether.session.convert",
    "ENTRY_FORMAT": "tether.session.entries",
    "BranchSummaryEntry": "tether.session.entries",
    "CompactionEntry": "tether.session.entries",
    "CustomEntry": "tether.session.entries",
    "Entry": "tether.session.entries",
    "EntryDict": "tether.session.entries",
    "EntryType": "tether.session.entries",
    "LabelEntry": "tether.session.entries",
    "MessageEntry": "tether.session.entries",
    "ModelChangeEntry": "tether.session.entries",
    "ServiceTierChangeEntry": "tether.session.entries",
    "SessionInfoEntry": "tether.session.entries",
    "SystemPromptChangeEntry": "tether.session.entries",
    "ThinkingLevelChangeEntry": "tether.session.entries",
    "IdGenerator": "tether.session.ids",
    "new_id": "tether.session.ids",
    "ImportFormatError": "tether.session.jsonl",
    "SessionManager": "tether.session.manager",
    "default_db_path": "tether.session.paths",
    "PostgresStore": "tether.session.postgres_store",
    "PromptEditError": "tether.session.prompt",
    "PromptEditor": "tether.session.prompt",
    "PromptHook": "tether.session.prompt",
    "PromptInput": "tether.session.prompt",
    "PromptPart": "tether.session.prompt",
    "run_prompt_hooks": "tether.session.prompt",
    "replay_events": "tether.session.replay",
    "SessionRuntime": "tether.session.runtime",
    "ReadOnlySessionError": "tether.session.session",
    "Session": "tether.session.session",
    "SQLiteStore": "tether.session.sqlite_store",
    "EntryNotFoundError": "tether.session.store",
    "SchemaVersionError": "tether.session.store",
    "SessionError": "tether.session.store",
    "SessionExistsError": "tether.session.store",
    "SessionLockedError": "tether.session.store",
    "SessionNotFoundError": "tether.session.store",
    "SessionRecord": "tether.session.store",
    "SessionStore": "tether.session.store",
    "SessionWatch": "tether.session.store",
    "StoredEntry": "tether.session.store",
    "WriterLease": "tether.session.store",
    "CorruptSessionError": "tether.session.tree",
}
"""Where each lazily loaded public name lives."""


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "DATABASE_ENV",
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_RESERVE_TOKENS",
    "ENTRY_FORMAT",
    "AgentSession",
    "BranchError",
    "BranchSummaryEntry",
    "CompactionEntry",
    "CompactionError",
    "CompactionResult",
    "CompactionSettings",
    "CorruptSessionError",
    "CustomEntry",
    "Entry",
    "EntryDict",
    "EntryNotFoundError",
    "EntryType",
    "IdGenerator",
    "ImportFormatError",
    "LabelEntry",
    "LlmMessage",
    "MessageEntry",
    "ModelChangeEntry",
    "ModelRef",
    "PostgresStore",
    "PromptEditError",
    "PromptEditor",
    "PromptHook",
    "PromptInput",
    "PromptPart",
    "ReadOnlySessionError",
    "SQLiteStore",
    "SchemaVersionError",
    "ServiceTierChangeEntry",
    "Session",
    "SessionContext",
    "SessionError",
    "SessionExistsError",
    "SessionInfoEntry",
    "SessionLockedError",
    "SessionManager",
    "SessionNotFoundError",
    "SessionRecord",
    "SessionRuntime",
    "SessionStore",
    "SessionWatch",
    "StoredEntry",
    "SystemPromptChangeEntry",
    "ThinkingLevelChangeEntry",
    "WriterLease",
    "build_context",
    "compact",
    "context_tokens",
    "convert_to_llm",
    "default_db_path",
    "estimate_tokens",
    "is_context_overflow",
    "lower_for",
    "lower_message",
    "new_id",
    "open_store",
    "pending_tool_calls",
    "replay_events",
    "run_prompt_hooks",
    "should_compact",
    "summarize",
    "summarize_branch",
    "supports_developer_role",
    "to_provider_messages",
]
