"""Durable sessions: an append-only entry tree in a database, resume, branch, fork, prompt hooks,
lowering to the model and compaction.

Stored history is written only by the runtime (ids and timestamps are assigned by ``Session``,
never by callers); prompt hooks edit a transient copy of each request (``PromptEditor``) and
persist only through ``Session.append_synthetic``.

    manager = SessionManager()                     # $XDG_DATA_HOME/tether/sessions.db
    session = manager.resume(cwd) or manager.create(cwd, model=model)
    bound = AgentSession(Agent(model=model, tools=tools), session, hooks=[my_hook])
    await bound.prompt("fix the failing test")     # recorded as it runs; compacts when needed
    bound.close()                                  # releases the session's writer lock
"""

from tether.session.agent_session import AgentSession
from tether.session.branching import BranchError, pending_tool_calls
from tether.session.compaction import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    CompactionError,
    CompactionResult,
    CompactionSettings,
    compact,
    context_tokens,
    estimate_tokens,
    is_context_overflow,
    should_compact,
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
from tether.session.paths import default_db_path
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
    StoredEntry,
    WriterLease,
)
from tether.session.tree import CorruptSessionError

__all__ = [
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
    "pending_tool_calls",
    "replay_events",
    "run_prompt_hooks",
    "should_compact",
    "summarize",
    "summarize_branch",
    "supports_developer_role",
    "to_provider_messages",
]
