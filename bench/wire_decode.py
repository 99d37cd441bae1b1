"""Decode + re-encode a 60,000-message synthetic transcript, beside plain ``json.loads``.

The transcript is JSONL (one agent message per line, ~70 MB) written by a seeded generator to
``bench/out/`` (git-ignored) on first use. It mimics a long coding-agent session: user prompts,
assistant turns with thinking (and signatures), text and tool calls with nested arguments, tool
results with long outputs, usage with costs, the rarer roles, and unknown keys at several levels
(what newer producers add), so the decoder pays for everything a real transcript makes it do.

Figures: ``json.loads`` per line is the floor (parsing alone, no validation, no encoding); ours is
``MESSAGE.decode_json`` per line plus ``dumpb`` of the result. Goal: within 1.6x of the floor.
"""

from __future__ import annotations

import base64
import json
import random
import statistics
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _summary import cpu_seconds, interleaved, record_paired
from _table import print_table
from tether.wire import MESSAGE, dumpb

MESSAGES = 60_000
SEED = 20240229
GENERATOR_VERSION = 1
OUT = Path(__file__).resolve().parent / "out" / f"transcript-{MESSAGES}-s{SEED}-v{GENERATOR_VERSION}.jsonl"
GOAL = 1.6
ROUNDS = 5

Json = dict[str, Any]

_WORDS = (  # noqa: SIM905 (a word list reads better as prose)
    "the a to of and in is it that for on with as this be are by we not or file function return "
    "value test error line code call model tool result message user agent session stream token "
    "config path import class def async await python module package type list dict string number "
    "update change fix bug issue check run build output input parse write read open close retry "
    "schema decode encode cache index offset buffer request response header status json yaml diff "
    "refactor rename extract inline variable parameter argument default option flag command shell"
).split()
_FILES = [f"src/pkg/{a}/{b}.py" for a in ("core", "io", "net", "ui", "db") for b in ("main", "util", "types")]


class _Generator:
    """Seeded, so the file (and the benchmark) is the same on every machine."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        # One large block of pseudo-prose; texts are slices of it (fast, and not all alike).
        self.prose = " ".join(self.rng.choice(_WORDS) for _ in range(400_000))
        self.clock = 1_735_689_600_000
        self.call_ids = 0

    def text(self, low: int, high: int) -> str:
        n = self.rng.randint(low, high)
        start = self.rng.randrange(0, len(self.prose) - n)
        body = self.prose[start : start + n]
        if self.rng.random() < 0.3:
            body += "\n\n```python\ndef f(x):\n    return x * 2  # \u00e9t\u00e9 \u2713\n```\n"
        return body

    def signature(self, size: int) -> str:
        return base64.b64encode(self.rng.randbytes(size)).decode()

    def tick(self) -> int:
        self.clock += self.rng.randint(50, 30_000)
        return self.clock

    def usage(self) -> Json:
        inp, out = self.rng.randint(200, 120_000), self.rng.randint(5, 4_000)
        read, write = self.rng.randint(0, inp), self.rng.choice((0, 0, self.rng.randint(0, 5_000)))
        cost = {
            "input": inp * 3e-6,
            "output": out * 15e-6,
            "cacheRead": read * 0.3e-6,
            "cacheWrite": write * 3.75e-6,
        }
        cost["total"] = sum(cost.values())
        usage: Json = {
            "input": inp,
            "output": out,
            "cacheRead": read,
            "cacheWrite": write,
            "totalTokens": inp + out + read + write,
            "cost": cost,
        }
        if self.rng.random() < 0.3:
            usage["reasoningTokens"] = self.rng.randint(0, out)
        if self.rng.random() < 0.1:
            usage["serviceTier"] = "default"  # unknown key
        return usage

    def arguments(self) -> Json:
        kind = self.rng.randrange(4)
        if kind == 0:
            return {"command": self.text(10, 120), "timeout": self.rng.randint(1, 600)}
        if kind == 1:
            return {"path": self.rng.choice(_FILES), "offset": self.rng.randint(0, 900), "limit": 200}
        if kind == 2:
            return {
                "path": self.rng.choice(_FILES),
                "edits": [
                    {"oldText": self.text(20, 200), "newText": self.text(20, 200)}
                    for _ in range(self.rng.randint(1, 3))
                ],
            }
        return {
            "query": self.text(5, 60),
            "filters": {"glob": "**/*.py", "exclude": ["node_modules", ".venv"], "caseSensitive": False},
            "max": self.rng.choice((10, 50, None)),
        }

    def user(self) -> Json:
        msg: Json = {"role": "user", "content": self.text(20, 700), "timestamp": self.tick()}
        if self.rng.random() < 0.25:
            msg["content"] = [{"type": "text", "text": msg["content"]}]
            if self.rng.random() < 0.2:
                msg["content"].append(
                    {"type": "image", "data": self.signature(2_000), "mimeType": "image/png"}
                )
        if self.rng.random() < 0.1:
            msg["attribution"] = "user"
        return msg

    def assistant(self, tool_calls: int) -> Json:
        content: list[Json] = []
        if self.rng.random() < 0.6:
            content.append(
                {
                    "type": "thinking",
                    "thinking": self.text(100, 1_100),
                    "thinkingSignature": self.signature(self.rng.randint(200, 700)),
                }
            )
        if self.rng.random() < 0.8 or not tool_calls:
            block: Json = {"type": "text", "text": self.text(30, 900)}
            if self.rng.random() < 0.1:
                block["cache_control"] = {"type": "ephemeral"}  # unknown key on a block
            content.append(block)
        for _ in range(tool_calls):
            self.call_ids += 1
            content.append(
                {
                    "type": "toolCall",
                    "id": f"toolu_{self.call_ids:08d}",
                    "name": self.rng.choice(("bash", "read", "edit", "grep")),
                    "arguments": self.arguments(),
                }
            )
        msg: Json = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-6",
            "responseId": f"msg_{self.rng.getrandbits(64):016x}",
            "usage": self.usage(),
            "stopReason": "toolUse" if tool_calls else "stop",
            "timestamp": self.tick(),
            "duration": self.rng.randint(300, 90_000),
            "ttft": self.rng.random() * 3_000,
        }
        if self.rng.random() < 0.05:
            msg["providerPayload"] = {"container": {"id": "c1", "expires": None}, "flags": [1, 2]}
        return msg

    def tool_result(self, call: Json) -> Json:
        msg: Json = {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "content": [{"type": "text", "text": self.text(50, 1_150)}],
            "isError": self.rng.random() < 0.08,
            "timestamp": self.tick(),
        }
        if self.rng.random() < 0.3:
            msg["details"] = {"exitCode": 0, "truncated": False, "lines": self.rng.randint(1, 4_000)}
        return msg

    def rare(self) -> Json:
        kind = self.rng.randrange(8)
        ts = self.tick()
        if kind == 0:
            return {
                "role": "bashExecution",
                "command": self.text(5, 80),
                "output": self.text(50, 3_000),
                "exitCode": self.rng.choice((0, 1, 2)),
                "cancelled": False,
                "truncated": self.rng.random() < 0.2,
                "timestamp": ts,
            }
        if kind == 1:
            return {
                "role": "pythonExecution",
                "code": self.text(20, 400),
                "output": self.text(10, 800),
                "cancelled": False,
                "truncated": False,
                "timestamp": ts,
            }
        if kind == 2:
            return {
                "role": "custom",
                "customType": "note",
                "content": self.text(20, 600),
                "display": True,
                "details": {"source": "extension", "tags": ["a", "b"]},
                "timestamp": ts,
            }
        if kind == 3:
            return {
                "role": "hookMessage",
                "customType": "hook",
                "content": "ok",
                "display": False,
                "timestamp": ts,
            }
        if kind == 4:
            return {
                "role": "branchSummary",
                "summary": self.text(100, 1_500),
                "fromId": "e1f2",
                "timestamp": ts,
            }
        if kind == 5:
            return {
                "role": "compactionSummary",
                "summary": self.text(500, 4_000),
                "tokensBefore": self.rng.randint(50_000, 200_000),
                "tokensAfter": self.rng.randint(5_000, 20_000),
                "timestamp": ts,
            }
        if kind == 6:
            return {
                "role": "fileMention",
                "files": [
                    {"path": self.rng.choice(_FILES), "content": self.text(100, 2_000), "lineCount": 40}
                    for _ in range(self.rng.randint(1, 3))
                ],
                "timestamp": ts,
            }
        return {"role": "developer", "content": self.text(50, 500), "synthetic": True, "timestamp": ts}

    def messages(self, count: int) -> Iterator[Json]:
        produced = 0
        while produced < count:
            turn: list[Json] = [self.user()]
            for _ in range(self.rng.randint(1, 6)):
                calls = self.rng.choice((0, 1, 1, 1, 2, 3))
                reply = self.assistant(calls)
                turn.append(reply)
                turn.extend(self.tool_result(b) for b in reply["content"] if b["type"] == "toolCall")
                if self.rng.random() < 0.08:
                    turn.append(self.rare())
                if not calls:
                    break
            for msg in turn[: count - produced]:
                if self.rng.random() < 0.05:
                    msg["x-client"] = {"build": "1.2.3", "trace": [self.rng.getrandbits(32)]}  # unknown
                yield msg
            produced += len(turn)


def transcript() -> Path:
    """The benchmark file, generated on first use (a few seconds)."""
    if not OUT.exists():
        OUT.parent.mkdir(parents=True, exist_ok=True)
        tmp = OUT.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for msg in _Generator(SEED).messages(MESSAGES):
                f.write(json.dumps(msg, ensure_ascii=False, separators=(",", ":")))
                f.write("\n")
        tmp.replace(OUT)
    return OUT


def main() -> None:
    path = transcript()
    lines = path.read_bytes().splitlines()
    size_mb = path.stat().st_size / 1e6
    decode_json, loads = MESSAGE.decode_json, json.loads

    def floor() -> None:
        for line in lines:
            loads(line)

    def decode_only() -> None:
        for line in lines:
            decode_json(line)

    def round_trip() -> None:
        for line in lines:
            dumpb(decode_json(line))

    # CPU time (not wall time) because the benchmark shares its machine: waiting for a core is not
    # the decoder's cost. Everything measured runs on this one thread.
    floors, decodes, ours = interleaved(
        [partial(cpu_seconds, f) for f in (floor, decode_only, round_trip)], ROUNDS
    )
    t_floor, t_decode, t_ours = (statistics.median(x) for x in (floors, decodes, ours))
    n = len(lines)
    rows = [
        ("json.loads (floor)", t_floor, 1.0),
        ("MESSAGE.decode_json", t_decode, t_decode / t_floor),
        ("decode_json + dumpb", t_ours, t_ours / t_floor),
    ]
    record_paired("MESSAGE.decode_json", decodes, floors, "json.loads")
    paired = record_paired("decode_json + dumpb", ours, floors, "json.loads", "<= 1.6")
    print_table(
        f"wire decode: {n:,} messages, {size_mb:.1f} MB ({path.name}); CPU, medians of {ROUNDS} "
        f"interleaved rounds (decode_json + dumpb / floor per round: {min(paired):.2f}-{max(paired):.2f})",
        ["", "CPU s", "messages/s", "MB/s", "x floor"],
        [
            [name, f"{t:.3f}", f"{n / t:,.0f}", f"{size_mb / t:.0f}", f"{ratio:.2f}"]
            for name, t, ratio in rows
        ],
    )
    ratio = statistics.median(paired)
    verdict = "met" if ratio <= GOAL else "NOT met"
    print(f"goal: decode + re-encode within {GOAL}x of json.loads: {verdict} ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
