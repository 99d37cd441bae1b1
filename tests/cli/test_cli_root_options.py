"""Options of the ``tether`` command written before a subcommand (``tether --database X sessions``)
go to the subcommand; words after options no subcommand has stay a prompt (``tether -p models``).
Real processes."""

from __future__ import annotations

import json

import pytest
from cli_support import CliEnv, text_reply

pytestmark = pytest.mark.subprocess


def test_options_before_a_subcommand_are_the_subcommands(cli: CliEnv) -> None:
    """``tether --database X sessions`` ran the prompt "sessions" (against X): the options ended
    the look for a subcommand. Each option now goes to the command of the path that has it."""
    db = cli.project / "elsewhere.db"
    stored = cli.run("-p", "hi", "--database", str(db), script=cli.script("s", [text_reply("hello")]))
    assert stored.returncode == 0, stored.stderr
    listed = cli.run("--database", str(db), "sessions")
    assert listed.returncode == 0, listed.stderr
    (session_id,) = (line.split()[0] for line in listed.stdout.splitlines() if "hi" in line)
    exported = cli.run(f"--database={db}", "sessions", "export", session_id, "-o", "s.jsonl")
    assert (exported.returncode, exported.stdout) == (0, "s.jsonl\n"), exported.stderr
    assert json.loads((cli.project / "s.jsonl").read_text().splitlines()[0])["id"] == session_id
    runs = cli.run("--database", str(db), "runs", "list", "--json")  # an option of the path's leaf
    assert runs.returncode == 0 and json.loads(runs.stdout) == [], runs.stderr
    deleted = cli.run("--database", str(db), "-y", "sessions", "delete", session_id)  # two levels
    assert (deleted.returncode, deleted.stdout) == (0, f"deleted {session_id}\n"), deleted.stderr
    assert cli.run("--database", str(db), "sessions", "--all").stdout.count(session_id) == 0


def test_words_after_an_option_no_subcommand_has_are_the_prompt(cli: CliEnv) -> None:
    done = cli.run("-p", "sessions", script=cli.script("s", [text_reply("a reply")]))
    assert (done.returncode, done.stdout) == (0, "a reply\n"), done.stderr
    done = cli.run("--no-session", "-p", "--", "models", script=cli.script("t", [text_reply("again")]))
    assert (done.returncode, done.stdout) == (0, "again\n"), done.stderr


def test_an_option_meaning_another_thing_to_the_subcommand_stays_the_runs(cli: CliEnv) -> None:
    """Options moved by spelling alone: ``tether --name N worker`` started a worker with id N (one
    that runs until stopped), where ``--name`` names the session. Only options that mean the same
    to the subcommand move; with any other the words stay the prompt."""
    done = cli.run("--name", "N", "worker", script=cli.script("s", [text_reply("a reply")]), timeout=30)
    assert (done.returncode, done.stdout) == (0, "a reply\n"), done.stderr
    listed = cli.run("sessions")
    assert listed.returncode == 0 and "N" in listed.stdout.split(), listed.stdout
