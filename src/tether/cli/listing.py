"""``tether models`` and ``tether sessions``: plain aligned tables on stdout."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tether.session.stats import SessionRow, ago

if TYPE_CHECKING:
    from tether.wire import ModelInfo


def print_models(*, show_all: bool) -> int:
    """Usable models (a key is set, or a local server serves them), the embedded one, and with
    ``show_all`` every other known model too."""
    import asyncio

    from tether.ai.local_servers import usable_models
    from tether.ai.models import get_provider_info, list_models, models_file_problems

    usable = asyncio.run(usable_models())
    for problem in models_file_problems():  # the entries left out, said where the list cannot
        sys.stderr.write(f"note: {problem}\n")
    rows: list[tuple[str, str, str, str]] = []
    for model in usable:
        access = "local server" if get_provider_info(model["provider"]).local else "key"
        rows.append(_row(model, access))
    if show_all:
        seen = {(m["provider"], m["id"]) for m in usable}
        rows += [_row(m, "no key") for m in list_models() if (m["provider"], m["id"]) not in seen]
    embedded = _embedded_model()
    if embedded is not None:
        rows.append((embedded, "embedded", "4k", "smoke test only"))
    if not rows:
        sys.stderr.write(
            "No usable models: set an API key (e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY), start a local "
            "server (Ollama, llama.cpp), or install the embedded model with `make demo`. "
            "`tether models --all` lists every known model.\n"
        )
        return 0
    _table(["model", "access", "context", ""], rows)
    return 0


def _row(model: ModelInfo, access: str) -> tuple[str, str, str, str]:
    return (
        f"{model['provider']}/{model['id']}",
        access,
        _window(model),
        "thinking" if model["reasoning"] else "",
    )


def _window(model: ModelInfo) -> str:
    window = model.get("contextWindow")
    return f"{window // 1000}k" if window else "-"


def _embedded_model() -> str | None:
    """``local:`` when llama-cpp-python and the SmolLM2 file are both installed."""
    from tether.ai.providers.local import default_model_path, is_available

    return "local:" if is_available() and default_model_path() is not None else None


def session_rows(*, cwd: Path | None, limit: int | None = None) -> list[SessionRow]:
    from tether.session import SessionManager

    sessions = SessionManager()
    try:
        records = sessions.list(cwd=str(cwd) if cwd is not None else None, limit=limit, empty=False)
    finally:
        sessions.close()
    return [SessionRow.of(r) for r in records]


def print_sessions(*, show_all: bool) -> int:
    cwd = None if show_all else Path.cwd()
    rows = session_rows(cwd=cwd)
    if not rows:
        where = "" if show_all else f" in {cwd} (--all for every directory)"
        sys.stderr.write(f"No sessions{where}.\n")
        return 0
    table = [
        (r.id, ago(r.updated), str(r.messages), f"${r.cost:.4f}", r.title, *((r.cwd,) if show_all else ()))
        for r in rows
    ]
    _table(["id", "updated", "msgs", "cost", "title", *(("cwd",) if show_all else ())], table)
    return 0


def print_mcp_servers(cwd: Path, config_file: Path | None, *, as_json: bool) -> int:
    """``tether mcp list``: start the servers the CLI would start here, report, stop them.

    The listing goes to stdout (as text, or one JSON document with the notes in it); each note
    (an entry skipped for a mistake, a project file not trusted, a tool renamed or left out) is
    also a ``note:`` line on stderr, as a run prints them. A bad entry is skipped and reported,
    never fatal to the rest, so the exit status says whether there was a listing: 0 when there
    was, failed servers included (their status and error are in it, as Claude Code's ``claude
    mcp list`` shows "Failed to connect" in its listing); 1 only when the command
    failed (an MCP file that cannot be read at all) or every server it found was skipped, so
    nothing could be listed. What a server chose (its tools' names, its error messages) is
    written with its control characters escaped (``tether.cli.terminal_text``): ``\\x1b[2J``
    cleared the listing, U+202E reversed the rest of a line."""
    import asyncio
    import json

    from tether.ai.paths import config_dir
    from tether.cli.terminal_text import EscapingWriter, visible
    from tether.mcp import McpServers, format_statuses
    from tether.session.factory import SetupError, load_mcp_files
    from tether.session.settings import SettingsError, load_settings

    problems: list[str] = []
    try:
        configs = load_mcp_files(cwd, config_file, problems=problems)
        max_tools = load_settings(config_dir(), cwd).mcp_max_tools  # the budget a run here has
    except (SetupError, SettingsError) as exc:
        sys.stderr.write(f"tether: {exc}\n")
        return 1
    notes: list[str] = []

    async def report() -> str:
        servers = McpServers(configs, notes=problems, max_tools=max_tools)
        servers.notify = lambda text: print(text, file=EscapingWriter(sys.stderr))  # a sign-in address
        async with servers:
            statuses = servers.statuses()
            notes.extend(servers.notes)
        if as_json:
            return json.dumps({"servers": [s.as_json() for s in statuses], "notes": notes}, indent=2)
        return format_statuses(statuses)

    sys.stdout.write(visible(asyncio.run(report())) + "\n")  # JSON escapes them itself
    for note in notes:
        sys.stderr.write(visible(f"note: {note}\n"))
    return 1 if problems and not any(c.enabled for c in configs) else 0


def sign_out_of_mcp_server(name: str) -> int:
    """``tether mcp logout NAME``: forget the server's stored sign-in (``tether.mcp.oauth``).
    Any name is taken, configured here or not (a server removed from ``mcp.json`` may have left
    its tokens behind); 1 when nothing was stored under it."""
    from tether.ai.paths import data_dir
    from tether.mcp.oauth import sign_out

    removed = sign_out(data_dir(), name)
    if removed is None:
        sys.stderr.write(f"tether: no stored MCP sign-in for {name}\n")
        return 1
    sys.stdout.write(f"signed out of {name}: removed {removed}\n")
    return 0


def _table(header: list[str], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=False)]
    for row in (tuple(header), *rows):
        line = "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False))
        sys.stdout.write(line.rstrip() + "\n")
