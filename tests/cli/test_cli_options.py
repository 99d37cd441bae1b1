"""The flags fill ``SessionOptions`` by name: each field of the record has a flag that sets it, so
a choice added to the record without its flag (or a flag that lands on another field) fails here.
Parsed by the real ``tether`` command (click), without running it."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from tether.cli.main import root_command
from tether.cli.options import RunOptions
from tether.session.options import SessionOptions


def parse(*args: str) -> RunOptions:
    context = root_command().make_context("tether", list(args))
    words = context.params.pop("prompt")
    context.params.pop("database")
    return RunOptions.from_click(words, context.params)


def test_every_session_option_has_a_flag_that_sets_it(tmp_path: Path) -> None:
    mcp = tmp_path / "mcp.json"
    mcp.write_text("{}")
    extension = tmp_path / "ext.py"
    extension.write_text("")
    flagged = parse(
        *("--model", "m", "--provider", "p", "--api-key", "k", "--models", "a,b", "--thinking", "low"),
        *("--tools", "read,ls", "--system-prompt", "be brief", "--append-system-prompt", "and kind"),
        *("--no-context-files", "--yes", "--allow-outside", "--no-mcp", "--mcp-config", str(mcp)),
        *("--sandbox", "off", "--sandbox-network", "--sandbox-allow-host", "example.org"),
        *("--no-extensions", "-e", str(extension), "--flag", "plan=on", "hello"),
    ).session_options
    default = SessionOptions()
    assert [
        f.name for f in fields(SessionOptions) if getattr(flagged, f.name) == getattr(default, f.name)
    ] == []
    assert (flagged.tools, flagged.models, flagged.approval) == (("read", "ls"), ("a", "b"), "yes")
    assert (flagged.mcp_config, flagged.extension_paths) == (mcp.resolve(), (extension.resolve(),))


def test_no_flag_leaves_every_choice_to_the_settings() -> None:
    assert parse("hello").session_options == SessionOptions()
