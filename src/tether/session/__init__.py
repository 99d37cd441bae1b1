"""Durable sessions: an append-only entry tree in a database, resume, branch, fork, prompt hooks,
lowering to the model and compaction.

Stored history is written only by the runtime (ids and timestamps are assigned by ``Session``,
never by callers); prompt hooks edit a transient copy of each request (``PromptEditor``) and
persist only through ``Session.append_synthetic``.

    manager = SessionManager()                     # $TETHER_DATABASE_URL, else $XDG_DATA_HOME/tether/sessions.db
    session = manager.resume(cwd) or manager.create(cwd, model=model)
    core = AgentSession(Agent(model=model, tools=tools), session, sessions=manager, hooks=[my_hook])
    await core.prompt("fix the failing test")      # recorded as it runs; compacts when needed
    await core.close()                             # releases the session's writer lock

``create_agent_session()`` builds the coding agent's ``AgentSession`` from settings, as the CLI does.
"""

# Names load on first use (module __getattr__): importing the package costs nothing until then,
# which keeps `tether -p` start-up fast. Each `A as A` import names one export (tether/_lazy.py).
from __future__ import annotations

from typing import TYPE_CHECKING

from tether._lazy import lazy_exports

if TYPE_CHECKING:
    from tether.session.agent_session import AgentSession as AgentSession
    from tether.session.branching import BranchError as BranchError, pending_tool_calls as pending_tool_calls
    from tether.session.budget import (
        DEFAULT_KEEP_RECENT_TOKENS as DEFAULT_KEEP_RECENT_TOKENS,
        DEFAULT_RESERVE_TOKENS as DEFAULT_RESERVE_TOKENS,
        CompactionSettings as CompactionSettings,
        context_tokens as context_tokens,
        estimate_tokens as estimate_tokens,
        is_context_overflow as is_context_overflow,
        should_compact as should_compact,
    )
    from tether.session.compaction import (
        CompactionError as CompactionError,
        CompactionResult as CompactionResult,
        compact as compact,
        summarize as summarize,
        summarize_branch as summarize_branch,
    )
    from tether.session.context import (
        ModelRef as ModelRef,
        SessionContext as SessionContext,
        build_context as build_context,
    )
    from tether.session.convert import (
        LlmMessage as LlmMessage,
        convert_to_llm as convert_to_llm,
        lower_for as lower_for,
        lower_message as lower_message,
        supports_developer_role as supports_developer_role,
        to_provider_messages as to_provider_messages,
    )
    from tether.session.events import (
        AutoRetryEndEvent as AutoRetryEndEvent,
        AutoRetryStartEvent as AutoRetryStartEvent,
        CompactionEndEvent as CompactionEndEvent,
        CompactionStartEvent as CompactionStartEvent,
        NoticeEvent as NoticeEvent,
        QueueUpdateEvent as QueueUpdateEvent,
        Run as Run,
        SessionEvent as SessionEvent,
    )
    from tether.session.extensions.api import (
        BeforeRunContext as BeforeRunContext,
        BeforeRunResult as BeforeRunResult,
        CommandContext as CommandContext,
        ExtensionAPI as ExtensionAPI,
        ExtensionUI as ExtensionUI,
        SessionBeforeResult as SessionBeforeResult,
    )
    from tether.session.factory import (
        SessionChoice as SessionChoice,
        SetupError as SetupError,
        create_agent_session as create_agent_session,
        start_session as start_session,
    )
    from tether.session.manager import SessionManager as SessionManager
    from tether.session.options import AgentOptions as AgentOptions, SessionOptions as SessionOptions
    from tether.session.prompt import (
        PromptEditError as PromptEditError,
        PromptEditor as PromptEditor,
        PromptHook as PromptHook,
        PromptInput as PromptInput,
        PromptPart as PromptPart,
        run_prompt_hooks as run_prompt_hooks,
    )
    from tether.session.replay import replay_events as replay_events
    from tether.session.resources import (
        CommandInfo as CommandInfo,
        Resources as Resources,
        load_resources as load_resources,
    )
    from tether.session.session import (
        ReadOnlySessionError as ReadOnlySessionError,
        Session as Session,
        SessionBoundError as SessionBoundError,
    )
    from tether.session.settings import (
        Settings as Settings,
        SettingsError as SettingsError,
        load_settings as load_settings,
    )


__getattr__, __dir__ = lazy_exports(__name__, __file__, globals())
