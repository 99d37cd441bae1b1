"""The editor's MCP server entries the ACP SDK drops without a word, said in the answer.

The SDK reads ``session/new`` and ``session/load`` ``mcpServers`` item by item and skips an item
it cannot read (no ``command``, an unknown ``type``, a ``url`` that is not a string): the
session was made without that server, and neither the editor nor its log heard why. The
transport, which sees the request before the SDK, finds those items here and adds a line for
each to the answer's ``_meta.tether.notice`` (where the skipped entries tether reads itself are
said), and logs it.
"""

from __future__ import annotations

from typing import Any, cast

from acp.schema import NewSessionRequest

SESSION_METHODS = ("session/new", "session/load")

NAME_SHOWN = 100
"""The most of an entry's name a line repeats."""


def unread_entries(request: dict[str, Any]) -> list[str]:
    """A line for each ``mcpServers`` item of a session request that the SDK will skip."""
    params = request.get("params")
    if request.get("method") not in SESSION_METHODS or not isinstance(params, dict):
        return []
    servers = cast(dict[str, Any], params).get("mcpServers")
    if not isinstance(servers, list):
        return []  # not a list at all: the SDK refuses the request, saying so
    lines: list[str] = []
    for number, item in enumerate(cast(list[object], servers), start=1):
        read = NewSessionRequest.model_validate({"cwd": "/", "mcpServers": [item]}).mcp_servers
        if not read:
            lines.append(
                f"the editor's MCP server {_named(item, number)} is not an entry ACP defines (skipped)"
            )
    return lines


def with_notes(response: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """``response`` (a session's answer) with ``notes`` first in ``_meta.tether.notice``."""
    result = response.get("result")
    if not isinstance(result, dict):
        return response  # an error: no session was made, the entries do not matter
    fields = cast(dict[str, Any], result)
    meta = cast(dict[str, Any], fields.get("_meta") or {})
    tether = cast(dict[str, Any], meta.get("tether") or {})
    notice = "\n".join([*notes, tether["notice"]] if tether.get("notice") else notes)
    return {**response, "result": {**fields, "_meta": {**meta, "tether": {**tether, "notice": notice}}}}


def _named(item: object, number: int) -> str:
    """How a line names an entry: its name if it has one, and its place in the list."""
    name = cast(dict[str, Any], item).get("name") if isinstance(item, dict) else None
    if not isinstance(name, str):
        return f"#{number}"
    shown = repr(name[:NAME_SHOWN]) + ("…" if len(name) > NAME_SHOWN else "")
    return f"{shown} (#{number})"
