"""Typed results: ``AgentSession.run(prompt, output=SomeModel)`` returns a validated instance.

The model answers by calling one more tool, ``final_answer``, whose JSON Schema is the pydantic
model's; the loop validates its arguments as it does any tool's, and a call that does not
validate comes back to the model as an error result naming what was wrong, so it can try again.
That works the same on every API, since every API has tool calls. What is bounded:

- invalid answers: ``max_reasks`` error results, then the run is aborted;
- a reply that ends without calling the tool: re-asked with a short reminder, also counted in
  ``max_reasks``;
- a failed or aborted reply (after the session's retries): raised at once.

Each outcome that is not an answer raises ``OutputError`` saying which: a ``TetherError`` that
is not a ``UserError`` (the program did nothing wrong; the model or its provider did).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from tether.agent import AgentTool, AgentToolResult
from tether.errors import TetherError, UserError

if TYPE_CHECKING:
    from pydantic import BaseModel


M = TypeVar("M", bound="BaseModel")

FINAL_ANSWER = "final_answer"

OutputFailure = Literal["failed", "aborted", "invalid", "missing"]


class OutputError(TetherError):
    """A typed run ended without a valid answer; ``reason`` says how (the message says why):
    ``failed`` (the model call failed, retries included), ``aborted``, ``invalid`` (the answers
    did not validate ``max_reasks + 1`` times), ``missing`` (the model never gave one)."""

    def __init__(self, message: str, reason: OutputFailure) -> None:
        super().__init__(message)
        self.reason: OutputFailure = reason


@dataclass
class AnswerSlot(Generic[M]):
    """What ``final_answer`` received: the validated answer, and how many invalid ones before."""

    output: type[M]
    answer: M | None = None
    invalid: int = 0
    errors: list[str] = field(default_factory=lambda: [])


def final_answer_tool(slot: AnswerSlot[Any]) -> AgentTool:
    """The tool the model answers with; its arguments are the answer (validated by the loop).
    An ``output`` that is no pydantic model is the program's mistake, said here in one line: the
    loop would fail on its schema at the first model call, and ``run`` would report that as a
    failed model call (``OutputError``, ``failed``)."""
    from pydantic import BaseModel

    output = slot.output  # what the program passed, whatever its annotation says: maybe no class
    if not (inspect.isclass(output) and issubclass(output, BaseModel)):
        raise UserError(f"output must be a pydantic model class (a BaseModel subclass), not {output!r}")

    async def execute(tool_call_id: str, params: Any, signal: Any, on_update: Any) -> AgentToolResult[Any]:
        slot.answer = params
        return AgentToolResult(content=[{"type": "text", "text": "Answer recorded."}], terminate=True)

    doc = (slot.output.__doc__ or "").strip()
    return AgentTool(
        name=FINAL_ANSWER,
        label="final answer",
        description=(
            "Give your final answer by calling this tool once; its arguments are the answer."
            + (f" The answer: {doc}" if doc else "")
        ),
        parameters=slot.output,
        execute=execute,
        execution_mode="sequential",
    )


INSTRUCTION = f"\n\nWhen you have the answer, give it by calling the `{FINAL_ANSWER}` tool."
REMINDER = f"Give your answer now by calling the `{FINAL_ANSWER}` tool, with arguments matching its schema."
