"""A prompt hook that tells the model today's date, as a synthetic message.

The hook edits each request just before it goes to the model, through a ``PromptEditor``: the
message it adds is marked synthetic and lives in that request only, so it is never stored in the
session and the system prompt (and with it the provider's prompt cache) stays the same every day.
"""

from __future__ import annotations

import datetime

from tether.session import ExtensionAPI, PromptEditor


def setup(api: ExtensionAPI) -> None:
    @api.on("prompt")
    def add_date(editor: PromptEditor) -> None:
        today = datetime.date.today().isoformat()
        editor.append({"role": "user", "parts": [{"type": "text", "text": f"(Today's date: {today})"}]})
