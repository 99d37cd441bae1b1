"""``create_agent_session()``: an ``AgentSession`` built from settings, the way the CLI builds it.

A program calls ``create_agent_session(AgentOptions(...), cwd=..., session=...)``: the choices in
one record (``tether.session.options``), this session's place and collaborators as keywords.
Every front end (interactive, print, JSON, RPC, ACP, serve, the durable worker) calls
``start_session(SessionOptions(...), ...)``, which reads what the files add (MCP servers,
extensions, skills) and then calls the same function. Both resolve: settings files, model choice
(``--model`` wins, a resumed session keeps its model, then settings, then the first provider with
a key, then the embedded model), the built-in tools in the workspace, the system prompt with the
project's context files, the approval gate and the session (new, latest of the directory, or by id).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from tether.agent import Agent, AgentTool, QueueMode
from tether.agent.tool import one_per_name
from tether.agent.tool_check import name_problem, parameters_problem
from tether.ai.auth_file import auth_file_problems
from tether.ai.paths import config_dir, data_dir, models_file
from tether.ai.types import SimpleStreamOptions
from tether.errors import ModelError, UserError
from tether.session.agent_session import AgentSession, workspace_path
from tether.session.model_choice import ResolvedModel, ScopedModel, Usable, resolve_model, resolve_scope
from tether.session.options import AgentOptions, SessionOptions, with_choices
from tether.session.settings import Settings
from tether.session.system_prompt import build_system_prompt
from tether.tools import Workspace, create_coding_tools
from tether.tools.approval import ApprovalGate, AskUser
from tether.tools.sandbox import (
    OTHER_WORKSPACES_MAX,
    SandboxMode,
    SandboxPolicy,
    missing,
    other_workspaces,
    secret_paths,
)
from tether.tools.sandbox_protect import STARTUP_PATHS

if TYPE_CHECKING:  # the store loads only when the run keeps a session
    from tether.mcp import McpServerConfig, McpServers
    from tether.session.manager import SessionManager
    from tether.session.prompt import PromptHook
    from tether.session.resources import Resources
    from tether.session.session import Session


class SetupError(UserError, ValueError):
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


def start_session(
    options: SessionOptions,
    *,
    cwd: Path,
    settings: Settings,
    ask: AskUser | None,
    session: SessionChoice,
    sessions: SessionManager | None = None,
    mcp_servers: Sequence[McpServerConfig] = (),
    mcp_notes: Sequence[str] = (),
    require_model: bool = True,
) -> AgentSession:
    """The one resolver of a front end's choices: every front end (print, JSON, interactive,
    RPC, ACP, serve, the durable worker) starts its sessions here, so a flag means the same
    everywhere. It applies the sandbox flags to ``settings``, reads the MCP files and the
    resources, picks the tools (the CLI's agent codes: every built-in tool unless ``--tools`` or
    the settings say otherwise), then calls ``create_agent_session`` with what it resolved.
    ``mcp_servers`` (an editor's) come on top of those of the MCP files, ``mcp_notes`` (its
    entries skipped) join their notes; ``sessions``: the
    session manager to use (default: the user's database); ``require_model``: ``False`` (RPC
    mode) starts without a model when none can be used, as pi's RPC mode does (see
    ``create_agent_session``)."""
    from tether.ai.paths import config_dir
    from tether.session.resources import load_resources
    from tether.tools import CODING_TOOLS

    if options.sandbox is not None or options.sandbox_network is not None or options.sandbox_allow_hosts:
        policy = settings.sandbox
        mode = cast(SandboxMode, options.sandbox) if options.sandbox is not None else policy.mode
        network = options.sandbox_network if options.sandbox_network is not None else policy.network
        hosts = (*policy.allow_hosts, *options.sandbox_allow_hosts)
        settings = replace(settings, sandbox=replace(policy, mode=mode, network=network, allow_hosts=hosts))
    servers = list(mcp_servers)
    notes = list(mcp_notes)
    if options.mcp:
        servers = [*load_mcp_files(cwd, options.mcp_config, problems=notes), *servers]
    resources = load_resources(
        cwd,
        config_dir(),
        settings,
        extensions=options.extensions,
        extension_paths=options.extension_paths,
        hidden=_secrets(settings),
    )
    if options.extension_flags:
        host = resources.extensions
        if host is None:
            # with extensions on, none was found: blaming --no-extensions sent the user looking for it
            why = "no extension is loaded" if options.extensions else "extensions are off (--no-extensions)"
            resources.warnings.append(f"--flag: {why}; flags ignored")
        else:
            resources.warnings.extend(host.set_flags(options.extension_flags))
    tools = _first_set(options.tools, settings.tools, CODING_TOOLS)  # the CLI's agent codes
    return create_agent_session(
        replace(options, tools=tools),
        cwd=cwd,
        settings=settings,
        ask=ask,
        session=session,
        sessions=sessions,
        mcp_servers=servers,
        resources=resources,
        mcp_notes=notes,
        require_model=require_model,
    )


def _sandbox(settings: Settings, others: tuple[Path, ...]) -> SandboxPolicy:
    """The settings' sandbox, hiding the credentials of the home folder and tether's own files:
    the data folder (the session and run databases with their companion files, history, the
    keys of ``/login``), the databases wherever else they are, and the config files that hold
    keys or say how commands are confined (``_config_files``); and ``others``, the other
    sessions' workspaces. The config folder and the home folder's start-up files (``STARTUP_PATHS``:
    shells', git's, the session's) are kept read-only too where the workspace holds them (tether
    run in the home folder): what they say runs unconfined at the next start, shell or login;
    there tether's config and data folders are made when missing, where a placeholder left by a
    killed tether would keep tether itself from making them."""
    policy = settings.sandbox
    return replace(
        policy,
        hide=(*_secrets(settings), *policy.hide),
        protect=(*(Path.home() / name for name in STARTUP_PATHS), *policy.protect),
        own=(config_dir(), data_dir(), *policy.own),
        other_workspaces=others,
    )


def _secrets(settings: Settings) -> tuple[Path, ...]:
    """The home folder's credentials and tether's own files (``_sandbox``): hidden from
    commands, and never read as a context file, wherever a link in the project points."""
    return secret_paths(Path.home(), [data_dir(), *_config_files(), *_database_files(settings)])


def _other_workspaces(
    sessions: SessionManager | None, cwd: Path, settings: Settings, read_roots: Sequence[Path]
) -> tuple[Path, ...]:
    """The workspaces of the store's other sessions, hidden from this one's commands and file
    tools: one query when the session opens (none with the sandbox off, or without a store:
    ``--no-session`` opens none). On a durable worker these are the sibling runs' workspaces."""
    if sessions is None or not settings.sandbox.active:
        return ()
    cwds = sessions.workspaces(OTHER_WORKSPACES_MAX * 2)  # room for the ones left visible
    return other_workspaces(cwds, (cwd, *read_roots), Path.home())


def _config_files() -> list[Path]:
    """The user's config files a command must neither read nor rewrite: ``models.json``
    (provider keys), ``mcp.json`` (servers' tokens), ``settings.json`` (the serve token, the
    sandbox and approval settings) and the trusted folders. Hidden by a read-only empty file,
    they stay unwritable when the workspace holds the config folder (tether run in the home
    folder). The rest of the folder (skills, prompts, themes) stays readable: the model is told
    to read skills there."""
    from tether.mcp.files import USER_FILE
    from tether.session.trust import TRUST_FILE

    folder = config_dir()
    return [models_file(), folder / USER_FILE, folder / "settings.json", folder / TRUST_FILE]


def _database_files(settings: Settings) -> list[Path]:
    """The SQLite files sessions and runs are kept in when they are not in the data folder: the
    ``database`` setting, ``$TETHER_DATABASE_URL`` or ``$TETHER_SESSIONS_DB`` (a worker's store,
    ``sqlite:///…`` or a path), ``durable.database`` (DBOS's ``sqlite:///relative`` or
    ``sqlite:////absolute``); a PostgreSQL server is out of reach anyway (no network). Resolved,
    so that a symlink's target is hidden too."""
    import os

    from tether.store.paths import DB_ENV, database_url

    stores = [settings.database, database_url(), os.environ.get(DB_ENV)]
    runs = settings.durable.database
    if not any(stores) and not runs:
        return []
    from tether.store.database import is_postgres_url, sqlite_path
    from tether.store.store import SessionError

    files: list[str] = []
    for location in filter(None, stores):
        if is_postgres_url(location):
            continue
        try:
            files.append(str(sqlite_path(location).expanduser()))
        except SessionError:
            continue  # the store itself reports a bad location
    if runs is not None and runs.startswith("sqlite:///"):
        files.append(runs.removeprefix("sqlite:///"))
    return [
        Path(os.path.realpath(file + suffix)) for file in files for suffix in ("", "-wal", "-shm", ".locks")
    ]


def _sandbox_warning(workspace: Workspace, tools: Sequence[AgentTool]) -> str | None:
    """One line when commands should be confined and cannot be: they are approved one by one."""
    if workspace.sandbox is None or not workspace.sandbox.active or not any(t.name == "bash" for t in tools):
        return None
    reason = missing()
    if reason is None:
        return None
    return f"sandbox unavailable: {reason}; bash asks before every command (--sandbox off: no confinement)"


def load_mcp_files(
    cwd: Path, config_file: Path | None = None, *, problems: list[str] | None = None
) -> list[McpServerConfig]:
    """The servers of the user's ``mcp.json``, the project's nearest ``.mcp.json`` as far as the
    project is trusted with them, and ``config_file``. Without ``problems`` a bad file or entry
    raises ``SetupError``; with it, each adds a line there and is skipped, and so does each
    project server not granted as it is now (a line saying how to trust it: never a silent
    "no servers")."""
    from tether.mcp.errors import McpConfigError
    from tether.mcp.files import load_mcp_servers, project_mcp_file
    from tether.session.trust import TrustFileError

    try:
        project = project_mcp_file(cwd)
        trusted, read = _granted_servers(project, problems) if project is not None else (False, None)
        return load_mcp_servers(
            cwd, config_file=config_file, trusted=trusted, problems=problems, project=read
        )
    except (McpConfigError, TrustFileError) as exc:
        raise SetupError(str(exc)) from None


def _granted_servers(
    project: Path, problems: list[str] | None
) -> tuple[bool | frozenset[str], tuple[Path, bytes] | None]:
    """Which servers of the project file ``project`` may start: all (the folder was trusted
    with whatever it brings), or those whose definition is one the user granted (the "mcp"
    grant, on the folder that holds the file; ``tether.session.trust_items``); and the file as
    read for it, which is what the servers are loaded from (read once: a file rewritten between
    two reads started servers that were never matched against the grant)."""
    from tether.mcp.config import mcp_file_bytes
    from tether.mcp.errors import McpConfigError
    from tether.session.trust import granted, trust_file
    from tether.session.trust_items import server_items

    given = granted(config_dir(), project.parent)
    read = None
    if "mcp" in given.kinds or given.of("mcp"):
        try:
            read = (project, mcp_file_bytes(project, "project"))
        except McpConfigError as exc:
            if problems is None:
                raise
            problems.append(f"{exc} (its servers are skipped)")
            return False, None
    if "mcp" in given.kinds:
        return True, read
    broken: list[str] = []  # bad entries, or a file that is not JSON
    servers = server_items(*read, broken) if read is not None else server_items(project, None, broken)
    allowed = frozenset(name for name, line in servers.items() if given.allows("mcp", line))
    left = [name for name in servers if name not in allowed]
    if broken and (read is not None or not servers):
        # the loader reads only the servers allowed; with no grant and no server to ask about,
        # what is wrong with the file is the note ("run tether to be asked" would ask nothing)
        if problems is None:
            raise McpConfigError(
                broken[0].removesuffix(" (its servers are skipped)").removesuffix(" (skipped)")
            )
        problems += broken
    if left and problems is not None:
        what = "its MCP servers are" if not allowed else f"MCP servers {', '.join(map(repr, left))} are"
        since = ", new or changed since you trusted the others," if allowed else ""
        problems.append(
            f"{project}: not trusted, {what} not started{since} (run tether in {project.parent} "
            f"to be asked, or add that folder to {trust_file(config_dir())})"
        )
    return allowed, read


def create_agent_session(
    options: AgentOptions | None = None,
    /,
    *,
    cwd: str | os.PathLike[str] | None = None,
    settings: Settings | None = None,
    extra_tools: Sequence[AgentTool] = (),
    ask: AskUser | None = None,
    session: SessionChoice | None = None,
    sessions: SessionManager | None = None,
    hooks: Sequence[PromptHook] = (),
    mcp_servers: Sequence[McpServerConfig] = (),
    resources: Resources | None = None,
    mcp_notes: Sequence[str] = (),
    require_model: bool = False,
    **choices: Any,
) -> AgentSession:
    """Build the coding agent's ``AgentSession``; a user mistake raises a one-line error.

    ``options`` are the agent's choices (model, tools, prompt, approval policy: each documented
    on ``AgentOptions``); the keywords are this session's place and collaborators.

    Args:
        options: Default ``AgentOptions()``: everything as the settings and the resumed session say.
        cwd: The workspace (default: the current directory).
        settings: Default ``Settings()``; the CLI passes ``load_settings(...)``.
        extra_tools: Your own tools, added after ``options.tools``.
        ask: The approval callback, ``async (tool_call, question) -> bool``, asked before a risky
            call (a write outside ``cwd``, ``bash`` unsandboxed, an MCP tool not marked read-only) under the
            ``ask`` policy; ``None``: nobody can answer, so such calls are refused.
        session: Which stored session to use (default: a new one).
        sessions: The session manager (default: the user's database; opened only if needed).
            One you pass stays yours: the session never closes it.
        hooks: Prompt hooks run before every model call.
        mcp_servers: MCP servers whose tools join the built-in ones (``mcp__<server>__<tool>``);
            ``load_mcp_files(cwd)`` gives the ones the CLI reads. Stopped by ``close()``.
        resources: Skills, prompt templates and extensions (``load_resources(...)`` gives the
            ones the CLI reads): skills join the system prompt, extension tools the tools,
            extension prompt hooks the ``hooks``; their warnings join ``AgentSession.notice``.
        mcp_notes: What ``load_mcp_files(..., problems=...)`` skipped and why: they join
            ``AgentSession.notice`` and ``/mcp``'s list.
        require_model: ``True``: raise ``ModelError`` when there is no model to use (none
            configured: no key, no server, no embedded model; or the settings' or the resumed
            session's model cannot be had). ``False`` (the default, as pi's ``createAgentSession``
            and pydantic-ai's ``Agent``): the session starts without one, ``notice`` says why and
            how to give tether one, and a prompt raises ``ModelError`` until ``set_model``
            chooses one; everything else works. A ``model`` or ``provider`` given in ``options``
            that cannot be had raises either way.
        choices: ``AgentOptions``' fields as keywords (``model=..., tools=[...]``), as earlier
            releases took them: still accepted, with a ``DeprecationWarning``, so a program
            written against them keeps working while it moves to ``AgentOptions``.
    """
    if choices:
        import warnings

        options = with_choices(options, choices)
        warnings.warn(
            f"create_agent_session({', '.join(f'{name}=...' for name in choices)}) is deprecated: "
            "pass them as tether.AgentOptions(...), the first argument",
            DeprecationWarning,
            stacklevel=2,
        )
    options = options if options is not None else AgentOptions()
    cwd = workspace_path(cwd)
    settings = settings if settings is not None else Settings()
    from tether.tools import READ_ONLY_TOOLS

    if isinstance(options.tools, str):  # else read as its letters: "Unknown tool(s): r, e, a, d"
        raise SetupError(
            f"tools takes a list of names or tools: tools=[{options.tools!r}], not tools={options.tools!r}"
        )
    chosen = _first_set(options.tools, settings.tools, READ_ONLY_TOOLS)
    names = [t for t in chosen if isinstance(t, str)]
    if (
        options.api_key is not None
        and options.model is None
        and options.provider is None
        and not options.models
    ):
        raise SetupError("--api-key needs the model it is for: add --model, --provider or --models")
    opened_sessions = sessions is None  # a manager given stays the caller's to close
    scope_notes: list[str] = []
    sessions, stored = _open_session(session or SessionChoice(), cwd, sessions)
    try:
        outside = settings.allow_outside if options.allow_outside is None else options.allow_outside
        skill_folders = resources.skill_folders() if resources is not None else ()
        workspace = Workspace(
            cwd,
            read_roots=skill_folders,
            allow_outside=outside,
            env_passthrough=settings.shell_env_passthrough,
            sandbox=_sandbox(settings, _other_workspaces(sessions, cwd, settings, skill_folders)),
        )
        try:
            named = iter(create_coding_tools(workspace, names))
        except ValueError as exc:
            raise SetupError(str(exc)) from None
        built = [next(named) if isinstance(t, str) else t for t in chosen]  # in the order given
        built.extend(extra_tools)
        host = resources.extensions if resources is not None else None
        registered = host.mcp_servers() if host is not None else []  # the files' servers win by name
        if host is not None:
            built.extend(host.tools())
            hooks = [*hooks, *host.prompt_hooks()]
            configured = {c.name for c in mcp_servers if c.enabled}
            mcp_notes = [
                *mcp_notes,
                *(
                    f"MCP server {c.name!r} of an extension: the MCP files' server of that name is kept"
                    for c in registered
                    if c.name in configured
                ),
            ]
        built = _one_per_name(built)
        if settings.max_connections:
            from tether.ai.connections import set_connection_limit  # here: it imports httpx2, slow to load

            for name, limit in settings.max_connections.items():
                set_connection_limit(limit or None, None if name == "*" else name)
        usable = _no_provider if options.api_key is not None else None  # the key decides nothing
        scope = (
            resolve_scope(options.models, usable=usable)
            if options.models
            else _settings_scope(settings, scope_notes)
        )
        resolved: ResolvedModel | None = None
        no_model: str | None = None
        try:
            resolved = _choose_model(
                options.model,
                settings,
                stored,
                provider=options.provider,
                scope=scope,
                usable=usable,
                resources=resources,
            )
        except ModelError as exc:
            if require_model or options.model is not None or options.provider is not None:
                raise  # a model asked for by name that cannot be had is the caller's mistake
            no_model = str(exc)  # none to use now (as pi: the settings' or session's is gone too)
        appended = [settings.append_system_prompt, *options.append_system_prompt]
        left_out: list[str] = []
        prompt = build_system_prompt(
            cwd,
            [(t.name, t.description) for t in built],
            replace=options.system_prompt or settings.system_prompt,
            append="\n\n".join(a for a in appended if a) or None,
            context=options.context_files,
            user_dir=config_dir() if options.context_files else None,
            skills=resources.skills_prompt() if resources is not None else None,
            left_out=left_out,
            hidden=_secrets(settings),
        )
        agent = Agent(
            model=resolved.model if resolved is not None else None,
            tools=built,
            stream_fn=resolved.stream_fn if resolved is not None else None,
            options=SimpleStreamOptions(
                idle_timeout=settings.stream_idle_timeout_ms / 1000 or None,
                connect_timeout=settings.connect_timeout_ms / 1000 or None,
            ),
            steering_mode=cast(QueueMode, settings.steering_mode),
            follow_up_mode=cast(QueueMode, settings.follow_up_mode),
        )
        if options.api_key is not None and resolved is not None:
            agent.get_api_key = _key_for(resolved.model["provider"], options.api_key)
        gate = ApprovalGate(
            workspace, options.approval or settings.approval, ask, allow_tools=settings.allow_tools
        )
        core = AgentSession(
            agent,
            stored,
            cwd=cwd,
            settings=settings,
            sessions=sessions,
            approval=gate,
            hooks=hooks,
            notice="\n".join(
                filter(
                    None,
                    [
                        resolved.notice if resolved is not None else no_model,
                        _sandbox_warning(workspace, built),
                        *left_out,
                        *(resources.warnings if resources else ()),
                        *scope_notes,
                        *mcp_notes,
                        *_models_file_notes(),
                        *auth_file_problems(),
                    ],
                )
            )
            or None,
            mcp=_mcp([*registered, *mcp_servers], mcp_notes, workspace, settings.mcp_max_tools),
            resources=resources,
            owns=("mcp", "sessions") if opened_sessions else ("mcp",),
        )
    except BaseException:
        if stored is not None:
            stored.close()
        if sessions is not None and opened_sessions:
            sessions.close()
        raise
    # The session's stored settings are loaded on binding; this run's choices go on top.
    agent.model = resolved.model if resolved is not None else None
    core.no_model_reason = no_model
    agent.system_prompt = prompt
    core.scoped_models = scope
    named = options.model is not None or options.provider is not None  # not the settings' or a default
    core.chosen_model = resolved if named else None  # every session moved to goes on with it
    core.chosen_thinking = options.thinking or (resolved.thinking if named and resolved is not None else None)
    level = (
        options.thinking
        or (resolved.thinking if resolved is not None else None)
        or (stored.context.thinking_level if stored is not None else None)
    )
    # A new session records this run's model and settings now (they are stored with its first
    # message); a resumed conversation only once they are used, at its next turn, or by an
    # explicit change (pi 1.6: opening a session with another --model writes no model_change).
    resumed = stored is not None and bool(stored.messages)
    core.set_thinking(level or settings.thinking or "medium", record=not resumed)
    return core


def _settings_scope(settings: Settings, notes: list[str]) -> list[ScopedModel]:
    """The ``enabledModels`` setting's models (``/scoped-models`` writes it): a pattern that
    no longer matches a model is one note, the others still apply."""
    scope: list[ScopedModel] = []
    for pattern in settings.enabled_models:
        try:
            found = resolve_scope([pattern])
        except ModelError as exc:
            notes.append(f"enabledModels: {exc}")
            continue
        scope += [s for s in found if not any(_same_scoped(s, t) for t in scope)]
    return scope


def _same_scoped(a: ScopedModel, b: ScopedModel) -> bool:
    return (a.model["provider"], a.model["id"]) == (b.model["provider"], b.model["id"])


def _models_file_notes() -> list[str]:
    """The ``models.json`` entries left out for a mistake, when a model was looked up at all (a
    scripted or an extension's model never loads the registry, and loading it only to ask would
    slow every such start)."""
    import sys

    if "tether.ai.models" not in sys.modules:
        return []
    from tether.ai.models import models_file_problems

    return models_file_problems()


def _one_per_name(tools: list[AgentTool]) -> list[AgentTool]:
    """``tools`` with each name once: a later tool (yours, an extension's) takes the place of an
    earlier one of its name (a built-in ``read``), as in pi. Both would reach the model, which a
    provider refuses, and only the later one would run. A tool no provider would take (its name,
    its schema: ``tether.agent.tool_check``) is a ``SetupError``."""
    kept = one_per_name(tools)
    for tool in kept:
        problem = name_problem(tool.name) or parameters_problem(tool.parameters)
        if problem is not None:  # the program's mistake: every request would fail at the provider
            raise SetupError(f"tool {tool.name!r}: {problem}")
    return kept


def _first_set(*choices: Sequence[str | AgentTool] | None) -> Sequence[str | AgentTool]:
    """The first choice made (``()`` is a choice: no tools)."""
    return next(c for c in choices if c is not None)


def _no_provider(provider: str) -> bool:
    return False


def _key_for(provider: str, api_key: str) -> Callable[[str], str | None]:
    """The agent's ``get_api_key``: ``api_key`` for ``provider`` only, so switching to another
    provider's model never sends it there."""

    def get_api_key(asked: str) -> str | None:
        return api_key if asked == provider else None

    return get_api_key


def _mcp(
    configs: Sequence[McpServerConfig], notes: Sequence[str], workspace: Workspace, max_tools: int | None
) -> McpServers | None:
    """The session's servers; ``None`` without any server or note (the MCP package stays
    unloaded). With ``sandbox.mcp``, stdio servers start in the commands' sandbox; ``max_tools``
    is the ``mcp.maxTools`` setting."""
    if not any(c.enabled for c in configs) and not notes:
        return None
    from tether.mcp import McpServers

    policy = workspace.sandbox
    if policy is not None and policy.active and policy.mcp:
        sandbox = workspace.confinement()
        if sandbox is None:  # said, never silently unconfined
            notes = [*notes, "sandbox unavailable: MCP servers start unconfined (sandbox.mcp)"]
        configs = [replace(c, sandbox=sandbox) if c.command is not None else c for c in configs]
    return McpServers(configs, notes=notes, max_tools=max_tools)


def _choose_model(
    spec: str | None,
    settings: Settings,
    session: Session | None,
    *,
    provider: str | None,
    scope: list[ScopedModel],
    usable: Usable | None,
    resources: Resources | None = None,
) -> ResolvedModel:
    """``model`` (and ``provider``) wins; a resumed session keeps its model (its stored
    description, on the provider's configured endpoint, when the catalog no longer lists it); then the first ``--models`` model;
    else settings and defaults. A model of an extension's provider is served by that extension."""
    stored = session.context.model if session is not None else None
    host = resources.extensions if resources is not None else None
    if provider is not None:
        wanted = f"{provider}/{spec or ''}"
    else:
        wanted = (
            spec or (f"{stored.provider}/{stored.model_id}" if stored is not None else None) or settings.model
        )
    if host is not None and wanted is not None:
        try:
            served = host.model(wanted)
        except LookupError as exc:
            raise SetupError(str(exc)) from None
        if served is not None:
            return ResolvedModel(served[0], served[1])
    if spec is None and provider is None and stored is not None and stored.provider != "scripted":
        if stored.info is not None:  # the configured endpoint, never the stored one (restored_model)
            from tether.ai.models import restored_model

            try:
                return ResolvedModel(restored_model(stored.provider, stored.model_id, stored.info), None)
            except LookupError as exc:
                raise SetupError(f"the session's model: {exc}; choose one with --model") from None
        return resolve_model(f"{stored.provider}/{stored.model_id}", None)
    if spec is None and provider is None and scope:
        return ResolvedModel(scope[0].model, None, thinking=scope[0].thinking)
    return resolve_model(spec, settings.model, provider=provider, usable=usable)


def _open_session(
    choice: SessionChoice, cwd: Path, sessions: SessionManager | None
) -> tuple[SessionManager | None, Session | None]:
    if not choice.persist:
        return None, None
    opened = sessions is None
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
        # Stored with its first message. The store is read once now all the same, so a database
        # that cannot be used is reported before the run, not at its first message.
        sessions.list(cwd, limit=1)
        return sessions, sessions.create(cwd, deferred=True)
    except BaseException:
        if opened:
            sessions.close()
        raise
