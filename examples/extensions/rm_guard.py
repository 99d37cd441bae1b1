"""A guard that asks before ``rm -rf``: a ``tool_call`` hook sees every call before it runs.

The question goes wherever the user is: a dialog in the terminal, an ``extension_ui_request``
over RPC, a permission request in an ACP editor. In print mode nobody can answer, so the
answer is no and the command is blocked; the model is told why.
"""

from __future__ import annotations

import re

from tether.agent import BeforeToolCallContext, BeforeToolCallResult
from tether.session import ExtensionAPI

DANGEROUS = re.compile(r"\brm\s+(-[a-zA-Z]*r[a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*r|-r\s+-f|-f\s+-r)\b")


def setup(api: ExtensionAPI) -> None:
    @api.on("tool_call")
    async def guard(context: BeforeToolCallContext) -> BeforeToolCallResult | None:
        if context.tool_call["name"] != "bash":
            return None
        command = str(context.args.get("command", ""))
        if not DANGEROUS.search(command):
            return None
        if await api.ui.confirm("Allow dangerous command?", command):
            return None
        return BeforeToolCallResult(block=True, reason=f"The user did not allow `{command}`.")
