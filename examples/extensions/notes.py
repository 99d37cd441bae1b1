"""Notes for the agent, and what it is doing in the status line: pi's display calls.

``/note`` opens an editor (a time-limited one: an unanswered editor closes by itself) and sends
what you wrote with your next prompt as the extension's own message, shown in a widget until
then. While the agent works, the status line says which tool runs. ``alt+n`` in the terminal
puts ``/note`` in the input box. Over RPC these are pi's ``editor``, ``setStatus`` and ``setWidget``
frames; where there is no status line or widget (print mode, an ACP editor) they are dropped.
"""

from __future__ import annotations

from typing import Any

from tether.session import CommandContext, ExtensionAPI

EDITOR_TIMEOUT = 300.0
"""Seconds the editor stays open unanswered."""


def setup(api: ExtensionAPI) -> None:
    @api.on("tool_execution_start")
    def running(event: dict[str, Any]) -> None:
        api.ui.set_status("notes", f"running {event['toolName']}")

    @api.on("agent_end")
    def done(event: dict[str, Any]) -> None:
        api.ui.set_status("notes", None)

    @api.on("before_run")
    def sent(context: Any) -> None:
        api.ui.set_widget("notes", None)  # the note goes with this prompt

    @api.command("note", description="Write a note the agent gets with your next prompt")
    async def note(args: str, ctx: CommandContext) -> str:
        text = await ctx.ui.editor("Note for the agent", args, timeout=EDITOR_TIMEOUT)
        if not text:
            return "no note"
        api.send_message(text, custom_type="notes.note", deliver_as="next_turn")
        ctx.ui.set_widget("notes", [f"note: {line}" for line in text.splitlines()])
        return "the note goes with your next prompt"

    async def note_key(ctx: CommandContext) -> None:
        ctx.ui.set_editor_text("/note ")

    api.register_shortcut("alt+n", note_key, description="start a /note")
