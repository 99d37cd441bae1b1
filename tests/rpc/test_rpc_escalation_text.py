"""The escalation dialog's text for a command holding a lone surrogate (a model's JSON
``"\\ud800"``): the code point's escape, as the approval question shows it
(``tether.tools.approval.with_escapes``). It was sent raw, so the client got U+FFFD (the frame's
encoder has no UTF-8 form for it), which hides which code point the command holds."""

from __future__ import annotations

from tether.rpc.escalation import message
from tether.tools.sandbox import SandboxPolicy
from tether.wire import ToolCall


def test_the_command_and_the_reason_show_the_escape() -> None:
    arguments = {"command": "echo \ud800 é", "escalate": True, "justification": "needs \udcff"}
    call: ToolCall = {"type": "toolCall", "id": "1", "name": "bash", "arguments": arguments}
    text = message(call, SandboxPolicy())
    assert text.startswith("Command: echo \\ud800 é\nReason: needs \\udcff\n"), text
    text.encode()
