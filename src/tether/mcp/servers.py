"""``McpServers``: the MCP servers of one session, started together, stopped together.

A server whose listing is kept from an earlier run with the same configuration
(``tether.mcp.tool_cache``) is not started until something of it is used: its tools are offered
from the kept listing, and the first call (or prompt, or resource read) starts it, sharing one
start between calls that come together. The others are the ones a model call must wait for:
``start()`` launches them all at once in the background, ``listed()`` waits until each has
started or failed (each bounded by its own start-up timeout), so the first prompt waits only as
long as the slowest server that is still worth waiting for, and not at all when every listing is
kept. ``ready()`` starts and waits for every server (``tether mcp list`` reports them all).
``tools()`` are the agent tools of every server whose tools are known; ``close()`` stops them
all (processes included, servers still starting too). An extension adds and removes servers
while the session runs (``add``, ``remove``: pi's ``registerMcpServer``); a server of the files
keeps its name against an extension's.

For a bare ``Agent``::

    async with McpServers([McpServerConfig("time", command="uvx", args=("mcp-server-time",))]) as mcp:
        mcp.fit(tool_limit(model["api"]), len(my_tools))  # without it: room for 28 (tool_budget)
        agent = Agent(model=model, tools=[*my_tools, *mcp.tools()])
        await agent.prompt("What time is it in Tokyo?")
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from tether.agent.tool import AgentTool
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.mcp.config import McpServerConfig
from tether.mcp.connection import MAX_LOG_BYTES, TASKS_ONLY, McpConnection, Status, ToolInfo
from tether.mcp.prompts import PromptInfo, parse_arguments, prompt_content
from tether.mcp.tool_budget import (
    ASSUMED_OWN_TOOLS,
    DEFAULT_TOOL_LIMIT,
    NAMED,
    Share,
    budget,
    note,
    shares,
)
from tether.mcp.tool_cache import Listing, cache_key, forget_listing, read_listing, write_listing
from tether.mcp.tool_search import SEARCH_TOOL, Candidate, describe, search_tool
from tether.mcp.tools import agent_tool, tool_name
from tether.own_files import make_own_folder

if TYPE_CHECKING:
    from tether.wire import ImageContent, TextContent


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """What ``tether mcp list`` and ``/mcp`` show for one server."""

    name: str
    transport: str
    source: str
    status: Status
    tools: tuple[str, ...]
    """The agent-side tool names."""
    error: str | None
    log_file: Path | None
    left_out: tuple[str, ...] = ()
    """Tools the server lists but that are not offered, each with why (``name: reason``)."""
    deferred: tuple[str, ...] = ()
    """Tools over the budget, which the model finds with ``search_mcp_tools`` (server-side names)."""
    prompts: tuple[str, ...] = ()
    """The server's prompts as slash commands with their arguments (``/mcp__s__p <a> [b]``)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.transport,
            "source": self.source,
            "status": self.status,
            "tools": list(self.tools),
            "error": self.error,
            "logFile": str(self.log_file) if self.log_file is not None else None,
            "leftOut": list(self.left_out),
            "deferred": list(self.deferred),
            "prompts": list(self.prompts),
        }


def format_statuses(statuses: Sequence[ServerStatus], notes: Sequence[str] = ()) -> str:
    """The servers as text, one block each: name, transport, source, status, tools or error;
    then ``notes`` (entries skipped, files not trusted, tools renamed)."""
    if not statuses and not notes:
        return "no MCP servers (docs/mcp.md: mcp.json, .mcp.json in a trusted project, --mcp-config)"
    lines: list[str] = []
    for s in statuses:
        waiting = " (tools as it listed them last time; it starts when first used)"
        lines.append(
            f"{s.name} ({s.transport}, {s.source}): {s.status}{waiting if s.status == 'stopped' and s.tools else ''}"
        )
        if s.error:
            lines.append(f"  error: {s.error}")
        if s.tools:
            lines.append(f"  tools: {', '.join(s.tools)}")
        lines.extend(f"  not offered: {reason}" for reason in s.left_out)
        if s.deferred:
            shown = ", ".join(s.deferred[:NAMED]) + (
                f" and {len(s.deferred) - NAMED} more" if len(s.deferred) > NAMED else ""
            )
            lines.append(f"  deferred: {len(s.deferred)} tools the model finds with {SEARCH_TOOL}: {shown}")
        if s.prompts:
            lines.append(f"  prompts: {', '.join(s.prompts)}")
        if s.log_file is not None and s.status == "failed":
            lines.append(f"  log: {s.log_file}")
    lines.extend(f"note: {note}" for note in notes)
    return "\n".join(lines)


class McpServers:
    """The servers of one session; see the module docstring.

    Args:
        configs: The servers (disabled ones are skipped; a later one replaces an earlier one of
            the same name).
        log_dir: Where stdio servers' stderr goes (``<log_dir>/<name>.log``); default: the
            ``mcp-logs`` folder of tether's data folder.
        notes: Lines about servers that are not here (skipped entries, an untrusted project
            file), listed by ``/mcp`` after the servers.
        cache_dir: Where servers' listings are kept between runs (``tether.mcp.tool_cache``);
            default: the ``mcp-tools`` folder of tether's data folder.
        max_tools: The servers' own tools a request declares, all servers together (the
            ``mcp.maxTools`` setting); ``None``: what the request has room for (``fit``; until
            it is called, ``DEFAULT_TOOL_LIMIT`` beside ``ASSUMED_OWN_TOOLS`` of the agent's own).
    """

    def __init__(
        self,
        configs: Sequence[McpServerConfig],
        *,
        log_dir: Path | None = None,
        notes: Sequence[str] = (),
        cache_dir: Path | None = None,
        max_tools: int | None = None,
    ) -> None:
        if log_dir is None or cache_dir is None:
            from tether.ai.paths import data_dir

            log_dir = log_dir or data_dir() / "mcp-logs"
            cache_dir = cache_dir or data_dir() / "mcp-tools"
        self.log_dir = log_dir
        self.cache_dir = cache_dir
        chosen = {c.name: c for c in configs if c.enabled}
        self.notify: Callable[[str], None] = lambda _text: None
        """Where servers' messages for the user go (a sign-in address); a session sets its own."""
        self._started = False
        self._tools: dict[str, tuple[list[Any], list[AgentTool]]] = {}
        self._shared: _Shared | None = None
        self.found: list[tuple[str, str]] = []
        """The (server, tool) pairs the model found with ``search_mcp_tools``, latest last: offered
        for the rest of the session (within the budget: the latest first)."""
        self.on_found: Callable[[], None] | None = None
        """Called when a search made tools available: the session gives them to the agent at once,
        so the run's next model call declares them (a bare ``Agent``: see docs/mcp.md)."""
        self._search: AgentTool | None = None
        self._given_notes = list(notes)
        self._resource_tools: list[AgentTool] | None = None
        self._renamed: dict[tuple[str, str], str] = {}
        """(server, tool) -> agent-side name, for the tools whose plain names collided."""
        self._kept: dict[str, tuple[str, Listing | None]] = {}
        """Each server's cache key and the listing kept under it (``None``: none)."""
        self._listed: set[str] = set()
        """The servers that started and listed their tools in this session."""
        self.connections = {name: self._connection(c) for name, c in chosen.items()}
        self._stopping: set[asyncio.Task[None]] = set()
        """Servers removed while the session runs, still being stopped (``close`` waits for them)."""
        self.max_tools = max_tools
        self._room = (DEFAULT_TOOL_LIMIT, ASSUMED_OWN_TOOLS)
        """What ``fit`` was told: the tools a request may declare, and how many the agent's own take
        (until it is called: ``ASSUMED_OWN_TOOLS``, so a bare ``Agent`` that never calls it fits too)."""

    @property
    def notes(self) -> list[str]:
        """The notes given, then ``renames``, ``repeats``, ``unlisted`` and ``left_out``."""
        return [*self._given_notes, *self.renames, *self.repeats, *self.unlisted, *self.left_out]

    @property
    def repeats(self) -> list[str]:
        """One line for each tool name a server listed more than once (a paginator repeating its
        pages): only its first listing is offered, and without a word the user would see fewer
        tools than the server lists, with nothing saying that a later listing (perhaps another
        description or schema) was dropped."""
        return [
            f"MCP server {c.name!r} lists the tool {tool!r} more than once: only the first is offered"
            for c in self.connections.values()
            for tool in c.repeated
        ]

    @property
    def refused(self) -> list[str]:
        """One line for each server that lists tools not offered for a defect of theirs (a
        schema providers refuse or one too large), naming them and why (a task-only tool,
        ``TASKS_ONLY``, is the server's design: ``/mcp`` lists it)."""
        lines: list[str] = []
        for c in self.connections.values():
            bad = [f"{t.name} ({t.left_out})" for t in c.tools if t.left_out not in (None, TASKS_ONLY)]
            if bad:
                more = f" and {len(bad) - NAMED} more (/mcp lists them)" if len(bad) > NAMED else ""
                lines.append(f"MCP server {c.name!r}: tools not offered: {'; '.join(bad[:NAMED])}{more}")
        return lines

    @property
    def unlisted(self) -> list[str]:
        """One line for each server whose prompts were not listed at its last start, and why."""
        return [
            f"MCP server {c.name!r}: its prompts are not offered ({c.unlisted_prompts}); its tools are"
            for c in self.connections.values()
            if c.unlisted_prompts is not None
        ]

    @property
    def renames(self) -> list[str]:
        """One line for each tool renamed to settle a name collision (known once servers listed
        their tools: ``tools()`` or ``statuses()`` works them out)."""
        return [
            f"MCP tool {tool!r} of server {server!r} is offered as {name} ({tool_name(server, tool)} "
            "would name another tool too)"
            for (server, tool), name in sorted(self._renamed.items())
        ]

    def __bool__(self) -> bool:
        return bool(self.connections)

    def start(self) -> None:
        """Start, once and in the background, every server whose listing is not kept (needs a
        running event loop); the others start when first used."""
        if self._started:
            return
        self._started = True
        _quiet_sdk_logging(self.log_dir)
        for name, connection in self.connections.items():
            if self._kept[name][1] is None:
                connection.start()

    async def listed(self, signal: AbortSignal | None = None) -> bool:
        """Start if needed, then wait until every server's tools are known: kept, or listed by a
        start that succeeded (or the start failed); ``False`` when ``signal`` aborted the wait."""
        self.start()
        return await self._wait(signal)

    def _connection(self, config: McpServerConfig) -> McpConnection:
        """A server's connection, with its tools from the listing kept for it, if any."""
        connection = McpConnection(config, log_dir=self.log_dir, notify=lambda text: self.notify(text))
        key = cache_key(config)
        kept = read_listing(self.cache_dir, key)
        self._kept[config.name] = (key, kept)
        if kept is not None:
            connection.tools = list(kept.tools)
            connection.has_resources = kept.has_resources
            connection.prompts = list(kept.prompts)
            connection.unlisted_prompts = kept.unlisted_prompts
        connection.settled = self._settled
        return connection

    def add(self, config: McpServerConfig) -> bool:
        """Another server (an extension's, ``source`` ``extension``), started at once when the
        others have been (unless its listing is kept: then when first used). It replaces an extension's server of its name (stopped); a server of
        the files with that name stays, and ``False`` says the new one was not added."""
        current = self.connections.get(config.name)
        if current is not None and current.config.source != "extension":
            return False
        if current is not None:
            self.remove(config.name)
        connection = self._connection(config)
        self.connections[config.name] = connection
        if self._started and self._kept[config.name][1] is None:
            connection.start()
        return True

    def remove(self, name: str) -> bool:
        """Stop an extension's server ``name`` for good (in the background; ``close`` waits for
        it) and offer its tools no more. ``False``: no such server of an extension here."""
        connection = self.connections.get(name)
        if connection is None or connection.config.source != "extension":
            return False
        del self.connections[name]
        self._tools.pop(name, None)
        self._listed.discard(name)
        connection.settled = lambda _connection: None  # its kept listing stays for its next run
        task = asyncio.get_running_loop().create_task(connection.close(), name=f"stop mcp server {name}")
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)
        return True

    async def ready(self, signal: AbortSignal | None = None) -> bool:
        """Start every server, kept listing or not, and wait for each to be ready or to have
        failed; ``False`` when ``signal`` aborted the wait first."""
        self.start()
        for connection in self.connections.values():
            if connection.status == "stopped":
                connection.start()
        return await self._wait(signal)

    async def _wait(self, signal: AbortSignal | None) -> bool:
        waits = asyncio.gather(*(c.wait_ready() for c in self.connections.values()))
        if signal is None:
            await waits
            return True
        aborted = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({waits, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
            # cancelled, the gather ends failed: read it, or asyncio prints a traceback for it
            waits.add_done_callback(lambda done: done.cancelled() or done.exception())
            waits.cancel()
        return not signal.aborted

    def tools(self) -> list[AgentTool]:
        """The agent tools of every server that listed its tools (a crashed one's too: its next
        call starts it again), within the tool budget (``tether.mcp.tool_budget``), and the
        resource tools (``tether.mcp.resources``) when a server has resources. The objects are
        reused while a server's offered tools stay the same."""
        shares = self._shares()
        names = self._names(shares)
        tools: list[AgentTool] = []
        for name, connection in self.connections.items():
            listed = connection.tools
            offered_here = shares[name].offered
            wanted = [names[(name, info.name)] for info in offered_here]
            cached = self._tools.get(name)
            if cached is None or cached[0] is not listed or [t.name for t in cached[1]] != wanted:
                cached = (
                    listed,
                    [agent_tool(connection, info, n) for info, n in zip(offered_here, wanted, strict=True)],
                )
                self._tools[name] = cached
            tools.extend(cached[1])
        if any(c.has_resources for c in self.connections.values()):
            if self._resource_tools is None:
                from tether.mcp.resources import resource_tools

                self._resource_tools = resource_tools(lambda: list(self.connections.values()))
            tools.extend(self._resource_tools)
        assert self._shared is not None
        if self._shared.deferring:
            if self._search is None:
                self._search = search_tool(self._deferred, self.find)
            over = {name: len(share.over) for name, share in self._shared.shares.items() if share.over}
            self._search.description = describe(sum(over.values()), list(over))
            tools.append(self._search)
        return tools

    def _deferred(self) -> list[Candidate]:
        """The tools deferred now, in configuration and listing order, with their plain names."""
        return [
            (server, info, tool_name(server, info.name))
            for server, share in self._shares().items()
            for info in share.over
        ]

    def find(self, pairs: Sequence[tuple[str, str]]) -> list[str]:
        """Offer the (server, tool) ``pairs`` from now on (``search_mcp_tools`` found them, or a
        resumed session's transcript says it did) and tell ``on_found``; their agent-side names."""
        for pair in pairs:
            if pair in self.found:
                self.found.remove(pair)
            self.found.append(pair)
        names = self._names(self._shares())
        if self.on_found is not None:
            self.on_found()
        return [names.get(pair, tool_name(*pair)) for pair in pairs]

    def fit(self, limit: int, taken: int) -> None:
        """Offer what a request has room for (``tether.mcp.tool_budget``): ``limit`` tools in all
        (``tool_limit`` of the model's API), ``taken`` of them by the agent's own tools; the
        resource tools are counted here. ``max_tools``, when set, wins."""
        self._room = (limit, taken)

    def _shares(self) -> dict[str, Share]:
        """Each server's share of the tool budget, worked out again only when a server came or
        went or listed its tools anew, or the budget changed (``fit``: a model of another API):
        ``tools()`` and then ``left_out`` run before every prompt,
        and matching a server's thousands of tools against its entry's patterns took milliseconds
        each time; or a search found tools. A server's ``tools`` list is replaced, never changed in place (by its start,
        its kept listing, a failed first start), so the same list objects mean the same shares
        whichever of those changed them, a start stopped between listing and settling too."""
        servers = [(c.config, c.tools) for c in self.connections.values()]
        room = budget(*self._room, any(c.has_resources for c in self.connections.values()), self.max_tools)
        was = self._shared
        found = tuple(self.found)
        if (
            was is not None
            and was.room == room
            and was.found == found
            and _same_servers(was.servers, servers)
        ):
            return was.shares
        split, deferring = shares(servers, room, found)
        self._shared = _Shared(servers, split, room, found, deferring)
        return split

    @property
    def left_out(self) -> list[str]:
        """One line for each server whose tools the budget deferred or left out (``tool_budget.note``)."""
        return list(self.budget_notes().values())

    def budget_notes(self) -> dict[tuple[str, str], str]:
        """``left_out``'s lines by server and the limit its tools went over: a session says each
        once, not again when a search changed how many are deferred (it does when the budget
        changed: a model of another API)."""
        found = self._shares()
        deferring = self._shared is not None and self._shared.deferring
        return {
            (name, share.limit): line
            for name, share in found.items()
            if (line := note(name, share, deferring)) is not None
        }

    def _names(self, shares: dict[str, Share]) -> dict[tuple[str, str], str]:
        """Every offered tool's agent-side name. Names that collide once made safe (``get.time``
        and ``get_time``, or servers ``a.b`` and ``a_b``) all get a hash of their exact names
        (``tool_name(..., unique=True)``), as pi does: the same names whatever the order, and
        neither tool is the one a model guessing ``mcp__c__get_time`` would reach by chance."""
        wanted: dict[str, list[tuple[str, str]]] = {}
        for server, share in shares.items():
            for info in share.offered:
                wanted.setdefault(tool_name(server, info.name), []).append((server, info.name))
        names: dict[tuple[str, str], str] = {}
        self._renamed = {}
        for plain, claims in wanted.items():
            if len(claims) == 1:
                names[claims[0]] = plain
                continue
            for claim in claims:
                names[claim] = self._renamed[claim] = tool_name(*claim, unique=True)
        return names

    def statuses(self) -> list[ServerStatus]:
        shares = self._shares()
        names = self._names(shares)
        deferring = self._shared is not None and self._shared.deferring

        def left_out(share: Share) -> tuple[str, ...]:
            over = () if deferring else (f"{i.name}: over the budget ({share.limit})" for i in share.over)
            return (*(f"{tool}: {why}" for tool, why in share.left_out.items()), *over)

        return [
            ServerStatus(
                name=c.name,
                transport=c.config.transport,
                source=c.config.source,
                status=c.status,
                tools=tuple(names[(c.name, t.name)] for t in shares[c.name].offered),
                error=c.error,
                log_file=c.log_file,
                left_out=left_out(shares[c.name]),
                deferred=tuple(i.name for i in shares[c.name].over) if deferring else (),
                prompts=tuple(f"/{tool_name(c.name, p.name)} {p.usage()}".rstrip() for p in c.prompts),
            )
            for c in self.connections.values()
        ]

    def prompts(self) -> dict[str, tuple[McpConnection, PromptInfo]]:
        """Every server's prompts by command name (``mcp__<server>__<prompt>``; the first server
        in configuration order keeps a name two would make)."""
        found: dict[str, tuple[McpConnection, PromptInfo]] = {}
        for connection in self.connections.values():
            for info in connection.prompts:
                found.setdefault(tool_name(connection.name, info.name), (connection, info))
        return found

    async def run_prompt(self, line: str) -> list[TextContent | ImageContent]:
        """The content of the MCP prompt ``line`` calls (``/mcp__server__prompt args``), for the
        user's message; ``ToolError`` (one line) for an unknown prompt, arguments that do not fit,
        or a server that fails."""
        name, _, rest = line.removeprefix("/").partition(" ")
        found = self.prompts().get(name)
        if found is None:
            known = ", ".join(f"/{n}" for n in self.prompts()) or "none"
            raise ToolError(f"/{name}: no such MCP prompt (MCP prompts: {known})")
        connection, info = found
        arguments = parse_arguments(info, rest)
        result = await connection.request(
            f"getting prompt {info.name!r}", lambda client: client.get_prompt(info.name, arguments or None)
        )
        return prompt_content(result)

    async def close(self) -> None:
        """Stop every server (in parallel) for good and wait for them to exit, removed ones too."""
        await asyncio.gather(*(c.close() for c in self.connections.values()), *self._stopping)

    def _settled(self, connection: McpConnection) -> None:
        """A start ended: keep what a ready server listed (when it differs from what was kept);
        forget the listing of one that failed, so the next run waits for it and reports it, and
        withdraw its kept tools unless it listed them itself in this session (then, as for a
        server that crashed, a call starts it again)."""
        key, kept = self._kept[connection.name]
        if connection.status == "failed":
            if kept is not None:
                forget_listing(self.cache_dir, key)
                self._kept[connection.name] = (key, None)
            if connection.name not in self._listed:  # as a server that failed its first start: no tools
                connection.tools, connection.prompts, connection.has_resources = [], [], False
                connection.unlisted_prompts = None
            return
        self._listed.add(connection.name)
        listing = Listing(
            tuple(connection.tools),
            connection.has_resources,
            tuple(connection.prompts),
            connection.unlisted_prompts,
        )
        if listing != kept:
            write_listing(self.cache_dir, key, listing)
            self._kept[connection.name] = (key, listing)

    async def __aenter__(self) -> McpServers:
        await self.ready()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()


@dataclass(frozen=True, slots=True)
class _Shared:
    """The budget's shares (``McpServers._shares``) and what they were worked out from."""

    servers: list[tuple[McpServerConfig, list[ToolInfo]]]
    shares: dict[str, Share]
    room: int
    found: tuple[tuple[str, str], ...]
    deferring: bool


def _same_servers(
    were: list[tuple[McpServerConfig, list[ToolInfo]]], now: list[tuple[McpServerConfig, list[ToolInfo]]]
) -> bool:
    return len(were) == len(now) and all(
        config is was_config and tools is were_tools
        for (was_config, were_tools), (config, tools) in zip(were, now, strict=True)
    )


def _quiet_sdk_logging(log_dir: Path) -> None:
    """The SDK logs a server's protocol garbage and transport trouble through ``logging``; with no
    handler configured Python would print those warnings on the terminal (or over an RPC/ACP
    stdout's neighbour, stderr). They go to ``<log_dir>/sdk.log`` instead, unless the program
    configured the ``mcp`` logger itself; past ``MAX_LOG_BYTES`` it starts afresh (one older
    file kept), as a server's own log does: a server printing garbage on stdout is a warning a
    line."""
    import logging
    import logging.handlers

    logger = logging.getLogger("mcp")
    if logger.handlers:
        return
    make_own_folder(log_dir)
    handler = logging.handlers.RotatingFileHandler(
        log_dir / "sdk.log", maxBytes=MAX_LOG_BYTES, backupCount=1, encoding="utf-8", delay=True
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.propagate = False
