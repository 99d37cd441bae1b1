"""User and project settings: ``<config dir>/settings.json`` overlaid by ``.tether/settings.json``.

Settings are small and hand-edited, so they are read with the stdlib ``json`` module and checked
by hand: a mistake is reported as ``<file>: "<key>": <what was expected>`` instead of a pydantic
dump, and nothing here pulls pydantic into the start-up path. The keys are documented in
``docs/settings.md``; unknown keys are rejected so a typo does not silently do nothing.

A project file may not widen what the model is allowed to do unless the user trusted the project
(``tether.session.trust``): its widening keys are validated, then left out and listed in
``Settings.ignored`` for the front end to report (or, interactively, to ask about).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar, cast

from typing_extensions import TypeIs

from tether.ai.types import DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT
from tether.errors import UserError
from tether.own_files import RefusedFile, read_own_file
from tether.session.budget import CompactionSettings
from tether.session.trust import TrustFileError, is_trusted, trust_file
from tether.tools import TOOL_FACTORIES
from tether.tools.approval import APPROVAL_POLICIES, TOOL_PATTERN, Approval
from tether.tools.sandbox import SANDBOX_MODES, SandboxPolicy, stricter

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
QUEUE_MODES = ("one-at-a-time", "all")
"""How queued steering and follow-up messages are delivered (``steeringMode``, ``followUpMode``)."""


class SettingsError(UserError, ValueError):
    """A settings file is unreadable or holds a bad value; the message names the file and key."""


@dataclass(frozen=True, slots=True)
class Retry:
    """Automatic retry of a reply that failed for a transient reason (overloaded, rate limit, 5xx,
    a dropped connection, a stalled stream): the one policy of ``tether.ai.retry``, for a session
    (``Settings.retry``) or one prompt (``AgentSession.prompt(..., retry=...)``). ``tether``
    exports it as ``RetrySettings``.

    One reply makes at most ``max_retries + 1`` requests, each retry announced by an
    ``auto_retry_start`` event, and waits at most ``max_retries × max_delay_ms`` between them.
    """

    enabled: bool = True
    """``False``: one request per reply, whatever ``max_retries`` says."""
    max_retries: int = 3
    """Retries after the first attempt."""
    base_delay_ms: int = 2_000
    """Delay before the first retry; it doubles for each further one, up to ``max_delay_ms``."""
    max_delay_ms: int = 60_000
    """The longest wait before a retry. A server asking (``Retry-After``) for longer is not
    waited for: the reply fails at once with an error saying what the server asked."""

    @property
    def retries(self) -> int:
        """Retries this policy allows: ``max_retries``, or 0 when disabled."""
        return max(self.max_retries, 0) if self.enabled else 0


RetrySettings = Retry
"""The name ``tether`` exports ``Retry`` under (``Retry`` alone is the provider's retry event)."""


SKILL_SOURCES = ("user", "project", "agents", "claude", "pi")
"""Where skills are read from (``docs/skills.md``): ``skills/`` in tether's config folder,
``.tether/skills/`` of a trusted project, and the ``.agents``, ``.claude`` and ``.pi`` folders of
the project and of the home folder."""


@dataclass(frozen=True, slots=True)
class Durable:
    """Durable runs (``tether worker``/``tether submit``, ``docs/durable.md``)."""

    database: str | None = None
    """The DBOS system database: ``postgresql://…`` or ``sqlite:///…`` (default: the session store's
    PostgreSQL database, else ``durable.sqlite`` in the data dir)."""
    worker_concurrency: int = 4
    """Runs one worker process executes at once."""
    global_concurrency: int = 0
    """Runs executing at once over every worker (0: no limit)."""
    rerun_tools: tuple[str, ...] = ()
    """Tools a crashed run may call again, beyond ``read``, ``grep``, ``find`` and ``ls``."""
    keep_runs_days: int = 30
    """Finished runs' records (DBOS's steps and streams) older than this are pruned by the
    workers and ``tether runs prune`` (0: kept for good). Transcripts stay in the session store."""
    run_timeout_seconds: int = 0
    """A submitted run still unfinished this long after it started is cancelled (0: no limit)."""


@dataclass(frozen=True, slots=True)
class Settings:
    model: str | None = None
    thinking: str | None = None
    tools: tuple[str, ...] | None = None
    approval: Approval = "ask"
    allow_outside: bool = False
    """Tools may use paths outside the workspace (writes there still need approval); ``approval``
    alone never widens the workspace."""
    system_prompt: str | None = None
    """Replaces the built-in system prompt (project context files are still appended)."""
    append_system_prompt: str | None = None
    """Added after the built-in prompt and the project context."""
    shell_env_passthrough: tuple[str, ...] = ()
    """Environment variables tool processes keep although they look like credentials."""
    allow_tools: tuple[str, ...] = ()
    """MCP tools that run without asking: ``mcp__<server>`` (every tool of a server),
    ``mcp__<server>__<tool>``, ``*`` wildcards (``tether.tools.approval.allowed_by``)."""
    compaction: CompactionSettings = field(default_factory=CompactionSettings)
    retry: Retry = field(default_factory=Retry)
    skills: frozenset[str] = frozenset(SKILL_SOURCES)
    """The skill sources switched on (``"skills": {"claude": false}`` takes one out)."""
    stream_idle_timeout_ms: int = int(DEFAULT_IDLE_TIMEOUT * 1000)
    """How long a reply may send nothing before it ends as a retryable error (0: no limit); a
    provider's own ``streamIdleTimeoutMs`` in ``models.json`` wins."""
    connect_timeout_ms: int = int(DEFAULT_CONNECT_TIMEOUT * 1000)
    """How long a request may take to set up its connection (0: no limit but the request's
    timeout); a provider's own ``connectTimeoutMs`` in ``models.json`` wins."""
    durable: Durable = field(default_factory=Durable)
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    """How ``bash`` and ``!cmd`` are confined (``docs/sandbox.md``). A project file can only narrow
    it, trusted or not."""
    max_connections: dict[str, int] = field(default_factory=lambda: {})
    """Provider name (``*``: every provider without its own) → requests streaming at once (0: no
    limit); applied with ``tether.ai.set_connection_limit`` when a session is set up."""
    database: str | None = None
    """Where sessions are stored: a ``postgresql://`` URL or a SQLite file (``TETHER_DATABASE_URL``
    and ``--database`` win over it)."""
    serve_token: str | None = field(default=None, repr=False)
    """``serve.token``: the bearer token ``tether serve`` requires (``--token`` wins over it)."""
    theme: str | None = None
    """The interactive mode's colours: ``dark``, ``light`` or a theme file's name
    (``tether.cli.themes``); ``None``: ``dark``."""
    steering_mode: str = "one-at-a-time"
    """How queued steering messages are delivered: one per turn, or ``all`` at once (pi's)."""
    follow_up_mode: str = "one-at-a-time"
    """The same for follow-up messages."""
    mcp_max_tools: int | None = None
    """``mcp.maxTools``: the MCP servers' own tools a request declares, all servers together
    (``tether.mcp.tool_budget``); ``None``: what the model's API accepts less the agent's own
    tools and the resource tools."""
    enabled_models: tuple[str, ...] = ()
    """pi's ``enabledModels``: the model patterns Ctrl-P cycles through (``--models`` wins);
    empty: every usable model."""
    sources: tuple[Path, ...] = ()
    """The files these settings were read from, lowest precedence first."""
    ignored: tuple[str, ...] = ()
    """Keys of the project file left out: they widen what the model may do and the project is
    not trusted (see ``untrusted_note``)."""
    project_file: Path | None = None
    """The project's ``.tether/settings.json``, when there is one."""
    sandbox_narrowed: bool = False
    """The project file's ``sandbox`` would have widened the user's and was narrowed back to it
    (``stricter``): never granted, not even by trust, and said by ``untrusted_note`` as the
    ignored keys are (a repository's ``"sandbox": "off"`` was dropped without a word)."""


_APPROVAL_RANK: dict[str, int] = {"deny": 0, "ask": 1, "yes": 2}

MAX_COUNT = 2**31 - 1
"""The largest count, limit or duration a setting takes: JSON has no integer limit, but a
database column, a semaphore or a timer has (``1e30`` workers failed inside the durable
database, as if the database were at fault)."""


def _is_count(value: object) -> TypeIs[int]:
    """A non-negative integer up to ``MAX_COUNT`` (``true`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def load_settings(config_dir: Path, cwd: Path, *, trust_project: bool = False) -> Settings:
    """User settings, then the nearest project's ``.tether/settings.json`` on top.

    Widening keys of the project file apply only when ``trust_project`` is set or the project is
    in the user's trusted folders; otherwise they end up in ``Settings.ignored``.
    """
    user_file = config_dir / "settings.json"
    settings = Settings()
    if os.path.lexists(user_file):  # a link to nothing is read, and said, not passed over
        settings = _apply(settings, _read(user_file), user_file)
    project = _project_settings(cwd)
    if project is None:
        return settings
    data = _read(project, within=project.parent.parent)
    candidate = _apply(settings, data, project)  # validates every key, widening or not
    # A repository's files never widen the sandbox, not even once trusted.
    sandbox = stricter(settings.sandbox, candidate.sandbox)
    narrowed = sandbox != candidate.sandbox
    candidate = replace(candidate, sandbox=sandbox, sandbox_narrowed=narrowed)
    widening = _widening(settings, candidate)
    if not widening or trust_project or _trusted(config_dir, project.parent.parent):
        return replace(candidate, project_file=project)
    kept = {key: value for key, value in data.items() if key not in widening}
    settings = _apply(settings, kept, project)
    return replace(
        settings, sandbox=sandbox, sandbox_narrowed=narrowed, ignored=widening, project_file=project
    )


def _trusted(config_dir: Path, folder: Path) -> bool:
    try:
        return is_trusted(config_dir, folder)
    except TrustFileError as exc:
        raise SettingsError(str(exc)) from None


def untrusted_note(settings: Settings, config_dir: Path) -> str | None:
    """One line saying which project keys were ignored and how to trust the project, and that a
    widening ``sandbox`` was ignored (trust does not grant that one)."""
    project = settings.project_file
    if project is None or not (settings.ignored or settings.sandbox_narrowed):
        return None
    notes: list[str] = []
    if settings.ignored:
        keys = ", ".join(f'"{key}"' for key in settings.ignored)
        notes.append(
            f"ignored {keys}: a project file may not widen what the model may do unless you trust "
            f"{project.parent.parent} (run tether interactively there to be asked, or add the folder "
            f"to {trust_file(config_dir)})"
        )
    if settings.sandbox_narrowed:
        notes.append(
            'ignored "sandbox": a project file may only make the sandbox stricter, even when trusted'
        )
    return f"{project}: " + "; ".join(notes)


def _widening(user: Settings, project: Settings) -> tuple[str, ...]:
    """The keys by which ``project`` allows the model more than ``user`` does."""
    keys: list[str] = []
    if _APPROVAL_RANK[project.approval] > _APPROVAL_RANK[user.approval]:
        keys.append("approval")
    allowed = set(user.tools) if user.tools is not None else set(TOOL_FACTORIES)
    if project.tools is not None and not set(project.tools) <= allowed:
        keys.append("tools")
    if not set(project.shell_env_passthrough) <= set(user.shell_env_passthrough):
        keys.append("shellEnvPassthrough")
    if not set(project.allow_tools) <= set(user.allow_tools):
        keys.append("allowTools")
    if project.allow_outside and not user.allow_outside:
        keys.append("allowOutside")
    if project.database != user.database:
        keys.append("database")  # a repository must not send the transcripts to a server of its choice
    if project.durable != user.durable:
        keys.append("durable")  # nor pick the run database, nor let risky tools run twice
    if project.serve_token != user.serve_token:
        keys.append("serve")  # nor choose the token that opens the sessions to the network
    return tuple(keys)


def _project_settings(cwd: Path) -> Path | None:
    for directory in (cwd, *cwd.parents):
        candidate = directory / ".tether" / "settings.json"
        if os.path.lexists(candidate):
            return candidate
    return None


def save_user_setting(config_dir: Path, key: str, value: object) -> Path:
    """Set one key of the user's ``settings.json`` (the model picker's "save as default",
    ``/settings``; ``a.b`` sets key ``b`` of object ``a``), keeping the rest; the result is checked as a start-up would read it before it replaces the
    file. Returns the file written."""
    path = config_dir / "settings.json"
    data = _read(path) if path.exists() else {}
    parent, _, leaf = key.rpartition(".")  # "compaction.enabled": one key of an object
    if parent:
        inner = data.get(parent)
        data[parent] = (
            {**cast(dict[str, object], inner), leaf: value} if isinstance(inner, dict) else {leaf: value}
        )
    else:
        data[key] = value
    _apply(Settings(), data, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    from tether.store.jsonl import write_lines  # a new file renamed over it: no link followed

    write_lines(path, [json.dumps(data, indent=2).encode()])
    return path


def _read(path: Path, within: Path | None = None) -> dict[str, object]:
    """The JSON object of a settings file, read as tether reads a repository's context files
    (``tether.own_files``): a project's file is found, not named, so a cloned
    repository's ``.tether/settings.json`` linking to ``/dev/zero`` or a FIFO (which hung the
    start, filling memory) or to a file outside ``within`` (whose values an error would echo) is
    refused unread."""
    if path.is_dir():
        raise SettingsError(f"{path}: is a directory, not a settings file; remove it or make it a JSON file")
    try:
        data = json.loads(read_own_file(path, None if within is None else [within]).decode("utf-8"))
    except RefusedFile as exc:
        raise SettingsError(f"{path}: cannot read: {exc}") from None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: not valid JSON: {exc}") from None
    except RecursionError:
        raise SettingsError(f"{path}: not valid JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a JSON object at the top level")
    return cast(dict[str, object], data)


def _apply(base: Settings, data: dict[str, object], path: Path) -> Settings:
    def bad(key: str, expected: str) -> SettingsError:
        return SettingsError(f'{path}: "{key}": expected {expected}, got {json.dumps(data[key])}')

    changes: dict[str, object] = {}
    for key, value in data.items():
        if key in ("model", "systemPrompt", "appendSystemPrompt", "database", "theme"):
            if not isinstance(value, str):
                raise bad(key, "a string")
            changes[_FIELD[key]] = value
        elif key == "thinking":
            if value not in THINKING_LEVELS:
                raise bad(key, "one of " + ", ".join(THINKING_LEVELS))
            changes["thinking"] = value
        elif key == "approval":
            if value not in APPROVAL_POLICIES:
                raise bad(key, "one of " + ", ".join(APPROVAL_POLICIES))
            changes["approval"] = value
        elif key in ("steeringMode", "followUpMode"):
            if value not in QUEUE_MODES:
                raise bad(key, "one of " + ", ".join(QUEUE_MODES))
            changes["steering_mode" if key == "steeringMode" else "follow_up_mode"] = value
        elif key in ("tools", "shellEnvPassthrough", "enabledModels"):
            items = cast(list[object], value) if isinstance(value, list) else None
            if items is None or not all(isinstance(v, str) for v in items):
                expected = {"tools": "tool names", "enabledModels": "model patterns"}.get(
                    key, "variable names"
                )
                raise bad(key, f"a list of {expected}")
            if key == "tools" and not set(cast(list[str], items)) <= TOOL_FACTORIES.keys():
                # else the run stopped later on "Unknown tool(s): ...", naming no file
                raise bad(key, "built-in tool names (" + ", ".join(TOOL_FACTORIES) + ")")
            changes[_LISTS[key]] = tuple(cast(list[str], items))
        elif key == "allowTools":
            items = cast(list[object], value) if isinstance(value, list) else None
            if items is None or not all(isinstance(v, str) and TOOL_PATTERN.match(v) for v in items):
                raise bad(key, "a list of MCP tool names or patterns (mcp__<server>, mcp__<server>__<tool>)")
            changes["allow_tools"] = (*base.allow_tools, *cast(list[str], items))
        elif key == "compaction":
            changes["compaction"] = _compaction(base.compaction, value, path)
        elif key == "retry":
            changes["retry"] = _retry(base.retry, value, path)
        elif key == "allowOutside":
            if not isinstance(value, bool):
                raise bad(key, "true or false")
            changes["allow_outside"] = value
        elif key == "skills":
            changes["skills"] = _skill_sources(base.skills, value, path)
        elif key == "durable":
            changes["durable"] = _durable(base.durable, value, path)
        elif key == "sandbox":
            changes["sandbox"] = _sandbox(base.sandbox, value, path)
        elif key == "serve":
            changes["serve_token"] = _serve_token(value, path)
        elif key in ("streamIdleTimeoutMs", "connectTimeoutMs"):
            if not _is_count(value):
                raise bad(key, f"milliseconds, a non-negative integer (0: no limit) up to {MAX_COUNT}")
            changes["stream_idle_timeout_ms" if key == "streamIdleTimeoutMs" else "connect_timeout_ms"] = (
                value
            )
        elif key == "maxConnections":
            changes["max_connections"] = base.max_connections | _max_connections(value, path)
        elif key == "mcp":
            changes["mcp_max_tools"] = _mcp_max_tools(base.mcp_max_tools, value, path)
        elif key == "$schema":
            continue
        else:
            extra = [
                "thinking",
                "approval",
                "allowOutside",
                "allowTools",
                "compaction",
                "retry",
                "skills",
                "durable",
                "sandbox",
                "serve",
                "streamIdleTimeoutMs",
                "connectTimeoutMs",
                "maxConnections",
                "mcp",
                "steeringMode",
                "followUpMode",
            ]
            known = ", ".join(sorted([*_FIELD, *_LISTS, *extra]))
            raise SettingsError(f'{path}: unknown key "{key}" (known keys: {known})')
    sources = (*base.sources, path)
    return replace(base, **changes, sources=sources)  # type: ignore[arg-type]


_FIELD = {
    "model": "model",
    "systemPrompt": "system_prompt",
    "appendSystemPrompt": "append_system_prompt",
    "database": "database",
    "theme": "theme",
}
_LISTS = {"tools": "tools", "shellEnvPassthrough": "shell_env_passthrough", "enabledModels": "enabled_models"}


def _sandbox(base: SandboxPolicy, value: object, path: Path) -> SandboxPolicy:
    """``"workspace-write"`` (a mode) or ``{"mode", "network", "allowHosts", "hide", "pidsMax", "mcp",
    "escalationTimeout"}``."""
    modes = ", ".join(SANDBOX_MODES)
    if isinstance(value, str):
        value = {"mode": value}
    if not isinstance(value, dict):
        raise SettingsError(
            f'{path}: "sandbox": expected one of {modes}, or an object, got {json.dumps(value)}'
        )
    changes: dict[str, object] = {}
    for key, item in cast(dict[str, object], value).items():
        where = f'{path}: "sandbox.{key}"'
        if key == "mode":
            if item not in SANDBOX_MODES:
                raise SettingsError(f"{where}: expected one of {modes}, got {json.dumps(item)}")
            changes["mode"] = item
        elif key == "network":
            if not isinstance(item, bool):
                raise SettingsError(f"{where}: expected true or false, got {json.dumps(item)}")
            changes["network"] = item
        elif key == "hide":
            items = cast(list[object], item) if isinstance(item, list) else None
            if items is None or not all(isinstance(v, str) and v for v in items):
                raise SettingsError(f"{where}: expected a list of paths, got {json.dumps(item)}")
            hidden = tuple(Path(os.path.expanduser(v)) for v in cast(list[str], items))
            if not all(h.is_absolute() for h in hidden):
                raise SettingsError(f"{where}: paths must be absolute (or start with ~)")
            changes["hide"] = (*base.hide, *hidden)
        elif key == "allowHosts":
            items = cast(list[object], item) if isinstance(item, list) else None
            if items is None or not all(isinstance(v, str) and v and "/" not in v for v in items):
                raise SettingsError(f"{where}: expected a list of host names (*.example.com for subdomains)")
            changes["allow_hosts"] = (*base.allow_hosts, *cast(list[str], items))
        elif key == "pidsMax":
            if not _is_count(item) or item < 16:
                raise SettingsError(f"{where}: expected a count of at least 16, got {json.dumps(item)}")
            changes["pids_max"] = item
        elif key == "mcp":
            if not isinstance(item, bool):
                raise SettingsError(f"{where}: expected true or false, got {json.dumps(item)}")
            changes["mcp"] = item
        elif key == "escalationTimeout":
            if isinstance(item, bool) or not isinstance(item, int | float) or not 0 < item <= 86400:
                raise SettingsError(
                    f"{where}: expected seconds above 0 (at most 86400), got {json.dumps(item)}"
                )
            changes["escalation_timeout"] = float(item)
        else:
            raise SettingsError(
                f"{where}: unknown key (known: mode, network, allowHosts, hide, pidsMax, mcp, escalationTimeout)"
            )
    return replace(base, **changes)  # type: ignore[arg-type]


def _max_connections(value: object, path: Path) -> dict[str, int]:
    """An integer (every provider) or an object of provider name → integer; 0 is no limit."""
    expected = f"a non-negative integer (0: no limit) up to {MAX_COUNT}"
    if not isinstance(value, dict):
        if not _is_count(value):
            raise SettingsError(
                f'{path}: "maxConnections": expected {expected}, or an object of provider name to that, '
                f"got {json.dumps(value)}"
            )
        return {"*": value}
    limits: dict[str, int] = {}
    for provider, limit in cast(dict[str, object], value).items():
        if not _is_count(limit):
            raise SettingsError(
                f'{path}: "maxConnections.{provider}": expected {expected}, got {json.dumps(limit)}'
            )
        limits[provider] = limit
    return limits


def _mcp_max_tools(base: int | None, value: object, path: Path) -> int | None:
    """``{"maxTools": N}``: the only key of ``mcp`` so far (the servers are in ``mcp.json``)."""
    if not isinstance(value, dict):
        raise SettingsError(f'{path}: "mcp": expected an object')
    result = base
    for key, item in cast(dict[str, object], value).items():
        if key != "maxTools":
            raise SettingsError(f'{path}: "mcp.{key}": unknown key (known: maxTools)')
        if not _is_count(item):
            raise SettingsError(
                f'{path}: "mcp.maxTools": expected a non-negative integer up to {MAX_COUNT}, got {json.dumps(item)}'
            )
        result = item
    return result


_Section = TypeVar("_Section", CompactionSettings, Retry)


def _compaction(base: CompactionSettings, value: object, path: Path) -> CompactionSettings:
    counts = {"reserveTokens": "reserve_tokens", "keepRecentTokens": "keep_recent_tokens"}
    return _section(base, value, path, "compaction", counts)


def _retry(base: Retry, value: object, path: Path) -> Retry:
    counts = {"maxRetries": "max_retries", "baseDelayMs": "base_delay_ms", "maxDelayMs": "max_delay_ms"}
    return _section(base, value, path, "retry", counts)


def _skill_sources(base: frozenset[str], value: object, path: Path) -> frozenset[str]:
    """``{"claude": false, ...}``: each source switched on or off."""
    if not isinstance(value, dict):
        raise SettingsError(f'{path}: "skills": expected an object of {", ".join(SKILL_SOURCES)}: true/false')
    result = base
    for key, item in cast(dict[str, object], value).items():
        if key not in SKILL_SOURCES:
            raise SettingsError(f'{path}: "skills.{key}": unknown source (known: {", ".join(SKILL_SOURCES)})')
        if not isinstance(item, bool):
            raise SettingsError(f'{path}: "skills.{key}": expected true or false')
        result = result | {key} if item else result - {key}
    return result


def _serve_token(value: object, path: Path) -> str | None:
    """``{"token": "..."}``: the only key of ``serve`` so far."""
    if not isinstance(value, dict):
        raise SettingsError(f'{path}: "serve": expected an object')
    token: str | None = None
    for key, item in cast(dict[str, object], value).items():
        if key != "token":
            raise SettingsError(f'{path}: "serve.{key}": unknown key (known: token)')
        if not isinstance(item, str) or not item:
            raise SettingsError(f'{path}: "serve.token": expected a non-empty string')
        token = item
    return token


def _durable(base: Durable, value: object, path: Path) -> Durable:
    """``{"database", "workerConcurrency", "globalConcurrency", "rerunTools", "keepRunsDays",
    "runTimeoutSeconds"}``."""
    if not isinstance(value, dict):
        raise SettingsError(f'{path}: "durable": expected an object')
    result = base
    counts = {
        "workerConcurrency": "worker_concurrency",
        "globalConcurrency": "global_concurrency",
        "keepRunsDays": "keep_runs_days",
        "runTimeoutSeconds": "run_timeout_seconds",
    }
    for key, item in cast(dict[str, object], value).items():
        where = f'{path}: "durable.{key}"'
        if key == "database":
            if not isinstance(item, str):
                raise SettingsError(f"{where}: expected a string")
            result = replace(result, database=item)
        elif key in counts:
            if not _is_count(item):
                raise SettingsError(f"{where}: expected a non-negative integer up to {MAX_COUNT}")
            result = replace(result, **{counts[key]: item})
        elif key == "rerunTools":
            items = cast(list[object], item) if isinstance(item, list) else None
            if items is None or not all(isinstance(v, str) for v in items):
                raise SettingsError(f"{where}: expected a list of tool names")
            result = replace(result, rerun_tools=tuple(cast(list[str], items)))
        else:
            known = ", ".join(["database", *counts, "rerunTools"])
            raise SettingsError(f"{where}: unknown key (known: {known})")
    return result


def _section(base: _Section, value: object, path: Path, name: str, counts: dict[str, str]) -> _Section:
    """An object of ``enabled`` plus non-negative integers; ``counts`` maps each wire key to its field."""
    if not isinstance(value, dict):
        raise SettingsError(f'{path}: "{name}": expected an object')
    result = base
    for key, item in cast(dict[str, object], value).items():
        where = f'{path}: "{name}.{key}"'
        if key == "enabled":
            if not isinstance(item, bool):
                raise SettingsError(f"{where}: expected true or false")
            result = replace(result, enabled=item)
        elif key in counts:
            if not _is_count(item):
                raise SettingsError(f"{where}: expected a non-negative integer up to {MAX_COUNT}")
            result = replace(result, **{counts[key]: item})
        else:
            raise SettingsError(f"{where}: unknown key (known: {', '.join(['enabled', *counts])})")
    return result
