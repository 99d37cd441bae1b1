"""A file name that is not UTF-8 (``b"\\xff.txt"``) in ``tether -p --mode json``'s output.

Such a name reaches Python with a lone surrogate, which JSON output cannot encode: the run's
output stopped at the first tool result naming it (``event listener failed``). The tools write
its odd byte ``\\xff`` (``tether.wire.file_names``), so every event is written and the model can
read the file by the name it was shown."""

from __future__ import annotations

import os

import pytest
from cli_support import CliEnv, json_lines, text_reply, tool_reply, tool_results

pytestmark = pytest.mark.subprocess


def test_json_mode_writes_every_event_of_a_run_that_meets_an_odd_file_name(cli: CliEnv) -> None:
    with open(os.path.join(os.fsencode(cli.project), b"\xff.txt"), "wb") as f:
        f.write(b"odd content\n")
    script = cli.script(
        "odd",
        [
            tool_reply("ls", {}, "c1"),
            tool_reply("find", {"pattern": "*.txt"}, "c2"),
            tool_reply("grep", {"pattern": "odd"}, "c3"),
            tool_reply("read", {"path": "\\xff.txt"}, "c4"),
            text_reply("done"),
        ],
    )
    done = cli.run("-p", "--mode", "json", "--no-session", "look", script=script)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    results = [m["content"][0]["text"] for m in tool_results(done.stdout)]
    assert results[:3] == ["\\xff.txt", "\\xff.txt", "\\xff.txt:1:odd content"]
    assert results[3].startswith("1\todd content")
    assert "agent_end" in [e["type"] for e in json_lines(done.stdout)]
