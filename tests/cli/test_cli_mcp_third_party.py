"""Third-party MCP servers from the command line: ``mcp-server-time`` (PyPI) and the reference
filesystem and everything servers (npm) over stdio, called by the scripted model in ``tether -p``
and ``--mode json`` (installed by ``tests/mcp_packages.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_support import CliEnv, json_lines, text_reply

from mcp_packages import everything_server, filesystem_server, time_server

pytestmark = [
    pytest.mark.node,
    pytest.mark.subprocess,
    pytest.mark.skipif(shutil.which("npm") is None, reason="needs npm for the npm servers"),
]


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """One assistant reply calling several tools at once."""
    return {
        "content": [
            {"type": "toolCall", "id": f"call_{i}", "name": name, "arguments": arguments}
            for i, (name, arguments) in enumerate(calls)
        ]
    }


def servers_file(cli: CliEnv, files: Path) -> Path:
    path = cli.home / "servers.json"
    servers = {"time": time_server(), "fs": filesystem_server(files), "everything": everything_server()}
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_print_mode_calls_tools_of_three_third_party_servers(cli: CliEnv) -> None:
    files = (cli.project / "files").resolve()
    files.mkdir()
    script = cli.script(
        "p",
        [
            tool_calls(
                ("mcp__time__get_current_time", {"timezone": "Europe/Paris"}),
                ("mcp__fs__write_file", {"path": str(files / "note.txt"), "content": "written by tether"}),
                ("mcp__everything__get-sum", {"a": 2, "b": 3}),
            ),
            text_reply("all done"),
        ],
    )
    config = str(servers_file(cli, files))
    # the write is not read-only (the other two are): nobody can approve it without --yes
    refused = cli.run("-p", "--no-session", "--mcp-config", config, "go", script=script)
    assert refused.returncode == 0, refused.stderr
    assert not (files / "note.txt").exists()
    done = cli.run("-p", "--no-session", "--yes", "--mcp-config", config, "go", script=script)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "all done\n"
    assert done.stderr.splitlines() == [
        "[tool] mcp__time__get_current_time",
        "[tool] mcp__fs__write_file",
        "[tool] mcp__everything__get-sum",
    ]
    # the filesystem server really wrote the file
    assert (files / "note.txt").read_text() == "written by tether"


def test_json_mode_carries_the_third_party_servers_results(cli: CliEnv) -> None:
    files = (cli.project / "files").resolve()
    files.mkdir()
    (files / "hello.txt").write_text("hello from the project\n")
    script = cli.script(
        "j",
        [
            tool_calls(
                (
                    "mcp__time__convert_time",
                    {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                ),
                ("mcp__fs__read_text_file", {"path": str(files / "hello.txt")}),
                ("mcp__fs__read_text_file", {"path": "/etc/hostname"}),
                ("mcp__everything__get-tiny-image", {}),
                ("mcp__everything__get-structured-content", {"location": "Chicago"}),
            ),
            text_reply("done"),
        ],
    )
    done = cli.run(
        "--mode", "json", "--no-session", "--mcp-config", str(servers_file(cli, files)), "go", script=script
    )
    assert done.returncode == 0, done.stderr
    results = [
        e["message"]
        for e in json_lines(done.stdout)
        if e["type"] == "message_end" and e["message"]["role"] == "toolResult"
    ]
    converted, read, outside, image, weather = results

    def text(result: dict[str, Any]) -> str:
        return "".join(b["text"] for b in result["content"] if b["type"] == "text")

    assert not converted["isError"]
    assert json.loads(text(converted))["target"]["datetime"].split("T")[1].startswith("21:00")
    assert (read["isError"], text(read)) == (False, "hello from the project\n")
    # outside its allowed folder the server refuses: an error result, and the run goes on
    assert outside["isError"] and "outside allowed directories" in text(outside).lower()
    assert [b["mimeType"] for b in image["content"] if b["type"] == "image"] == ["image/png"]
    assert weather["details"]["structuredContent"] == {
        "temperature": 36,
        "conditions": "Light rain / drizzle",
        "humidity": 82,
    }
    assert done.stderr == ""
