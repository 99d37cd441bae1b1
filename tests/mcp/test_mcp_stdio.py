"""The stdio transport of tether.mcp.stdio: servers spawned before the SDK loads, and stopped
with everything they left in their process group."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.mcp.conftest import TOY, alive
from tests.mcp.test_mcp_session import results, session, text_of

from tether.mcp import McpServerConfig
from tether.testing.scripted import ScriptedModel, reply, tool_call


@pytest.mark.subprocess
def test_a_server_is_spawned_while_the_sdk_is_still_loading(tmp_path: Path) -> None:
    """A fresh interpreter (this one has the SDK loaded already) holds the import of ``mcp``
    until the toy server has written its pid file: the server ran while tether had no SDK, and
    the event loop kept running meanwhile (the wait for the file is on the loop)."""
    pids = tmp_path / "pids"
    pids.mkdir()
    program = textwrap.dedent(
        f"""
        import asyncio, importlib.abc, importlib.machinery, sys, threading
        from pathlib import Path

        release = threading.Event()

        class HoldTheSdk(importlib.abc.MetaPathFinder):
            # delays running mcp/__init__.py (find_spec itself runs under the global import lock)
            def find_spec(self, name, path, target=None):
                if name != "mcp":
                    return None
                spec = importlib.machinery.PathFinder.find_spec(name, path)
                run = spec.loader.exec_module

                def exec_module(module):
                    release.wait(60)
                    run(module)

                spec.loader.exec_module = exec_module
                return spec

        sys.meta_path.insert(0, HoldTheSdk())
        from tether.mcp import McpServerConfig, McpServers

        async def main():
            config = McpServerConfig(
                "toy", command=sys.executable, args=({str(TOY)!r},), env={{"TOY_PID_DIR": {str(pids)!r}}}
            )
            servers = McpServers([config], log_dir=Path({str(tmp_path / "logs")!r}))
            servers.start()
            for _ in range(600):
                if any(Path({str(pids)!r}).iterdir()):
                    break
                await asyncio.sleep(0.05)
            print("server ran before the SDK loaded:", not hasattr(sys.modules.get("mcp"), "Client"), flush=True)
            release.set()
            await servers.ready()
            [status] = servers.statuses()
            print(status.status, "mcp__toy__add" in status.tools, flush=True)
            await servers.close()

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["server ran before the SDK loaded: True", "ready True"]


async def test_stopping_a_server_stops_what_it_left_in_its_process_group(tmp_path: Path) -> None:
    """A wrapper that started a helper and then became the server: when the session closes, the
    server exits on its closed stdin, and the helper it left behind is stopped too."""
    helper_pid = tmp_path / "helper.pid"
    wrapper = f"sleep 300 & echo $! > {helper_pid}; exec {sys.executable} {TOY}"
    config = McpServerConfig("wrapped", command="/bin/sh", args=("-c", wrapper))
    model = ScriptedModel([reply(tool_call("mcp__wrapped__add", {"a": 1, "b": 2})), reply("done")])
    core = session(model, config, log_dir=tmp_path / "logs")
    try:
        [result] = results(await core.prompt("go"))
        helper = int(helper_pid.read_text())
        assert alive(helper)
    finally:
        await core.close()
    assert text_of(result) == "3"
    assert not alive(helper)


@pytest.mark.subprocess
def test_nothing_outlives_a_kill_9_of_tether(tmp_path: Path) -> None:
    """A real ``tether -p`` in the middle of an MCP call, killed by SIGKILL (no cleanup of ours
    runs): the server and the helper it started die with it."""
    import contextlib
    import json
    import os
    import signal
    import time

    pids = tmp_path / "pids"
    pids.mkdir()
    wrapper = (
        f"sleep 300 & echo $! > {pids / 'helper'}; echo $$ > {pids / 'server'}; exec {sys.executable} {TOY}"
    )
    started = tmp_path / "sleep.log"
    server_env = {"TOY_SLEEP_LOG": str(started)}
    servers = {"mcpServers": {"wrapped": {"command": "/bin/sh", "args": ["-c", wrapper], "env": server_env}}}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(servers))
    script = tmp_path / "script.json"
    call = {"type": "toolCall", "id": "c1", "name": "mcp__wrapped__sleep", "arguments": {"seconds": 300}}
    script.write_text(
        json.dumps({"responses": [{"content": [call]}, {"content": [{"type": "text", "text": "x"}]}]})
    )
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env |= {"TETHER_HOME": str(home), "TETHER_SCRIPTED": str(script)}
    tether = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "-p", "-y", "--no-session", "--mcp-config", str(config), "go"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not (started.exists() and started.read_text()) and tether.poll() is None:
            assert time.monotonic() < deadline, "the MCP call never started"
            time.sleep(0.05)
        assert tether.poll() is None, tether.stderr.read() if tether.stderr else ""
        server, helper = int((pids / "server").read_text()), int((pids / "helper").read_text())
        assert alive(server) and alive(helper)
        tether.send_signal(signal.SIGKILL)
        tether.wait(30)
        deadline = time.monotonic() + 30
        while (alive(server) or alive(helper)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(server) and not alive(helper)
    finally:
        if tether.poll() is None:
            tether.kill()
        tether.wait(30)
        if tether.stderr is not None:
            tether.stderr.close()
        for name in ("server", "helper"):  # a failed run must not leave them behind either
            with contextlib.suppress(OSError, ValueError):
                os.kill(int((pids / name).read_text()), signal.SIGKILL)


@pytest.mark.subprocess
def test_a_huge_result_costs_about_its_size_not_six_times_it(tmp_path: Path) -> None:
    """A ~50 MB result line (the text twice: content and structuredContent) through a real
    server, in a fresh interpreter: the peak over the start stays within 3x the line (it was
    6-7x: the line decoded to a str, parsed by pydantic, encoded again whole), and the 25 MB
    structured copy is not kept in the details recorded with the session."""
    program = textwrap.dedent(
        f"""
        import asyncio, json, resource, sys
        from pathlib import Path
        from tether.mcp import McpServerConfig, McpServers

        async def main():
            config = McpServerConfig("toy", command=sys.executable, args=({str(TOY)!r},))
            servers = McpServers([config], log_dir=Path({str(tmp_path / "logs")!r}))
            servers.start()
            await servers.ready()
            big = next(t for t in servers.tools() if t.name.endswith("__big"))
            base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            result = await big.execute("c1", {{"lines": 2_000_000}}, None, None)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            print(json.dumps({{"kib": peak - base, "text": len(result.content[0]["text"]), "details": result.details}}))
            await servers.close()

        asyncio.run(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    report = json.loads(done.stdout.splitlines()[-1])
    line_kib = 2 * 24_888_890 // 1024  # the text (sum of "line i\\n"), twice, as JSON
    assert report["kib"] < 3 * line_kib, report
    assert report["text"] < 60_000  # what the model sees: head and tail
    assert "structuredContent" not in report["details"] and "structuredContentOmitted" in report["details"]
