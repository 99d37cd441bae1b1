"""``create_agent_session()``: an ``AgentSession`` built from settings, the way the CLI builds it.

Every front end (interactive, print, JSON, RPC, ACP) and any program that wants the coding agent
as it ships goes through here: settings files, model choice (``--model`` wins, a resumed session
keeps its model, then settings, then the first provider with a key, then the embedded model),
the built-in tools in the workspace, the system prompt with the project's context files, the
approval gate and the session (new, latest of the directory, or by id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tether.agent import Agent, AgentTool
from tether.ai.types import SimpleStreamOptions
from tether.session.agent_session import AgentSession
from tether.session.model_choice import ResolvedModel, resolve_model
from tether.session.settings import Settings
from tether.session.system_prompt import build_system_prompt
from tether.tools import Workspace, create_coding_tools
from tether.tools.approval import Approval, ApprovalGate, AskUser

if TYPE_CHECKING:  # the store loads only when the run keeps a session
    from tether.mcp import McpServerConfig, McpServers
    from tether.session.manager import SessionManager
    from tether.session.prompt import PromptHook
    from tether.session.session import Session


class SetupError(ValueError):
    """The session cannot start as asked (unknown tool name, ...); the message says why."""


@dataclass(frozen=True, slots=True)
class SessionChoice:
    """Which stored session to attach to: a new one, the directory's latest, or a given id."""

    persist: bool = True
    """``False``: keep nothing on disk (``--no-session``)."""
    continue_latest: bool = False
    session_id: str | None = None
    read_only: bool = False
    """Open ``session_id`` read-only, without its writer lock: to watch a session another process
    runs (``AgentSession.follow``)."""


@dataclass(frozen=True, slots=True)
class SessionOptions:
    """A front end's choices for every session it starts (``--model``, ``--thinking``, ``--tools``,
    ``--system-prompt``, ``--yes``); ``None`` defers to the stored session and the settings."""

    model: str | None = None
    thinking: str | None = None
    tools: tuple[str, ...] | None = None
    system_prompt: str | None = None
    approval: Approval | None = None
    mcp: bool = True
    """``False``: no MCP servers from files (``--no-mcp``); servers given to ``create`` still start."""
    mcp_config: Path | None = None
    """``--mcp-config FILE``: servers on top of the user's and the (trusted) project's."""

    def create(
        self,
        *,
        cwd: Path,
        settings: Settings,
        ask: AskUser | None,
        session: SessionChoice,
        mcp_servers: Sequence[McpServerConfig] = (),
    ) -> AgentSession:
        """``create_agent_session`` with these choices; ``mcp_servers`` (an editor's) come on top
        of those of the MCP files."""
        servers = list(mcp_servers)
        if self.mcp:
            servers = [*load_mcp_files(cwd, self.mcp_config), *servers]
        return create_agent_session(
            cwd=cwd,
            settings=settings,
            model=self.model,
            thinking=self.thinking,
            tools=self.tools,
            system_prompt=self.system_prompt,
            approval=self.approval,
            ask=ask,
            session=session,
            mcp_servers=servers,
        )


def load_mcp_files(cwd: Path, config_file: Path | None = None) -> list[McpServerConfig]:
    """The servers of the user's ``mcp.json``, the project's ``.mcp.json`` when the project is
    trusted, and ``config_file``; a bad file raises ``SetupError``."""
    from tether.ai.paths import config_dir
    from tether.mcp.config import McpConfigError, load_mcp_servers
    from tether.session.trust import TrustFileError, is_trusted

    try:
        trusted = is_trusted(config_dir(), cwd)  # the same gate as widening project settings
        return load_mcp_servers(cwd, config_file=config_file, trusted=trusted)
    except (McpConfigError, TrustFileError) as exc:
        raise SetupError(str(exc)) from None


def create_agent_session(
    *,
    cwd: Path | None = None,
    settings: Settings | None = None,
    model: str | None = None,
    thinking: str | None = None,
    tools: Sequence[str] | None = None,
    extra_tools: Sequence[AgentTool] = (),
    system_prompt: str | None = None,
    approval: Approval | None = None,
    ask: AskUser | None = None,
    session: SessionChoice | None = None,
    sessions: SessionManager | None = None,
    hooks: Sequence[PromptHook] = (),
    mcp_servers: Sequence[McpServerConfig] = (),
) -> AgentSession:
    """Build the coding agent's ``AgentSession``; a user mistake raises a one-line error.

    Args:
        cwd: The workspace (default: the current directory).
        settings: Default ``Settings()``; the CLI passes ``load_settings(...)``.
        model: A model spec (``provider/id``, ``local:PATH``, ``scripted:PATH``); default: the
            resumed session's model, else ``settings.model``, else the first provider with a key.
        thinking: The thinking level (clamped to the model); default: the session's, the
            settings', then ``medium``.
        tools: Names of built-in tools (default: ``settings.tools``, else all of them).
        extra_tools: Your own tools, added after the built-in ones.
        system_prompt: Replaces the built-in prompt (project context files are still appended).
        approval: The approval policy (default: ``settings.approval``).
        ask: How to ask the user before a risky call; ``None``: nobody can answer.
        session: Which stored session to use (default: a new one).
        sessions: The session manager (default: the user's database; opened only if needed).
        hooks: Prompt hooks run before every model call.
        mcp_servers: MCP servers whose tools join the built-in ones (``mcp__<server>__<tool>``);
            ``load_mcp_files(cwd)`` gives the ones the CLI reads. Stopped by ``close()``.
    """
    cwd = cwd if cwd is not None else Path.cwd()
    settings = settings if settings is not None else Settings()
    names = tools if tools is not None else settings.tools
    workspace = Workspace(cwd, env_passthrough=settings.shell_env_passthrough)
    try:
        built = create_coding_tools(workspace, list(names) if names is not None else None)
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    built.extend(extra_tools)
    if settings.max_connections:
        from tether.ai.connections import set_connection_limit  # here: it imports httpx2, slow to load

        for provider, limit in settings.max_connections.items():
            set_connection_limit(limit or None, None if provider == "*" else provider)
    sessions, stored = _open_session(session or SessionChoice(), cwd, sessions)
    try:
        resolved = _choose_model(model, settings, stored)
        prompt = build_system_prompt(
            cwd,
            [(t.name, t.description) for t in built],
            replace=system_prompt or settings.system_prompt,
            append=settings.append_system_prompt,
        )
        agent = Agent(
            model=resolved.model,
            tools=built,
            stream_fn=resolved.stream_fn,
            options=SimpleStreamOptions(idle_timeout=settings.stream_idle_timeout_ms / 1000 or None),
        )
        gate = ApprovalGate(workspace, approval or settings.approval, ask)
        core = AgentSession(
            agent,
            stored,
            cwd=cwd,
            settings=settings,
            sessions=sessions,
            approval=gate,
            hooks=hooks,
            notice=resolved.notice,
            mcp=_mcp(mcp_servers),
        )
    except BaseException:
        if stored is not None:
            stored.close()
        if sessions is not None:
            sessions.close()
        raise
    # The session's stored settings are loaded on binding; this run's choices go on top.
    agent.model = resolved.model
    agent.system_prompt = prompt
    level = thinking or (stored.context.thinking_level if stored is not None else None)
    core.set_thinking(level or settings.thinking or "medium")
    return core


def _mcp(configs: Sequence[McpServerConfig]) -> McpServers | None:
    """The session's servers; ``None`` without any (the MCP package stays unloaded)."""
    if not any(c.enabled for c in configs):
        return None
    from tether.mcp import McpServers

    return McpServers(configs)


def _choose_model(spec: str | None, settings: Settings, session: Session | None) -> ResolvedModel:
    """``model`` wins; a resumed session keeps its model (as stored, so a resume works even when
    the catalog no longer lists it); else settings and defaults."""
    stored = session.context.model if session is not None else None
    if spec is None and stored is not None and stored.provider != "scripted":
        if stored.info is not None:
            return ResolvedModel(stored.info, None)
        return resolve_model(f"{stored.provider}/{stored.model_id}", None)
    return resolve_model(spec, settings.model)


def _open_session(
    choice: SessionChoice, cwd: Path, sessions: SessionManager | None
) -> tuple[SessionManager | None, Session | None]:
    if not choice.persist:
        return None, None
    if sessions is None:
        from tether.session.manager import SessionManager

        sessions = SessionManager()
    try:
        if choice.session_id is not None:
            return sessions, sessions.open(choice.session_id, readonly=choice.read_only)
        if choice.read_only:
            raise SetupError("a read-only session needs its id (--session ID)")
        if choice.continue_latest:
            latest = sessions.resume(cwd)
            if latest is not None:
                return sessions, latest
        return sessions, sessions.create(cwd)
    except BaseException:
        sessions.close()
        raise
