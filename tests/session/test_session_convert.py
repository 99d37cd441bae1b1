"""Lowering every transcript role to provider roles (issue 5, "Lowering to the model")."""

from __future__ import annotations

from typing import Any, cast

from narrowing import content_of
from session_helpers import MODEL, assistant, result, text, user
from tether.session import convert_to_llm, lower_for, to_provider_messages
from tether.session.convert import BRANCH_PREFIX, COMPACTION_PREFIX, STEERING_PREFIX, lower_message
from tether.wire import AgentMessage, ModelInfo, decode_messages

IMAGE = {"type": "image", "data": "aGk=", "mimeType": "image/png"}


def m(**fields: Any) -> AgentMessage:
    return cast(AgentMessage, {"timestamp": 7, **fields})


def test_provider_roles_pass_through_unchanged() -> None:
    msgs = [user("hi"), assistant(text("yo")), result("c", "out"), m(role="developer", content="dev")]
    assert convert_to_llm(msgs) == msgs
    assert all(a is b for a, b in zip(convert_to_llm(msgs), msgs, strict=True))


def test_bash_execution_becomes_a_user_message_describing_the_run() -> None:
    out = lower_message(
        m(role="bashExecution", command="ls -la", output="a\nb", exitCode=2, cancelled=False, truncated=True)
    )
    assert out is not None and out["role"] == "user" and out["timestamp"] == 7
    body = out["content"]
    assert isinstance(body, str)
    assert "<command>\nls -la\n</command>" in body
    assert "<output>\na\nb\n</output>" in body
    assert "Exit status: 2" in body and "truncated" in body and "cancelled" not in body


def test_cancelled_python_run_and_excluded_runs() -> None:
    out = lower_message(
        m(role="pythonExecution", code="print(1)", output="", cancelled=True, truncated=False)
    )
    assert out is not None
    assert "<code>\nprint(1)\n</code>" in str(out["content"]) and "cancelled" in str(out["content"])
    assert "Exit status" not in str(out["content"])
    excluded = m(
        role="bashExecution",
        command="x",
        output="",
        cancelled=False,
        truncated=False,
        excludeFromContext=True,
    )
    assert convert_to_llm([excluded]) == []


def test_bash_images_ride_along_as_blocks() -> None:
    out = lower_message(
        m(
            role="bashExecution",
            command="c",
            output="o",
            exitCode=0,
            cancelled=False,
            truncated=False,
            images=[IMAGE],
        )
    )
    assert out is not None
    content = out["content"]
    assert isinstance(content, list) and content[1] == IMAGE


def test_file_mentions_become_developer_file_blocks_or_user_with_images() -> None:
    files = [
        {"path": "src/a.py", "content": "x = 1"},
        {"path": 'we"ird<.txt', "content": "", "skippedReason": "tooLarge", "byteSize": 10_000_000},
    ]
    out = lower_message(m(role="fileMention", files=files))
    assert out == {
        "role": "developer",
        "content": '<file path="src/a.py">\nx = 1\n</file>\n<file path="we&quot;ird&lt;.txt" skipped="tooLarge" bytes="10000000" />',
        "timestamp": 7,
    }
    with_image = lower_message(
        m(role="fileMention", files=[{"path": "p.png", "content": "", "image": IMAGE}])
    )
    assert with_image is not None and with_image["role"] == "user"
    assert with_image["content"] == [{"type": "text", "text": '<file path="p.png" type="image" />'}, IMAGE]


def test_custom_and_hook_messages_become_developer_messages() -> None:
    for role in ("custom", "hookMessage"):
        out = lower_message(m(role=role, customType="x.y", content="ctx", display=False))
        assert out == {"role": "developer", "content": "ctx", "timestamp": 7}
    with_image = lower_message(m(role="custom", customType="x.y", content=[text("see"), IMAGE], display=True))
    assert with_image is not None and with_image["role"] == "user"


def test_summaries_get_a_fixed_preamble() -> None:
    b = lower_message(m(role="branchSummary", summary="tried X", fromId="e1"))
    c = lower_message(m(role="compactionSummary", summary="so far", tokensBefore=10))
    assert b is not None and b["content"] == BRANCH_PREFIX + "tried X\n</summary>" and b["role"] == "user"
    assert c is not None and c["content"] == COMPACTION_PREFIX + "so far\n</summary>"


def test_steering_envelope_is_stable_whatever_the_position() -> None:
    steer = user("stop and use tabs", steering=True)
    steer_blocks = user("x", steering=True)
    steer_blocks["content"] = [text("a"), IMAGE]  # type: ignore[typeddict-item]
    alone = convert_to_llm([steer])
    later = convert_to_llm([user("q"), assistant(text("a")), steer, user("q2")])
    assert alone[0] == later[2]
    assert alone[0]["content"] == STEERING_PREFIX + "stop and use tabs"
    assert alone[0].get("steering") is True
    blocks = convert_to_llm([steer_blocks])[0]["content"]
    assert blocks == [text(STEERING_PREFIX.rstrip("\n")), text("a"), IMAGE]
    assert content_of(steer) == "stop and use tabs"  # the stored message is not touched


def test_unknown_roles_are_dropped() -> None:
    assert convert_to_llm([m(role="hologram")]) == []


def test_developer_maps_to_user_unless_the_model_has_a_developer_role() -> None:
    lowered = convert_to_llm([m(role="custom", customType="a.b", content="ctx", display=False), user("q")])
    plain = to_provider_messages(lowered, MODEL)
    assert plain[0] == {"role": "user", "content": "ctx", "timestamp": 7}
    dev_model = cast(ModelInfo, {**MODEL, "compat": {"supportsDeveloperRole": True}})
    assert to_provider_messages(lowered, dev_model)[0]["role"] == "developer"


def test_every_role_lowers_to_valid_provider_messages() -> None:
    every = [
        user("u"),
        m(role="developer", content="d"),
        assistant(text("a")),
        result("c", "r"),
        m(role="bashExecution", command="c", output="o", exitCode=0, cancelled=False, truncated=False),
        m(role="pythonExecution", code="c", output="o", exitCode=1, cancelled=False, truncated=False),
        m(role="custom", customType="a.b", content="c", display=True),
        m(role="hookMessage", customType="a.b", content="h", display=False),
        m(role="branchSummary", summary="b", fromId="x"),
        m(role="compactionSummary", summary="s", tokensBefore=1),
        m(role="fileMention", files=[{"path": "f", "content": "c"}]),
    ]
    decode_messages(every)  # the inputs are valid wire messages of all 11 roles
    out = lower_for(MODEL)(every)
    assert len(out) == 11
    assert {x["role"] for x in out} == {"user", "assistant", "toolResult"}
    decode_messages(out)  # and so are the outputs
