"""Where the leaf may move: never to a point that leaves a tool call without its result.

A path that ends after an assistant message's tool calls but before all their results would
make the next request invalid on every provider (a call with no answer). ``settle_leaf`` moves
such a target forward along the tree through the missing results when the tree has them, and
refuses otherwise, naming the calls. Assistant messages that ended in ``error``/``aborted`` owe
no results: the loop never executes their calls.
"""

from __future__ import annotations

from typing import Any, cast

from tether.store.store import SessionError
from tether.store.tree import EntryTree, Node


class BranchError(SessionError):
    """The requested branch point would leave tool calls without results."""


def pending_tool_calls(path: list[Node]) -> dict[str, str]:
    """Tool calls (id → name) at the end of ``path`` that have no result after them."""
    pending: dict[str, str] = {}
    for node in path:
        message = node.message
        if message is None:
            continue
        role = message.get("role")
        if role == "assistant":
            pending = {}
            if message.get("stopReason") in ("error", "aborted"):
                continue
            for block in cast(list[Any], message.get("content") or []):
                if isinstance(block, dict) and block.get("type") == "toolCall":  # pyright: ignore[reportUnknownMemberType]
                    call = cast(dict[str, Any], block)
                    pending[str(call.get("id"))] = str(call.get("name"))
        elif role == "toolResult":
            pending.pop(str(message.get("toolCallId")), None)
    return pending


def settle_leaf(tree: EntryTree, target: str | None) -> str | None:
    """``target``, or the first descendant that completes its open tool calls."""
    if target is None:
        return None
    path = tree.path(target)
    pending = pending_tool_calls(path)
    leaf = target
    while pending:
        step = _result_child(tree, leaf, pending)
        if step is None:
            calls = ", ".join(f"{name} ({call_id})" for call_id, name in pending.items())
            raise BranchError(
                f"entry {target!r} leaves tool calls without results: {calls}; "
                "branch to the entry before the assistant message or after its last tool result"
            )
        message = step.message or {}
        pending.pop(str(message.get("toolCallId")), None)
        leaf = step.id
    return leaf


def _result_child(tree: EntryTree, entry_id: str, pending: dict[str, str]) -> Node | None:
    """The next result of a pending call below ``entry_id``, looking through entries that are not
    messages (a label or setting appended while the tools ran)."""
    for child in tree.children(entry_id):
        message = child.message
        if message is None:
            found = _result_child(tree, child.id, pending)
            if found is not None:
                return found
        elif message.get("role") == "toolResult" and message.get("toolCallId") in pending:
            return child
    return None
