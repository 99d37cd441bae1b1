"""The choices a session starts with, each declared and documented here once.

``AgentOptions`` is what a program chooses for its coding agent (``create_agent_session``'s
record); ``SessionOptions`` adds what a front end reads from files on top (MCP servers,
extensions, the sandbox flags), and the CLI's flags fill it in by name (``cli/options.py``).
What differs per session (the workspace, the stored session, who answers approvals) is not a
choice here: ``create_agent_session`` and ``start_session`` take it beside the record, so one
record serves every session a front end starts.

This module holds data only (no import of the factory), so the CLI can parse its flags into it
before anything heavy loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from tether.agent import AgentTool
    from tether.tools.approval import Approval


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentOptions:
    """The coding agent's choices; ``None`` defers to the resumed session and the settings."""

    model: str | None = None
    """A model spec (``provider/id``, a bare id, ``local:PATH``, ``scripted:PATH``); default:
    the resumed session's model, else ``settings.model``, else the first provider with a key."""
    provider: str | None = None
    """Match ``model`` among this provider's models only; without ``model``, the provider's
    default model (``--provider``)."""
    api_key: str | None = field(default=None, repr=False)
    """The key of the chosen model's provider for this session, instead of its environment
    variable (``--api-key``). Kept in memory: never recorded, logged, or passed to tools. Needs a
    model chosen here (``model``, ``provider`` or ``models``)."""
    models: Sequence[str] | None = None
    """Patterns (``sonnet``, ``anthropic/*``, ``gpt-5:high``) of the models
    ``AgentSession.cycle_model`` goes through (``--models``); without ``model``, a new session
    starts on the first."""
    thinking: str | None = None
    """The thinking level, clamped to the model; default: the session's, the settings', then
    ``medium``."""
    tools: Sequence[str | AgentTool] | None = None
    """Built-in tools by name (``tether.CODING_TOOLS``: all of them) and/or tools of your own
    (``tether.coding_tools(cwd)``, ``@tether.tool`` functions). Default: ``settings.tools``, else
    only the tools that neither write nor execute (``tether.READ_ONLY_TOOLS``: read, grep, find,
    ls): a program gets a writing or executing tool only by asking for it. The CLI asks for all
    of them unless ``--tools`` says otherwise."""
    system_prompt: str | None = None
    """Replaces the built-in prompt (project context files are still appended)."""
    append_system_prompt: Sequence[str] = ()
    """Texts added after the settings' ``appendSystemPrompt`` (``--append-system-prompt``)."""
    context_files: bool = True
    """``False`` (``--no-context-files``): leave out the global and project
    ``AGENTS.md``/``CLAUDE.md``."""
    approval: Approval | None = None
    """The approval policy (default: ``settings.approval``; ``--yes``: ``"yes"``)."""
    allow_outside: bool | None = None
    """Let tools use paths outside the workspace; writes there still need approval
    (``--allow-outside``; default: ``settings.allow_outside``)."""

    def __post_init__(self) -> None:
        """A ``ModelInfo`` (what ``find_model`` gives and ``Agent(model=...)`` takes) passed as
        ``model`` failed deep in the model choice: "'dict' object has no attribute 'startswith'"."""
        model = cast(object, self.model)  # typed str, but a program may pass anything
        if model is not None and not isinstance(model, str):
            kind = type(model).__name__
            named: Mapping[str, object] = (
                cast(Mapping[str, object], model) if isinstance(model, Mapping) else {}
            )
            hint = f" (this one: {named.get('provider')}/{named.get('id')})" if named else ""
            raise TypeError(
                f"AgentOptions(model=...) takes a model spec, a str such as 'provider/id'{hint}, not a "
                f"{kind}; a model of your own: register it (tether.ai.models.register_model), "
                "or bind your Agent(model=...) to an AgentSession"
            )


def with_choices(options: AgentOptions | None, choices: Mapping[str, Any]) -> AgentOptions:
    """``options`` (default: none chosen) with ``choices``, named as ``AgentOptions``' fields, on
    top: for the calls that take the choices as keywords (``run_sync``). A name that is not a
    field is a ``TypeError`` naming it, as Python's own for an unknown keyword."""
    names = {f.name for f in fields(AgentOptions)}
    for name in choices:
        if name not in names:
            raise TypeError(
                f"unexpected keyword argument {name!r} (AgentOptions has {', '.join(sorted(names))})"
            )
    return replace(options if options is not None else AgentOptions(), **choices)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOptions(AgentOptions):
    """A front end's choices for every session it starts: the agent's, and what to read from
    files and flags around it (``start_session`` resolves them)."""

    mcp: bool = True
    """``False``: no MCP servers from files (``--no-mcp``); servers given to ``start_session``
    still start."""
    mcp_config: Path | None = None
    """``--mcp-config FILE``: servers on top of the user's and the (trusted) project's."""
    sandbox: str | None = None
    """``--sandbox MODE``: the sandbox mode instead of the setting's (the user's own choice)."""
    sandbox_network: bool | None = None
    """``--sandbox-network``: sandboxed commands may use the network; ``None``: the setting."""
    sandbox_allow_hosts: tuple[str, ...] = ()
    """``--sandbox-allow-host``: hosts reachable through the sandbox's proxy, on top of the setting's."""
    extensions: bool = True
    """``False`` (``--no-extensions``): load no extension from folders or entry points."""
    extension_paths: tuple[Path, ...] = ()
    """``-e PATH``: extensions loaded for this run on top of the others."""
    extension_flags: tuple[str, ...] = ()
    """``--flag NAME[=VALUE]``: values of flags extensions register (``register_flag``)."""
