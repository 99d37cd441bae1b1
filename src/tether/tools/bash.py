"""``bash``: run a shell command in the workspace and return what it printed.

Output streams to ``on_update`` while the command runs (throttled, so a chatty build does not
flood the UI), and the final result keeps the head and the tail of long output with a note on
what was cut. A non-zero exit, a timeout or an abort fails the call, with the output so far in
the message: the model needs it most exactly then.
"""

import time
from pathlib import Path
from typing import Any, NotRequired

from typing_extensions import TypedDict

from tether.agent.tool import AgentTool, AgentToolResult, ToolUpdate
from tether.ai.abort import AbortSignal
from tether.errors import ToolError
from tether.tools.sandbox import WRITABLE, SandboxPolicy
from tether.tools.spool import MAX_SPOOL_BYTES
from tether.tools.truncate import MAX_BYTES, MAX_LINES, strip_ansi
from tether.tools.workspace import Workspace

DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 600.0
UPDATE_INTERVAL = 0.1
"""Seconds between two partial-output updates."""


class BashParams(TypedDict):
    command: str
    timeout: NotRequired[float | None]
    cwd: NotRequired[str | None]
    escalate: NotRequired[bool | None]
    justification: NotRequired[str | None]


BASH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The command line to run with bash -c."},
        "timeout": {
            "type": ["number", "null"],
            "exclusiveMinimum": 0,
            "maximum": MAX_TIMEOUT,
            "description": f"Seconds before the command is killed (default {DEFAULT_TIMEOUT:g}, max {MAX_TIMEOUT:g}).",
        },
        "cwd": {
            "type": ["string", "null"],
            "description": "Directory to run in, relative to the workspace root (default: the root).",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}


DESCRIPTION = (
    "Run a shell command (bash -c) in the workspace and return its combined stdout and stderr. stdin is "
    "closed, so interactive programs cannot wait for input. Long output keeps its first and last "
    f"{MAX_LINES // 2} lines (at most {MAX_BYTES // 1024} KB) with a note in between, and the full output "
    "is saved to a file whose path is given: search that file, or pipe through grep, head or tail. A non-zero exit status, a timeout or an abort is reported "
    "as an error together with the output. Prefer read, grep, find and ls for looking at files."
)


SANDBOX_PARAMETERS: dict[str, Any] = {
    "escalate": {
        "type": ["boolean", "null"],
        "description": "Run outside the sandbox (writes anywhere, network). The user is asked first: "
        "use it only after the command failed because the sandbox refused something.",
    },
    "justification": {
        "type": ["string", "null"],
        "description": "With escalate: one sentence telling the user why the command needs it.",
    },
}


SANDBOXED_BASH_PARAMETERS: dict[str, Any] = {
    **BASH_PARAMETERS,
    "properties": {**BASH_PARAMETERS["properties"], **SANDBOX_PARAMETERS},
}
"""What the model is sent when commands run confined: it may ask to run one outside."""


def sandbox_note(policy: SandboxPolicy) -> str:
    """What the model should know of the sandbox before it runs a command."""
    writable = f"{WRITABLE} are" if policy.mode == "workspace-write" else "only /tmp is"
    network = "the network is reachable" if policy.network else "there is no network"
    return (
        f" Commands run in a sandbox: {writable} writable, everything else is read-only, credentials "
        f"are hidden and {network}. If a command fails because the sandbox refused it, run it again "
        "with escalate: true and a justification (the user is asked)."
    )


def shell_argv(command: str) -> list[str]:
    """``bash -c command``, or ``sh -c`` where bash is not installed."""
    import shutil  # with its archive modules, loads with the first command rather than at start-up

    return [shutil.which("bash") or "/bin/sh", "-c", command]


def create_bash_tool(workspace: Workspace) -> AgentTool:
    async def execute(
        _tool_call_id: str, params: BashParams, signal: AbortSignal | None, on_update: ToolUpdate | None
    ) -> AgentToolResult[dict[str, Any]]:
        return await run_bash(workspace, params, signal, on_update)

    parameters, description = BASH_PARAMETERS, DESCRIPTION
    policy = workspace.sandbox
    if policy is not None and policy.active:
        parameters = SANDBOXED_BASH_PARAMETERS
        description += sandbox_note(policy)
    return AgentTool(
        name="bash",
        label="Bash",
        description=description,
        parameters=parameters,
        execute=execute,
        # pi 1.6 runs a turn's bash calls concurrently (approval is still asked call by call,
        # in order, before any of them runs)
        execution_mode="parallel",
    )


async def run_bash(
    workspace: Workspace, params: BashParams, signal: AbortSignal | None, on_update: ToolUpdate | None
) -> AgentToolResult[dict[str, Any]]:
    if not params["command"].strip():
        raise ToolError("command is empty.")
    cwd = workspace.resolve(cwd) if (cwd := params.get("cwd")) else workspace.real_root
    if not cwd.is_dir():
        raise ToolError(f"cwd {workspace.display(cwd)} is not a directory.")
    timeout = params.get("timeout") or DEFAULT_TIMEOUT
    from tether.tools.process import run_process  # subprocess and signal handling load with the first command

    live = _LiveOutput(on_update) if on_update is not None else None
    # An escalated call reaches here only once the user approved it (Workspace.needs_approval).
    sandbox = None if params.get("escalate") is True else workspace.confinement()
    result = await run_process(
        shell_argv(params["command"]),
        cwd=Path(cwd),
        timeout=timeout,
        signal=signal,
        on_output=live.feed if live is not None else None,
        env_passthrough=workspace.env_passthrough,
        spools=workspace.spools,
        sandbox=sandbox,
    )
    output = result.output or "(no output)"
    if result.full_output_path is not None:
        if result.total_bytes > MAX_SPOOL_BYTES:
            saved = (
                f"The first {MAX_SPOOL_BYTES // (1024 * 1024)} MB of the output ({result.total_bytes} bytes)"
            )
        else:
            saved = f"Full output ({result.total_bytes} bytes)"
        output += f"\n[{saved} saved to {result.full_output_path}]"
    elif result.spool_error is not None:
        output += f"\n[The full output ({result.total_bytes} bytes) could not be saved: {result.spool_error}]"
    details: dict[str, Any] = {
        "exitCode": result.exit_code,
        "truncated": result.truncated,
        "totalBytes": result.total_bytes,
    }
    if result.full_output_path is not None:
        details["fullOutputPath"] = str(result.full_output_path)
    if result.cancelled:
        raise ToolError(f"{output}\n\nCommand aborted; its process group was killed.")
    if result.timed_out:
        raise ToolError(
            f"{output}\n\nCommand timed out after {timeout:g} seconds; its process group was killed."
        )
    if result.exit_code != 0:
        hint = sandbox.hint(result.output) if sandbox is not None else None
        raise ToolError(
            f"{output}\n\nCommand exited with code {result.exit_code}." + (f"\n{hint}" if hint else "")
        )
    return AgentToolResult([{"type": "text", "text": output}], details)


class _LiveOutput:
    """Forwards the latest output to ``on_update`` at most every ``UPDATE_INTERVAL`` seconds."""

    def __init__(self, on_update: ToolUpdate) -> None:
        self._on_update = on_update
        self._tail = ""
        self._last = 0.0

    def feed(self, text: str) -> None:
        self._tail = (self._tail + strip_ansi(text))[-MAX_BYTES:]
        now = time.monotonic()
        if now - self._last >= UPDATE_INTERVAL:
            self._last = now
            self._on_update(AgentToolResult([{"type": "text", "text": self._tail}], {"partial": True}))
