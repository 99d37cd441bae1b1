"""The status line: the session's whole spend (every branch), and what it keeps when narrow."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from tether.cli.footer import Spent, status_text
from tether.session import SessionManager
from tether.wire import AgentMessage


def answer(cost: float, output: int) -> dict[str, Any]:
    usage = {
        "input": 100,
        "output": output,
        "cacheRead": 10,
        "cacheWrite": 0,
        "totalTokens": 100 + output,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": "ok"}],
        "api": "x",
        "provider": "x",
        "model": "x",
        "usage": usage,
        "stopReason": "stop",
        "timestamp": 0,
    }


def test_spent_counts_every_branch_not_only_the_one_shown(tmp_path: Path) -> None:
    with SessionManager.at(tmp_path / "s.db") as sessions:
        session = sessions.create(tmp_path)
        first = session.append_message({"role": "user", "content": "one", "timestamp": 0})
        session.append_message(cast(AgentMessage, answer(0.25, 5)))
        session.append_message({"role": "user", "content": "two", "timestamp": 0})
        session.append_message(cast(AgentMessage, answer(0.5, 7)))
        session.branch(first)  # /tree back to the first prompt: the context loses the second answer
        spent = Spent.of(session.entries())
        session.close()
    assert spent.cost == 0.75 and spent.output == 12 and spent.input == 200 and spent.cache_read == 20
    spent.add({"role": "user", "content": "x"})  # only answers cost anything
    spent.add(answer(0.25, 1))
    assert spent.cost == 1.0 and spent.output == 13


def status(width: int, activity: str | None = "● working", model: str = "openai/gpt-5.1-codex-max") -> str:
    return status_text(
        model=model,
        thinking="medium",
        shown=False,
        spent=Spent(input=12_000, output=3_400, cost=1.25),
        context_percent=42.0,
        activity=activity,
        width=width,
    )


def test_the_status_line_shortens_but_keeps_ctx_and_the_working_indicator() -> None:
    wide = status(160)
    assert wide == (
        " openai/gpt-5.1-codex-max · thinking medium (folded) · ↑12.0k ↓3.4k · $1.250 · ctx 42% · ● working "
    )
    for width in (100, 80, 60, 45):
        line = status(width, activity="● waiting for the model… 12 s")
        assert len(line) <= width, (width, line)
        assert "ctx 42%" in line and "● waiting for the model… 12 s" in line, (width, line)
    assert "thinking medium" in status(80, activity="● waiting for the model… 12 s")
    assert status(30) == " ctx 42% · ● working "
    assert status(80, activity=None).endswith("· ctx 42% ")
