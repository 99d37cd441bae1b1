"""The Ctrl-O transcript: the current branch with nothing folded, from a real session."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from tether.cli.render import FOLDED_LINES, Painter
from tether.cli.transcript import branch_messages, render_transcript
from tether.session import SessionManager
from tether.wire import AgentMessage

PAINTER = Painter(80, color=False)
USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def assistant(*blocks: dict[str, Any], stop: str = "stop", **extra: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": list(blocks),
        "api": "x",
        "provider": "x",
        "model": "x",
        "usage": USAGE,
        "stopReason": stop,
        "timestamp": 0,
        **extra,
    }


def result(call_id: str, text: str, *, name: str = "bash", error: bool = False) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
        "timestamp": 0,
    }


COUNT = "\n".join(str(i) for i in range(1, 21))
CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": "count for me", "timestamp": 0},
    assistant(
        {"type": "thinking", "thinking": "Counting is easy.\nI will use seq."},
        {"type": "text", "text": "Sure, **counting**."},
        {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "seq 1 20"}},
        {"type": "toolCall", "id": "c2", "name": "read", "arguments": {"path": "gone.txt"}},
        {"type": "toolCall", "id": "c3", "name": "ls", "arguments": {}},
    ),
    result("c1", COUNT),
    result("c2", "no such file", name="read", error=True),
    {"role": "bashExecution", "command": "ls", "output": "a\nb\nc\nd\ne\nf", "exitCode": 2, "timestamp": 0},
    {"role": "compactionSummary", "summary": "We counted.", "tokensBefore": 10, "timestamp": 0},
    result("old", "an orphan result", name="grep"),
    assistant(stop="error", errorMessage="rate limited"),
]


def test_every_result_is_whole_and_follows_its_call() -> None:
    text = render_transcript(PAINTER, CONVERSATION, show_thinking=False)
    assert "more lines" not in text and "Ctrl-O" not in text
    seq = text.index("✓ bash command=seq 1 20")
    assert [text.index(f"  │ {i}\n", seq) for i in (1, 20)]  # all twenty lines, after the call
    assert text.index("✗ read path=gone.txt") < text.index("│ no such file")
    assert "… ls" in text  # a call without a result is still shown, as running
    assert "! ls  (exit 2)" in text and "  │ f" in text  # shell output past FOLDED_LINES
    assert len(["a", "b", "c", "d", "e", "f"]) > FOLDED_LINES
    assert "compaction summary" in text and "We counted." in text
    assert "grep" in text and "an orphan result" in text
    assert "✗ Error: rate limited" in text
    assert "**counting**" not in text and "Sure, counting." in text  # markdown rendered
    assert text.index("› count for me") < seq


def test_thinking_folds_and_unfolds() -> None:
    folded = render_transcript(PAINTER, CONVERSATION, show_thinking=False)
    shown = render_transcript(PAINTER, CONVERSATION, show_thinking=True)
    assert "▸ thinking (7 words)" in folded and "I will use seq." not in folded
    assert "Counting is easy.\nI will use seq." in shown


def test_empty() -> None:
    assert "nothing in this conversation yet" in render_transcript(PAINTER, [], show_thinking=False)


def test_branch_messages_cover_compacted_history_but_not_other_branches(tmp_path: Path) -> None:
    with SessionManager.at(tmp_path / "s.db") as sessions:
        session = sessions.create(tmp_path)
        first = session.append_message({"role": "user", "content": "one", "timestamp": 0})
        session.append_message(cast(AgentMessage, assistant({"type": "text", "text": "answer one"})))
        left = session.append_message({"role": "user", "content": "abandoned", "timestamp": 0})
        session.branch(first)
        session.append_message(cast(AgentMessage, assistant({"type": "text", "text": "another answer"})))
        kept = session.append_message({"role": "user", "content": "two", "timestamp": 0})
        session.append_compaction("SUMMARY of one", kept, tokens_before=100)
        session.append_message(cast(AgentMessage, assistant({"type": "text", "text": "answer two"})))

        assert session.messages[0]["role"] == "compactionSummary"  # the model's view
        messages = branch_messages(session)
        assert [m["role"] for m in messages] == [
            "user",
            "assistant",
            "user",
            "compactionSummary",
            "assistant",
        ]
        text = render_transcript(PAINTER, messages, show_thinking=False)
        assert "› one" in text and "another answer" in text and "SUMMARY of one" in text
        assert "abandoned" not in text and "answer one" not in text
        assert left not in {e["id"] for e in session.path()}
        session.close()


def test_the_transcript_rendered_backwards_in_chunks_is_the_whole_one(tmp_path: Path) -> None:
    """Chunk by chunk from the leaf (what the view renders as it scrolls up), joined, the text is
    the one rendered at once; and the first chunk reads only the messages it shows."""
    from tether.cli.transcript import CHUNK, BackwardTranscript, branch_messages_backward

    with SessionManager.at(tmp_path / "s.db") as sessions:
        session = sessions.create(str(tmp_path))
        for turn in range(40):
            session.append_message({"role": "user", "content": f"question {turn}", "timestamp": 0})
            calls = [
                {"type": "toolCall", "id": f"c{turn}-{n}", "name": "bash", "arguments": {"n": n}}
                for n in range(turn % 3)
            ]
            session.append_message(
                cast(AgentMessage, assistant({"type": "text", "text": f"answer {turn}"}, *calls))
            )
            for n in range(turn % 3):
                session.append_message(cast(AgentMessage, result(f"c{turn}-{n}", f"output {turn}.{n}")))
        whole = render_transcript(PAINTER, branch_messages(session), show_thinking=False)
        read: list[dict[str, Any]] = []

        def counted() -> Any:
            for message in branch_messages_backward(session):
                read.append(message)
                yield message

        pages = BackwardTranscript(PAINTER, counted(), show_thinking=False)
        chunks: list[str] = []
        while (chunk := pages.older()) is not None:
            chunks.append(chunk)
            if len(chunks) == 1:
                assert CHUNK <= len(read) <= CHUNK + 2  # a chunk ends where no result is cut off its call
        assert len(chunks) > 3
        assert "\n\n".join(reversed(chunks)) == whole
        assert BackwardTranscript(PAINTER, [], show_thinking=False).older() == render_transcript(
            PAINTER, [], show_thinking=False
        )
