"""Slash commands as plain functions of an ``AgentSession``: the interactive mode, RPC and ACP share them.

A handler takes the session and the text after the command name and returns a ``CommandResult``
(plain text, markdown-friendly). Bad arguments are answered with a usage line, never raised.

RPC and ACP clients type into a prompt box, so their prompts go through ``execute_remote``: a known
command runs here (or is refused with the reason, when that front end does it its own way) and
never reaches the model as text; any other line is left to be sent as a prompt, as pi does.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from tether.errors import ModelError
from tether.session.agent_session import AgentSession
from tether.session.settings import THINKING_LEVELS
from tether.session.stats import SessionRow, format_tokens
from tether.store.store import SessionError


@dataclass(frozen=True, slots=True)
class CommandResult:
    text: str
    quit: bool = False
    error: bool = False


Handler = Callable[[AgentSession, str], Awaitable[CommandResult]]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    usage: str
    summary: str
    handler: Handler


def parse(line: str) -> tuple[str, str] | None:
    """``"/model a/b"`` → ``("model", "a/b")``; ``None`` when the line is not a command."""
    if not line.startswith("/") or line.startswith("//"):
        return None
    name, _, rest = line[1:].partition(" ")
    return name.strip().lower(), rest.strip()


def runs_here(core: AgentSession, line: str) -> bool:
    """Whether ``execute`` answers ``line``: a built-in (or unknown) command. A prompt template,
    ``/skill:NAME``, an extension's command or an MCP prompt is for ``core.submit`` instead,
    like any prompt."""
    parsed = parse(line)
    if parsed is None or parsed[0] in COMMANDS:
        return parsed is not None
    if core.mcp and parsed[0].startswith("mcp__"):
        return False  # an MCP prompt: the core asks its server (an unknown one says so there)
    return core.resources is None or not core.resources.handles(line)


def user_commands(core: AgentSession) -> list[tuple[str, str]]:
    """``(name, description)`` of the commands the user's files add (templates, skills,
    extensions) and the MCP servers' prompts, for ``/help`` and completion."""
    found = [] if core.resources is None else core.resources.commands()
    listed = [(c.name, c.description) for c in found if c.name not in COMMANDS]
    if core.mcp:  # the prompts of the servers that have started (``tether.mcp.prompts``)
        listed += [(name, info.description or "MCP prompt") for name, (_, info) in core.mcp.prompts().items()]
    return listed


async def execute(core: AgentSession, line: str) -> CommandResult:
    parsed = parse(line)
    if parsed is None:
        return CommandResult(f"not a command: {line}", error=True)
    name, args = parsed
    command = COMMANDS.get(name)
    if command is None:
        return CommandResult(f"unknown command /{name} (try /help)", error=True)
    if name not in ("help", "session", "quit", "exit"):
        if core.is_running:
            return CommandResult(f"/{name} is not available while the agent runs (Esc aborts it)", error=True)
        if core.is_compacting:
            return CommandResult(
                f"/{name} is not available while a compaction runs (Esc aborts it)", error=True
            )
    try:
        return await command.handler(core, args)
    except (ModelError, SessionError, ValueError, LookupError, OSError) as exc:  # OSError: /export's file
        return CommandResult(f"/{name}: {exc}", error=True)


Remote = Literal["rpc", "acp"]
"""A front end whose prompts come from a client program rather than the terminal."""

REMOTE_REFUSALS: dict[str, dict[Remote, str]] = {
    "quit": {"rpc": "send the shutdown command", "acp": "close the session in the editor"},
    "new": {"acp": "start a new session from the editor (session/new)"},
    "resume": {"acp": "open another session from the editor (session/load)"},
    "fork": {"acp": "the editor keeps its own list of sessions; fork from the terminal or over RPC"},
    "clone": {"acp": "the editor keeps its own list of sessions; clone from the terminal or over RPC"},
}
"""Commands a remote front end does its own way: the reason names that way. ACP refuses what
would move the editor's session id to another session behind its back."""


def named_command(line: str) -> Command | None:
    """The command a line names (``/tree``, ``/exit``), or ``None``: a prompt, or an unknown
    ``/word`` (which an RPC or ACP client sends to the model, as pi does)."""
    parsed = parse(line)
    return COMMANDS.get(parsed[0]) if parsed is not None else None


async def execute_remote(core: AgentSession, line: str, remote: Remote) -> CommandResult | None:
    """A prompt from an RPC or ACP client: the result of the slash command it names, or ``None``
    when it names none (send it to the model)."""
    command = named_command(line)
    if command is None:
        return None
    refusal = REMOTE_REFUSALS.get(command.name, {}).get(remote)
    if refusal is not None:
        return CommandResult(f"/{command.name} does not work over {remote.upper()}: {refusal}", error=True)
    return await execute(core, line)


async def _model(core: AgentSession, args: str) -> CommandResult:
    if not args:
        model = core.agent.model
        name = f"{model['provider']}/{model['id']}" if model is not None else "none"
        return CommandResult(f"model: {name} (change with /model PATTERN[:LEVEL])")
    model = core.set_model(args)
    return CommandResult(f"model set to {model['provider']}/{model['id']}, thinking {core.thinking_level}")


async def _thinking(core: AgentSession, args: str) -> CommandResult:
    if not args:
        return CommandResult(f"thinking: {core.thinking_level} (levels: {', '.join(THINKING_LEVELS)})")
    if args not in THINKING_LEVELS:
        return CommandResult(f"usage: /thinking {'|'.join(THINKING_LEVELS)}", error=True)
    effective = core.set_thinking(args)
    note = "" if effective == args else f" ({args} is not supported by this model)"
    return CommandResult(f"thinking set to {effective}{note}")


async def _compact(core: AgentSession, args: str) -> CommandResult:
    result = await core.compact(args or None)
    return CommandResult(f"compacted the conversation; summary:\n\n{result.summary}")


async def _tree(core: AgentSession, args: str) -> CommandResult:
    if not args:
        return CommandResult(
            core.tree_text() + "\n\n/tree ID branches there; /tree ID --summary also summarises"
        )
    entry_id, _, flag = args.partition(" ")
    summary = await core.branch(entry_id, summarize=flag.strip() == "--summary")
    text = f"now on entry {entry_id}"
    return CommandResult(text + (f"; summary of the branch left:\n\n{summary}" if summary else ""))


async def _fork(core: AgentSession, args: str) -> CommandResult:
    await core.before_fork(args or None, "at")
    new_id = core.fork(args or None)
    return CommandResult(f"forked into new session {new_id}")


async def _clone(core: AgentSession, args: str) -> CommandResult:
    if args:
        return CommandResult(
            "usage: /clone (it copies the session as it is now; /fork ID picks a point)", error=True
        )
    await core.before_fork(None, "at")
    return CommandResult(f"cloned into new session {core.fork(None)}")


async def _new(core: AgentSession, args: str) -> CommandResult:
    await core.before_switch("new")
    return CommandResult(f"new session {core.new_session()}")


async def _resume(core: AgentSession, args: str) -> CommandResult:
    if not args:
        rows = [SessionRow.of(r) for r in core.list_sessions(limit=20)]
        if not rows:
            return CommandResult("no sessions in this directory")
        lines = [f"{i:>3}  {row}" for i, row in enumerate(rows, 1)]
        return CommandResult("\n".join(lines) + "\n\n/resume N or /resume ID switches")
    target = args
    if args.isascii() and args.isdigit():  # isdigit() alone takes "²", which int() refuses
        rows = [SessionRow.of(r) for r in core.list_sessions(limit=20)]
        if not 1 <= int(args) <= len(rows):
            return CommandResult(f"no session number {args}", error=True)
        target = rows[int(args) - 1].id
    await core.before_switch("resume", target)
    core.switch_session(target)
    return CommandResult(f"resumed session {target} ({len(core.messages)} messages)")


async def _session(core: AgentSession, args: str) -> CommandResult:
    s = core.stats()
    percent = s.context_percent
    lines = [
        f"session   {s.session_id or '(not saved: --no-session)'}",
        f"title     {s.title or '-'}",
        f"file      {s.session_file or '-'}",
        f"model     {_model_name(core)}  thinking {core.thinking_level}",
        f"messages  {s.messages} (user {s.user_messages}, assistant {s.assistant_messages}, "
        f"tool calls {s.tool_calls})",
        f"tokens    input {format_tokens(s.input_tokens)}, output {format_tokens(s.output_tokens)}, "
        f"cache read {format_tokens(s.cache_read_tokens)}, cache write {format_tokens(s.cache_write_tokens)}",
        f"cost      ${s.cost:.4f}",
        f"context   {format_tokens(s.context_tokens)}"
        + (f" of {format_tokens(s.context_window or 0)} ({percent:.0f}%)" if percent is not None else ""),
    ]
    return CommandResult("\n".join(lines))


async def _export(core: AgentSession, args: str) -> CommandResult:
    default = f"tether-session-{core.session_id or 'unsaved'}.html"  # pi's default: the HTML page
    path = Path(os.path.expanduser(args or default))  # ~nosuchuser: as spelled
    if not path.is_absolute():
        path = core.cwd / path
    if path.suffix not in (".jsonl", ".html"):
        return CommandResult("usage: /export [FILE.jsonl|FILE.html]", error=True)
    core.export(path)
    return CommandResult(f"exported to {path}")


async def _name(core: AgentSession, args: str) -> CommandResult:
    if not args:
        return CommandResult("usage: /name TITLE", error=True)
    core.rename(args)
    return CommandResult(f"session named {args!r}")


async def _mcp(core: AgentSession, args: str) -> CommandResult:
    from tether.mcp.servers import format_statuses

    if core.mcp is None:
        return CommandResult(format_statuses([]))
    return CommandResult(format_statuses(core.mcp.statuses(), core.mcp.notes))


async def _help(core: AgentSession, args: str) -> CommandResult:
    width = max(len(c.usage) for c in COMMANDS.values())
    lines = [f"{c.usage.ljust(width)}  {c.summary}" for c in dict.fromkeys(COMMANDS.values())]
    added = user_commands(core)
    if added:
        lines += ["", "From your prompts, skills and extensions:"]
        lines += [f"{('/' + name).ljust(width)}  {description}" for name, description in added]
    lines += [
        "",
        "!cmd runs a shell command (!!cmd: kept out of the model's context); $code / $$code: Python;",
        "@path attaches a file. Enter sends; Alt-Enter or Ctrl-J adds a line. While the agent works,",
        "Enter steers it and Alt-Enter queues a follow-up. Esc aborts; Ctrl-C clears the input; Ctrl-D exits.",
        "Ctrl-T shows or folds thinking; Ctrl-O opens the transcript, every result and thought in full",
        "(Up/Down/PgUp/PgDn/Home/End scroll; q or Esc returns). /tree alone opens the tree navigator:",
        "Enter branches at the entry under the cursor (on a prompt: just before it, the prompt back in",
        "the input box), then asks whether to summarise the branch left; Esc cancels.",
    ]
    return CommandResult("\n".join(lines))


async def _quit(core: AgentSession, args: str) -> CommandResult:
    return CommandResult("bye", quit=True)


_LIST = [
    Command("model", "/model [PATTERN[:LEVEL]]", "show or switch the model (sonnet, opus:high)", _model),
    Command("thinking", "/thinking [LEVEL]", "show or set the thinking level", _thinking),
    Command("compact", "/compact [INSTRUCTIONS]", "summarise older messages to free context", _compact),
    Command("tree", "/tree [ID [--summary]]", "navigate the session tree; with ID: branch there", _tree),
    Command("fork", "/fork [ID]", "copy the session (up to an entry) into a new one", _fork),
    Command("clone", "/clone", "copy the session as it is now into a new one and continue there", _clone),
    Command("new", "/new", "start a new session", _new),
    Command("resume", "/resume [N|ID]", "list or switch to another session", _resume),
    Command("session", "/session", "session stats: tokens, cost, file", _session),
    Command("export", "/export [FILE]", "write the session as an HTML page (or JSONL: FILE.jsonl)", _export),
    Command("name", "/name TITLE", "name the session", _name),
    Command("mcp", "/mcp", "MCP servers: status and tools", _mcp),
    Command("help", "/help", "this help", _help),
    Command("quit", "/quit", "exit", _quit),
]
COMMANDS: dict[str, Command] = {c.name: c for c in _LIST}
COMMANDS["exit"] = COMMANDS["quit"]


def _model_name(core: AgentSession) -> str:
    model = core.agent.model
    return f"{model['provider']}/{model['id']}" if model is not None else "none (choose one with /model)"
