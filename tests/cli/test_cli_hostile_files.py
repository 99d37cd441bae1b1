"""Files tether reads on every start that were read with a plain ``read_bytes``: a FIFO in their
place blocked the start for good (opening one for reading waits for a writer), a link to
``/dev/zero`` read until memory ran out, a sparse 1 GB file was read whole. Each is now refused
unread (``tether.own_files``), said in one line naming the file, and the run goes on where the
file is not needed for it.

``tether -p`` runs in a subprocess with a scripted model; the test's timeout is the hang.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply

pytestmark = pytest.mark.subprocess


def _plant(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    else:  # sparse: costs no disk
        with path.open("wb") as file:
            file.write(b"[")
            file.truncate(1 << 30)


KINDS = ["a FIFO", "/dev/zero", "a sparse 1 GB file"]


@pytest.mark.parametrize("kind", KINDS)
def test_models_json_that_is_no_file_is_one_line_not_a_hang(cli: CliEnv, kind: str) -> None:
    """``models.json`` is read for any model lookup; it stays a whole-file error (docs/models.md),
    now said at once instead of never."""
    models = cli.home / "config" / "models.json"
    _plant(models, kind)
    done = cli.run("-p", "hi", "--no-session", "--model", "openai/gpt-4o-mini", timeout=30)
    assert "Traceback" not in done.stderr
    assert done.returncode == 1
    assert done.stderr.startswith(f"tether: {models}: cannot read: "), done.stderr


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "name",
    ["config/trusted-folders.json", "data/extension-entry-points.json", "data/model-spec-entry-points.json"],
)
def test_a_list_tether_keeps_that_is_no_file_does_not_stop_the_run(cli: CliEnv, name: str, kind: str) -> None:
    """The trusted-folders list (read when the project has a ``.tether`` folder) and the caches of
    installed entry points (read on every start) are read without blocking; the run goes on
    without them (no project trusted; entry points searched again)."""
    _plant(cli.home / name, kind)
    (cli.project / ".tether" / "prompts").mkdir(parents=True)
    done = cli.run("-p", "hi", "--no-session", script=cli.script("s", [text_reply("fine")]), timeout=30)
    assert "Traceback" not in done.stderr
    assert (done.returncode, done.stdout) == (0, "fine\n"), done.stderr
