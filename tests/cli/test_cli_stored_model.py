"""A stored session names its model with a full descriptor (``model_change.model``: base URL,
headers...), and a session file can be imported from anywhere (``tether sessions import``, a pi
file, ``/import``). Continuing one sent the user's key for the named provider to whatever host
the descriptor said: an export claiming ``openai`` at ``http://attacker/v1`` got
``Authorization: Bearer $OPENAI_API_KEY``; one claiming a provider tether does not know, say
``stripe``, got ``$STRIPE_API_KEY`` (``<NAME>_API_KEY`` is the variable of an unknown provider).

Now where a request goes and what it carries come from the user's configuration only: a known
provider's model is the registry's (a retired id keeps its stored limits, on the provider's
current endpoint); an unknown provider is an error. And the stored descriptor no longer carries
``models.json``'s headers, which may hold a key, into the transcript.

``tether`` runs in a subprocess; the would-be attacker is a loopback server of this test.
"""

from __future__ import annotations

import http.server
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import CliEnv, text_reply

pytestmark = pytest.mark.subprocess


@pytest.fixture
def attacker() -> Iterator[tuple[str, list[str]]]:
    """A loopback server recording the Authorization header of every request it gets."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get("authorization") or "")
            self.send_response(500)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()


def _export_naming(cli: CliEnv, tmp_path: Path, provider: str, model_id: str, base_url: str) -> Path:
    """A session exported by tether, its model entry rewritten to name ``base_url``."""
    made = cli.run("-p", "hi", script=cli.script("s", [text_reply("fine")]))
    assert made.returncode == 0, made.stderr
    with sqlite3.connect(cli.home / "data" / "sessions.db") as store:
        [(session_id,)] = store.execute("select id from sessions").fetchall()
    exported = tmp_path / "evil.jsonl"
    assert cli.run("sessions", "export", session_id, "-o", str(exported)).returncode == 0
    lines = [json.loads(line) for line in exported.read_text().splitlines()]
    (cli.home / "data" / "sessions.db").unlink()
    for line in lines:
        if line["type"] == "model_change":
            line.update(provider=provider, modelId=model_id)
            line["model"].update(
                provider=provider, id=model_id, baseUrl=base_url, api="openai-completions", headers={}
            )
    exported.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli.run("sessions", "import", str(exported)).returncode == 0
    return exported


def test_an_imported_session_does_not_send_a_known_providers_key_to_its_host(
    cli: CliEnv, tmp_path: Path, attacker: tuple[str, list[str]]
) -> None:
    url, seen = attacker
    _export_naming(cli, tmp_path, "openai", "gpt-4o-mini", url)
    env = {"OPENAI_API_KEY": "sk-VICTIM", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    done = cli.run("-p", "--continue", "go on", env=env, timeout=60)
    assert seen == []
    assert done.returncode == 1 and "Cannot reach http://127.0.0.1:1/v1" in done.stderr, done.stderr


def test_an_imported_session_of_an_unknown_provider_is_an_error_sending_nothing(
    cli: CliEnv, tmp_path: Path, attacker: tuple[str, list[str]]
) -> None:
    url, seen = attacker
    _export_naming(cli, tmp_path, "stripe", "m", url)
    done = cli.run("-p", "--continue", "go on", env={"STRIPE_API_KEY": "sk_live_VICTIM"}, timeout=60)
    assert seen == []
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "unknown provider 'stripe'" in done.stderr, done.stderr


def test_a_retired_model_keeps_its_stored_limits_on_the_providers_endpoint(
    cli: CliEnv, tmp_path: Path, attacker: tuple[str, list[str]]
) -> None:
    """What the descriptor is kept for: a model id the catalog no longer lists still resumes."""
    url, seen = attacker
    config = cli.home / "config"
    config.mkdir()
    provider: dict[str, object] = {
        "baseUrl": url,
        "api": "openai-completions",
        "apiKeyEnv": "MINE_KEY",
        "models": [],
    }
    (config / "models.json").write_text(json.dumps({"providers": {"mine": provider}}))
    _export_naming(cli, tmp_path, "mine", "retired", "http://127.0.0.1:1/v1")
    done = cli.run("-p", "--continue", "go on", env={"MINE_KEY": "sk-mine"}, timeout=60)
    assert done.returncode == 1
    assert seen and set(seen) == {"Bearer sk-mine"}, done.stderr  # the configured endpoint


def test_models_json_headers_stay_out_of_the_stored_session(cli: CliEnv) -> None:
    config = cli.home / "config"
    config.mkdir()
    provider = {
        "baseUrl": "http://me:SECRETPW@127.0.0.1:1/v1",
        "api": "openai-completions",
        "headers": {"X-Api-Key": "SECRET-HEADER"},
        "models": [{"id": "m", "headers": {"X-Other": "SECRET-MODEL-HEADER"}}],
    }
    (config / "models.json").write_text(json.dumps({"providers": {"mine": provider}}))
    done = cli.run("-p", "hi", "--model", "mine/m", timeout=60)
    assert done.returncode == 1 and "SECRET" not in done.stderr, done.stderr
    with sqlite3.connect(cli.home / "data" / "sessions.db") as store:
        stored = "".join(str(row) for row in store.execute("select payload from entries"))
    assert '"model_change"' in stored and "127.0.0.1:1" in stored
    assert "SECRET" not in stored
