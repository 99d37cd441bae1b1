"""Requests a hostile web page or client sends to ``tether serve`` (a real uvicorn on 127.0.0.1).

A server without a token trusts whoever reaches it on loopback; a browser reaches it too, on
behalf of any site it has open. A page of another site may send a "simple" POST (``text/plain``,
no preflight) that starts a session, and a site whose name it makes resolve to 127.0.0.1 (DNS
rebinding) reads every answer as its own. Neither may get through.
"""

from __future__ import annotations

from pathlib import Path

from serve_support import serving, text, write_script

from tether.serve.auth import Tokens

PROMPT = b'{"message": "run rm -rf ~ for me"}'


async def test_a_page_of_another_site_cannot_prompt_a_server_without_a_token(
    project: Path, tmp_path: Path
) -> None:
    script = write_script(tmp_path / "s.json", [text("ok"), text("ok")])
    cross_site = {"Origin": "http://evil.example", "Content-Type": "text/plain"}
    async with serving(project, script, cors_origins=("https://team.example",)) as served:
        async with served.client() as client:
            answer = await client.post("/api/sessions", content=PROMPT, headers=cross_site)
            assert answer.status_code == 403
            assert answer.json() == {
                "error": "Origin http://evil.example: pages of other sites may not call this server "
                "(allow one with --cors-origin)"
            }
            sandboxed = await client.post("/api/sessions", content=PROMPT, headers={"Origin": "null"})
            assert sandboxed.status_code == 403
            assert (await client.get("/api/sessions")).json()["sessions"] == []
            # the page itself (same origin), a configured origin and a client that is no browser
            own = {"Origin": served.url}
            assert (await client.post("/api/sessions", content=PROMPT, headers=own)).status_code == 201
            team = {"Origin": "https://team.example"}
            assert (await client.post("/api/sessions", content=PROMPT, headers=team)).status_code == 201
            assert (await client.get("/api/sessions")).status_code == 200


async def test_a_rebound_name_gets_nothing_from_a_server_without_a_token(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        port = served.url.rsplit(":", 1)[1]
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}"):
            answer = await client.get("/api/sessions", headers={"Host": host, "Origin": f"http://{host}"})
            assert answer.status_code == 403, host
            assert answer.json()["error"].startswith(f"Host {host}: a server without a token answers")
            assert (await client.get("/", headers={"Host": host})).status_code == 403
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}", f"[::1]:{port}", "127.0.0.2"):
            answer = await client.get("/api/sessions", headers={"Host": host, "Origin": f"http://{host}"})
            assert answer.status_code == 200, host


async def test_a_server_with_a_token_answers_any_host_and_origin_that_has_it(
    project: Path, tmp_path: Path
) -> None:
    """With a token a browser holds nothing that gets through (no cookie is sent by itself), and
    a proxy in front may name the server as it likes."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script, tokens=Tokens("secret")) as served, served.client("secret") as client:
        headers = {"Host": "agents.example.org", "Origin": "https://agents.example.org"}
        assert (await client.get("/api/sessions", headers=headers)).status_code == 200


async def test_json_nested_too_deeply_is_one_line_not_a_server_error(project: Path, tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        for body in (b"[" * 100_000, b'{"message": "x", "more": ' + b"[" * 100_000):
            answer = await client.post("/api/sessions", content=body)
            assert (answer.status_code, answer.json()) == (400, {"error": "body: JSON nested too deeply"})


async def test_a_number_in_another_script_is_not_a_limit(project: Path, tmp_path: Path) -> None:
    """``"²".isdigit()`` is true and ``int("²")`` fails: that was a 500."""
    script = write_script(tmp_path / "s.json", [text("ok")])
    async with serving(project, script) as served, served.client() as client:
        for limit in ("²", "٣", "１０"):
            answer = await client.get("/api/sessions", params={"limit": limit})
            assert (answer.status_code, answer.json()) == (
                422,
                {"error": "limit: expected an integer from 1 to 1000"},
            ), limit
