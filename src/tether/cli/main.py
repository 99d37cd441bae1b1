"""The ``tether`` command.

Start-up time is a feature of a CLI, so this module imports almost nothing: ``--version`` is
answered before click is even imported, and each mode imports what it needs when it runs.
``tether [options] [prompt...]`` runs the agent; a first word naming a subcommand (``models``,
``sessions``, ``schema``, ``demo``, ``mcp``, ``extensions``, ``worker``, ``submit``) runs that
instead, with the options written before it that it has (``placed_options``).
"""

from __future__ import annotations

import errno
import gc
import sys

from tether._version import __version__
from tether.errors import TetherError

TYPE_CHECKING = False  # not `from typing import ...`: typing alone costs --version a third of its time
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    import click

SUBCOMMANDS = (
    "models",
    "sessions",
    "schema",
    "demo",
    "mcp",
    "extensions",
    "worker",
    "submit",
    "runs",
    "serve",
)

_DEVICE_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)
"""A write that failed for want of room, as stdout on a full disk or /dev/full does."""

DEMO_QUESTION = "In two sentences: what is a large language model?"

DATABASE_HELP = (
    "Session store: postgresql://… or a SQLite file (default: $TETHER_DATABASE_URL, "
    'the "database" setting, else sessions.db in the data dir).'
)


MOVABLE = frozenset(
    ("--database", "--model", "-y", "--yes", "-e", "--extension", "--no-extensions", "--mcp-config")
)
"""The root options that may go to a subcommand written after them (``placed_options``): each
means there what it means to a run (the session store, the model, approve without asking, the
extensions and MCP servers to load). Not ``--name`` (a session's name; ``worker``'s is the
worker's id), ``--session`` (a session to open; ``runs list``'s filters) or ``--follow``."""

LONG_LIVED = ("serve", "worker")
"""Subcommands that serve for hours, many sessions at once: started like a run (below)."""


def command() -> None:
    """The ``tether`` command as a process runs it (the console script, ``python -m tether.cli``):
    ``main``, with two settings of Python's cyclic collector that only a process of its own may
    make, not ``main``, which tests and programs call in theirs.

    - A run, ``serve`` and ``worker`` start with the collector paused (``start_up_done`` in
      ``cli/collector.py`` resumes it once the session core, the server or the worker is
      built): loading ~250 modules would set off ~50 collections that find nothing, as
      modules, classes and functions live as long as the process. What the start-up made is
      then frozen (``gc.freeze``): later collections, an hour of them in an interactive
      session, need not examine it again. ``serve`` and ``worker``, with many sessions in
      flight, also raise the young threshold (``tether/gc_tuning.py``).
    - At exit, what is left is frozen too: the interpreter's shutdown would collect every object,
      several times, before freeing them, to free memory that the exit returns anyway.

    Together 11% of a ``tether -p`` run's instructions (444 -> 395 M; stored, 480 -> 428 M).
    """
    args = placed_options(sys.argv[1:])
    if not args or args[0] not in SUBCOMMANDS or args[0] in LONG_LIVED:
        gc.disable()  # the other subcommands keep the collector as it is
    try:
        _run(args)
    finally:
        gc.freeze()


def main(argv: Sequence[str] | None = None) -> None:
    _run(placed_options(list(sys.argv[1:] if argv is None else argv)))


def _run(args: list[str]) -> None:
    """``main`` with the options already placed (``command`` places them once, to look at the
    subcommand first)."""
    from tether.cli.stdout import fill_closed_standard_streams

    fill_closed_standard_streams()
    try:
        _dispatch(args)
    except OSError as exc:
        if exc.filename is not None or exc.errno not in _DEVICE_FULL:
            raise
        _quiet_stdout()
        sys.stderr.write(
            f"tether: cannot write the output: {exc.strerror}; free space on its device "
            "or send it elsewhere\n"
        )
        sys.exit(1)


def _dispatch(args: list[str]) -> None:
    if args in (["--version"], ["-V"]):
        sys.stdout.write(f"tether {__version__}\n")
        return
    if args and args[0] in SUBCOMMANDS:
        try:
            subcommands().main(args, prog_name="tether")
        except TetherError as exc:  # each message says what and where: one line, no traceback
            sys.stderr.write(f"tether: {exc}\n")
            sys.exit(1)
    else:
        root_command().main(args, prog_name="tether")


def placed_options(args: list[str]) -> list[str]:
    """``args`` with the options before a subcommand moved to it: ``tether --database X sessions``
    is ``tether sessions --database X``, as ``claude --model M mcp`` and ``codex -m M exec`` take
    a root option before a subcommand; it was the prompt "sessions", run against that database.

    Each option goes after the first command of the subcommand's path (``sessions``, then its
    ``export``) that has it under the same spelling (``-y`` to ``sessions delete``). If any option
    is not in ``MOVABLE`` (``-p``, ``--mode``, ``--name``) or none of theirs, or ``--`` comes
    first, nothing moves and the words are the prompt, as before: ``tether -p models`` asks the
    model, ``tether --name N worker`` names the session of the prompt "worker". Costs nothing
    unless the first word is an option and a later one names a subcommand."""
    if not args or not args[0].startswith("-") or not any(word in SUBCOMMANDS for word in args):
        return args
    import click

    root = {name: param for param in root_command().params for name in _names(param)}
    rest = list(args)
    moved: list[tuple[str, list[str]]] = []  # (the option as spelt, its words)
    while rest and rest[0].startswith("-") and rest[0] not in ("-", "--"):
        word = rest.pop(0)
        name = word.partition("=")[0] if word.startswith("--") else word[:2]
        if name not in MOVABLE:
            return args
        param = root[name]
        if _takes_value(param):
            if word == name:
                if not rest:
                    return args
                moved.append((name, [word, rest.pop(0)]))
            else:
                moved.append((name, [word]))  # --database=X, -eX
        else:
            if not word.startswith("--") and len(word) > 2:  # -yc: -y, then -c
                rest.insert(0, "-" + word[2:])
                word = name
            moved.append((name, [word]))
    if not rest or rest[0] not in SUBCOMMANDS:
        return args
    command: click.Command = subcommands().commands[rest[0]]
    path = [(command, 1)]  # each command of the path, and where its options go in ``rest``
    while isinstance(command, click.Group) and len(rest) > path[-1][1]:
        following = command.commands.get(rest[path[-1][1]])
        if following is None:
            break
        command = following
        path.append((command, path[-1][1] + 1))
    inserted: dict[int, list[str]] = {}
    for name, words in moved:
        at = next(
            (
                at
                for command, at in path
                for param in command.params
                if name in _names(param) and _takes_value(param) == _takes_value(root[name])
            ),
            None,
        )
        if at is None:
            return args
        inserted.setdefault(at, []).extend(words)
    placed: list[str] = []
    for at in range(len(rest) + 1):
        placed += inserted.get(at, [])
        placed += rest[at : at + 1]
    return placed


def _names(param: click.Parameter) -> list[str]:
    return [*param.opts, *param.secondary_opts] if param.param_type_name == "option" else []


def _takes_value(param: click.Parameter) -> bool:
    import click

    return not (isinstance(param, click.Option) and (param.is_flag or param.count))


def _quiet_stdout() -> None:
    """If stdout still cannot take what it holds, point it at /dev/null: the interpreter's own
    flush at exit would otherwise add a second complaint after ours."""
    import os

    try:
        sys.stdout.flush()
    except OSError:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def root_command() -> click.Command:
    """``tether [options] [prompt...]``: built on call so that click loads only when needed."""
    import click

    from tether.cli.options import RunOptions

    @click.command(
        context_settings={"help_option_names": ["-h", "--help"]},
        epilog="Subcommands: tether models | sessions | schema | demo | mcp | extensions | worker | submit | runs (each with --help).",
    )
    @click.argument("prompt", nargs=-1)
    @click.option(
        "-p", "--print", "print_mode", is_flag=True, help="Run the prompt, print the final answer, exit."
    )
    @click.option(
        "--mode",
        type=click.Choice(["text", "json", "rpc", "acp"]),
        default="text",
        help="json: every agent event as one JSON line on stdout; rpc: the RPC protocol on stdin/stdout "
        "(docs/rpc.md); acp: serve the Agent Client Protocol on stdio (for editors, see docs/acp.md).",
    )
    @click.option(
        "--model",
        metavar="PATTERN",
        help="Model: provider/id, an id, or part of one (sonnet); :LEVEL sets thinking (opus:high).",
    )
    @click.option("--provider", metavar="NAME", help="Match --model among this provider's models only.")
    @click.option(
        "--api-key",
        metavar="KEY",
        help="API key for the chosen model's provider, this run only (never stored or shown to tools).",
    )
    @click.option(
        "--models", metavar="A,B", help="Models Ctrl-P cycles through (patterns or globs, :LEVEL allowed)."
    )
    @click.option(
        "--thinking",
        type=click.Choice(["off", "minimal", "low", "medium", "high", "xhigh", "max"]),
        help="Reasoning level (clamped to what the model supports).",
    )
    @click.option(
        "-c", "--continue", "continue_", is_flag=True, help="Continue this directory's latest session."
    )
    @click.option(
        "-r",
        "--resume",
        is_flag=False,
        flag_value="",
        default=None,
        metavar="[ID]",
        help="Resume a session by id; without an id, pick one from a list.",
    )
    @click.option("--session", "session_id", metavar="ID", help="Open the session with this id.")
    @click.option("--no-session", is_flag=True, help="Keep nothing on disk.")
    @click.option("-n", "--name", metavar="NAME", help="Name the session (as /name does).")
    @click.option(
        "--follow",
        is_flag=True,
        help="With --mode rpc --session ID: watch that session read-only while another process runs it.",
    )
    @click.option("--tools", metavar="A,B", help="Comma-separated tool names ('' for none).")
    @click.option("--system-prompt", metavar="TEXT", help="Replace the built-in system prompt.")
    @click.option(
        "--append-system-prompt",
        metavar="TEXT|FILE",
        multiple=True,
        help="Add a text (or a file's text) at the end of the system prompt; repeatable.",
    )
    @click.option(
        "--no-context-files", is_flag=True, help="Leave out AGENTS.md/CLAUDE.md (global and project)."
    )
    @click.option(
        "--cwd",
        type=click.Path(exists=True, file_okay=False),
        help="Working directory (the workspace the tools may touch).",
    )
    @click.option(
        "-y",
        "--yes",
        is_flag=True,
        help="Approve every tool call without asking (the workspace stays as it is: see --allow-outside).",
    )
    @click.option(
        "--allow-outside",
        is_flag=True,
        help="Let tools use paths outside the workspace (writes there still need approval).",
    )
    @click.option(
        "--sandbox",
        type=click.Choice(["read-only", "workspace-write", "off"]),
        help="Run bash and !commands confined: read-only, workspace-write (the default setting) or off.",
    )
    @click.option("--sandbox-network", is_flag=True, help="Let sandboxed commands use the network.")
    @click.option(
        "--sandbox-allow-host",
        multiple=True,
        metavar="HOST",
        help=(
            "Let sandboxed commands reach HOST (*.example.com: its subdomains) over HTTP(S), ports "
            "443 and 80 (HOST:PORT: that port); repeatable."
        ),
    )
    @click.option(
        "--export",
        metavar="FILE",
        help="Write a session file (or stored session id) as HTML and exit; output: first argument.",
    )
    @click.option("--database", metavar="URL", help=DATABASE_HELP)
    @click.option(
        "--mcp-config",
        type=click.Path(exists=True, dir_okay=False),
        help="An mcpServers JSON file: MCP servers on top of the user's and the project's.",
    )
    @click.option("--no-mcp", is_flag=True, help="Start no MCP server from configuration files.")
    @click.option(
        "-e",
        "--extension",
        multiple=True,
        type=click.Path(exists=True),
        help="Load this extension (a .py file or a package folder) for this run; repeatable.",
    )
    @click.option(
        "--no-extensions",
        is_flag=True,
        help="Load no extension from folders or installed packages (-e still loads).",
    )
    @click.option(
        "--flag",
        multiple=True,
        metavar="NAME[=VALUE]",
        help="Set a flag an extension registered (its register_flag); repeatable.",
    )
    @click.version_option(__version__, "-V", "--version", prog_name="tether", message="%(prog)s %(version)s")
    def root(prompt: tuple[str, ...], **kwargs: object) -> None:
        """tether: a coding agent. Interactive by default; -p or --mode json for scripts."""
        from tether.cli.run import run
        from tether.cli.sessions_cmd import use_database

        database = kwargs.pop("database")
        options = RunOptions.from_click(prompt, kwargs)
        use_database(database if isinstance(database, str) else None, options.cwd)
        sys.exit(run(options))

    return root


def subcommands() -> click.Group:
    """``tether models | sessions | schema | demo | mcp list``."""
    import click

    @click.group(context_settings={"help_option_names": ["-h", "--help"]})
    def group() -> None:
        """tether subcommands."""

    @group.command()
    @click.option("--all", "show_all", is_flag=True, help="Also list models without a key.")
    def models(show_all: bool) -> None:
        """List usable models: a key is present, or a local server answers."""
        from tether.cli.listing import print_models

        sys.exit(print_models(show_all=show_all))

    @group.group(invoke_without_command=True)
    @click.option("--all", "show_all", is_flag=True, help="Sessions of every directory, not only this one.")
    @click.option("--database", metavar="URL", help=DATABASE_HELP)
    @click.pass_context
    def sessions(ctx: click.Context, show_all: bool, database: str | None) -> None:
        """List stored sessions, newest first (or follow, copy, import or export them: see below)."""
        from tether.cli.sessions_cmd import use_database

        use_database(database)
        if ctx.invoked_subcommand is None:
            from tether.cli.listing import print_sessions

            sys.exit(print_sessions(show_all=show_all))

    @sessions.command(name="list")
    @click.option("--all", "show_all", is_flag=True, help="Sessions of every directory, not only this one.")
    @click.pass_context
    def list_sessions(ctx: click.Context, show_all: bool) -> None:
        """List stored sessions, newest first (as tether sessions alone does)."""
        # spelt as mcp list and runs list are: what a user of those (or of pi, Claude Code) types
        from tether.cli.listing import print_sessions

        parent = ctx.parent.params if ctx.parent is not None else {}
        sys.exit(print_sessions(show_all=show_all or bool(parent.get("show_all"))))

    @sessions.command()
    @click.argument("session_id")
    @click.option("--json", "as_json", is_flag=True, help="Each entry as one JSON line, as stored.")
    @click.option("--new", "new_only", is_flag=True, help="Skip the entries already there.")
    def follow(session_id: str, as_json: bool, new_only: bool) -> None:
        """Print a session's entries as they are written, by this host or another (Ctrl-C stops)."""
        from tether.cli.sessions_cmd import follow_session

        sys.exit(follow_session(session_id, as_json=as_json, history=not new_only))

    @sessions.command()
    @click.argument("session_ids", nargs=-1, metavar="[ID]...")
    @click.option("--to", "target", required=True, metavar="URL", help="The store to copy into.")
    def copy(session_ids: tuple[str, ...], target: str) -> None:
        """Copy sessions (default: all) into another store, ids and trees intact; safe to re-run."""
        from tether.cli.sessions_cmd import copy_to

        sys.exit(copy_to(target, session_ids))

    @sessions.command(name="import")
    @click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
    def import_sessions(paths: tuple[str, ...]) -> None:
        """Import session files: tether exports, or pi session files (JSONL, format v1-v3)."""
        from tether.cli.session_files import import_files

        sys.exit(import_files(list(paths)))

    @sessions.command(name="export")
    @click.argument("session_id")
    @click.option(
        "--format",
        "kind",
        type=click.Choice(["tether", "pi", "html"]),
        default="tether",
        show_default=True,
        help="tether's JSONL export, a pi session file pi opens and continues, or the HTML page "
        "(as --export and /export write it).",
    )
    @click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False),
        help="Where to write (default: ./<id>.jsonl, ./<id>.html).",
    )
    def export_session(session_id: str, kind: str, output: str | None) -> None:
        """Export a stored session (every branch) to a JSONL file or an HTML page."""
        from tether.cli.session_files import export_file

        sys.exit(export_file(session_id, kind, output))

    @sessions.command(name="delete")
    @click.argument("session_id")
    @click.option("-y", "--yes", "-f", "--force", "yes", is_flag=True, help="Delete without asking.")
    def delete_session(session_id: str, yes: bool) -> None:
        """Delete a stored session (asks first unless --yes); refused while another process runs it."""
        from tether.cli.session_files import delete_session

        sys.exit(delete_session(session_id, yes=yes))

    @group.command()
    @click.option("--summary", is_flag=True, help="Print counts of the bundled types instead.")
    def schema(summary: bool) -> None:
        """Print the JSON Schema bundle: the wire types and the RPC protocol."""
        from tether.rpc.schema import bundle_json
        from tether.wire.schema import summary as bundle_summary

        sys.stdout.write(bundle_summary() + "\n" if summary else bundle_json())

    @group.command()
    @click.option("--model", metavar="PROVIDER/ID", help="Model to use instead of the embedded default.")
    def demo(model: str | None) -> None:
        """Ask the default model a real question and stream the answer."""
        from tether.cli.run import run_demo

        sys.exit(run_demo(DEMO_QUESTION, model))

    @group.group()
    def mcp() -> None:
        """MCP servers (docs/mcp.md)."""

    @mcp.command("list")
    @click.option("--json", "as_json", is_flag=True, help="One JSON document instead of text.")
    @click.option(
        "--mcp-config", type=click.Path(exists=True, dir_okay=False), help="An extra mcpServers file."
    )
    def mcp_list(as_json: bool, mcp_config: str | None) -> None:
        """Start this folder's MCP servers, list their status and tools, stop them."""
        from pathlib import Path

        from tether.cli.listing import print_mcp_servers

        sys.exit(print_mcp_servers(Path.cwd(), Path(mcp_config) if mcp_config else None, as_json=as_json))

    @mcp.command("logout")
    @click.argument("server")
    def mcp_logout(server: str) -> None:
        """Forget SERVER's OAuth sign-in (tokens and registered client): the next start signs in again."""
        from tether.cli.listing import sign_out_of_mcp_server

        sys.exit(sign_out_of_mcp_server(server))

    @group.group()
    def extensions() -> None:
        """Python extensions (docs/extensions.md)."""

    @extensions.command("list")
    @click.option(
        "-e", "--extension", multiple=True, type=click.Path(exists=True), help="Also load this one."
    )
    @click.option("--no-extensions", is_flag=True, help="Only the -e ones: no folders, no packages.")
    def extensions_list(extension: tuple[str, ...], no_extensions: bool) -> None:
        """Load this folder's extensions and list what each registers (and what failed)."""
        from pathlib import Path

        from tether.cli.extensions_cmd import print_extensions

        paths = tuple(Path(p).resolve() for p in extension)
        sys.exit(print_extensions(Path.cwd(), paths, discover=not no_extensions))

    durable_database = click.option(
        "--durable-database",
        metavar="URL",
        help="DBOS system database: postgresql://… or sqlite:///… (default: the durable.database "
        "setting, else the session store's PostgreSQL database, else durable.sqlite in the data dir).",
    )

    count = click.IntRange(min=0, max=2**31 - 1)  # what the settings take (settings.MAX_COUNT)

    @group.command()
    @click.option(
        "--name", default="", help="This worker's id; a restart under the same name resumes its runs."
    )
    @click.option("--concurrency", type=count, help="Runs per worker at once (0: no limit).")
    @click.option("--global-concurrency", type=count, help="Runs over all workers (0: no limit).")
    @click.option(
        "--setup", metavar="MODULE:FUNCTION", help="Called with each run's AgentSession before it runs."
    )
    @click.option("--model", metavar="PROVIDER/ID", help="Model of every run (default: the session's).")
    @click.option("-y", "--yes", is_flag=True, help="Approve every tool call (nobody can answer a question).")
    @click.option("-v", "--verbose", is_flag=True, help="Log each failed run's traceback too.")
    @click.option("--database", metavar="URL", help=DATABASE_HELP)
    @durable_database
    def worker(database: str | None, **flags: Any) -> None:
        """Run submitted agent runs durably (docs/durable.md): a crashed run resumes on a live worker."""
        from tether.cli.durable_cmd import run_worker
        from tether.cli.sessions_cmd import use_database

        use_database(database)
        sys.exit(run_worker(**flags))

    @group.command()
    @click.argument("session_id")
    @click.argument("prompt")
    @click.option(
        "-f", "--follow", is_flag=True, help="Print the run's events as they happen; wait for its end."
    )
    @click.option("--json", "as_json", is_flag=True, help="With --follow: each event as one JSON line.")
    @click.option(
        "--key", help="Idempotency key: submitting again with the same key returns the first run's id."
    )
    @click.option(
        "--timeout",
        type=click.FloatRange(min=0),
        help="Cancel the run this many seconds after it starts (default: durable.runTimeoutSeconds).",
    )
    @click.option("--database", metavar="URL", help=DATABASE_HELP)
    @durable_database
    def submit(session_id: str, prompt: str, database: str | None, **flags: Any) -> None:
        """Queue a durable run of PROMPT on a stored session of this folder (or one inside it);
        prints the run id (docs/durable.md)."""
        from tether.cli.durable_cmd import submit_run
        from tether.cli.sessions_cmd import use_database

        use_database(database)
        sys.exit(submit_run(session_id, prompt, **flags))

    @group.command()
    @click.option(
        "--host",
        default="127.0.0.1",
        show_default=True,
        help="Address to listen on; any but loopback needs a token.",
    )
    @click.option(
        "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0: any free port."
    )
    @click.option(
        "--token", help='Bearer token every API request must carry (default: the "serve.token" setting).'
    )
    @click.option("--read-only-token", help="A second token that may only read and follow sessions.")
    @click.option(
        "--cors-origin",
        "cors_origins",
        multiple=True,
        metavar="ORIGIN",
        help="Allow this origin (repeatable).",
    )
    @click.option("--model", metavar="PROVIDER/ID", help="Model of the sessions this server starts.")
    @click.option(
        "--prompt-rate",
        type=count,
        default=30,
        show_default=True,
        help="Prompts a minute per token (0: no limit).",
    )
    @click.option(
        "-y",
        "--yes",
        is_flag=True,
        help="Approve every tool call (else the page and the API answer approvals).",
    )
    @click.option("--database", metavar="URL", help=DATABASE_HELP)
    def serve(database: str | None, **flags: Any) -> None:
        """Serve the HTTP API and web page over the stored sessions (docs/serve.md)."""
        from tether.cli.serve_cmd import run_server
        from tether.cli.sessions_cmd import use_database

        use_database(database)
        sys.exit(run_server(**flags))

    as_json = click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")

    @group.group()
    def runs() -> None:
        """Durable runs: list, show, cancel, resume, retry, prune (docs/durable.md)."""

    def runs_command(action: str, database: str | None, **flags: Any) -> None:
        from tether.cli.runs_cmd import run_command
        from tether.cli.sessions_cmd import use_database

        use_database(database)
        sys.exit(run_command(action, **flags))

    @runs.command("list")
    @click.option(
        "--status",
        type=click.Choice(["ENQUEUED", "PENDING", "SUCCESS", "ERROR", "CANCELLED"], case_sensitive=False),
    )
    @click.option("--session", "session", metavar="ID", help="Only the runs of this session.")
    @click.option("--worker", metavar="NAME", help="Only the runs of this worker.")
    @click.option("--newer-than", metavar="AGE", help="Submitted within AGE (90s, 15m, 2h, 7d).")
    @click.option("--older-than", metavar="AGE", help="Submitted more than AGE ago.")
    @click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True)
    @as_json
    @click.option("--database", metavar="URL", help=DATABASE_HELP)
    @durable_database
    def runs_list(status: str | None, newer_than: str | None, older_than: str | None, **flags: Any) -> None:
        """List runs, newest first."""
        from tether.cli.runs_cmd import parse_age

        ages = {
            "newer_than": parse_age(newer_than, "--newer-than") if newer_than else None,
            "older_than": parse_age(older_than, "--older-than") if older_than else None,
        }
        runs_command("list", status=status.upper() if status else None, **ages, **flags)

    for action, summary in (
        ("show", "A run's steps with their timings, its tokens, cost and error."),
        ("cancel", "Cancel a run: its model call and tool stop, the session stays consistent."),
        ("resume", "Resume a cancelled or failed run from its last checkpoint."),
        ("retry", "Run a run's prompt again on its session, as a new run (prints its id)."),
    ):

        def one_run(run_id: str, *, _action: str = action, **flags: Any) -> None:
            runs_command(_action, run_id=run_id, **flags)

        one_run.__doc__ = summary
        command = durable_database(one_run)
        command = click.option("--database", metavar="URL", help=DATABASE_HELP)(command)
        command = as_json(command)
        command = click.argument("run_id")(command)
        runs.command(action)(command)

    @runs.command("prune")
    @click.option(
        "--older-than", metavar="AGE", help="Finished more than AGE ago (default: durable.keepRunsDays)."
    )
    @as_json
    @click.option("--database", metavar="URL", help=DATABASE_HELP)
    @durable_database
    def runs_prune(older_than: str | None, **flags: Any) -> None:
        """Delete finished runs' records (steps, events); transcripts stay in the session store."""
        from tether.cli.runs_cmd import parse_age

        days = parse_age(older_than, "--older-than") / 86400 if older_than else None
        runs_command("prune", older_than_days=days, **flags)

    return group
