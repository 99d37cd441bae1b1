"""Issue 14, class 2: ``@path`` attaches only what the ``read`` tool may read, in every mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import CliEnv, json_lines, text_reply

pytestmark = pytest.mark.subprocess

SECRET = "secret-value-7c1d"


def _outside(cli: CliEnv) -> tuple[Path, Path]:
    """A file outside the workspace, and a fake ``~/.ssh/id_rsa`` under ``HOME``."""
    outside = cli.project.parent / "outside.txt"
    outside.write_text(SECRET + "-outside\n")
    ssh = cli.home / "user" / ".ssh"
    ssh.mkdir(parents=True)
    (ssh / "id_rsa").write_text(SECRET + "-key\n")
    (cli.project / "inside.txt").write_text("inside-ok\n")
    (cli.project / "link.txt").symlink_to(outside)
    return outside, ssh / "id_rsa"


@pytest.mark.parametrize("via", ["argument", "stdin"])
def test_mentions_outside_the_workspace_are_not_attached(cli: CliEnv, via: str) -> None:
    outside, _ = _outside(cli)
    prompt = f"look at @{outside} @~/.ssh/id_rsa @link.txt @/etc/passwd and @inside.txt"
    script = cli.script("s", [text_reply("ok")])
    env = {"HOME": str(cli.home / "user")}
    if via == "argument":
        done = cli.run("--mode", "json", prompt, "--no-session", script=script, env=env)
    else:
        done = cli.run("--mode", "json", "--no-session", script=script, env=env, stdin=prompt)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout and "root:" not in done.stdout
    mentions = [
        e["message"]
        for e in json_lines(done.stdout)
        if e["type"] == "message_end" and e["message"]["role"] == "fileMention"
    ]
    assert [[f["path"] for f in m["files"]] for m in mentions] == [["inside.txt"]]


@pytest.mark.parametrize("where", ["--allow-outside", "a workspace holding them"])
def test_mentions_of_what_the_sandbox_hides_are_not_attached(cli: CliEnv, where: str) -> None:
    """The read tool refuses ``~/.ssh`` and the other credentials the sandbox hides, with
    ``--allow-outside`` and in a workspace that holds them (the home folder); a mention checked
    only the workspace's roots, so ``@~/.ssh/id_rsa`` sent the key to the provider."""
    _, key = _outside(cli)
    home = key.parent.parent
    args = ("--allow-outside",) if where == "--allow-outside" else ("--cwd", str(home))
    script = cli.script("s", [text_reply("ok")])
    done = cli.run(
        "--mode", "json", "--no-session", *args, "see @~/.ssh/id_rsa", script=script, env={"HOME": str(home)}
    )
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout
    assert [e for e in json_lines(done.stdout) if e.get("message", {}).get("role") == "fileMention"] == []
