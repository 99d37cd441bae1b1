"""A slash command: ``/todos`` lists the TODO and FIXME lines of the workspace's Python files;
``/todos fix`` asks the agent to fix the first one.

A command's handler gets the text after its name and a context: ``ctx.send(prompt)`` runs the
agent, and a returned string is shown to the user (in every mode: printed, an RPC ``notify``,
an ACP message).
"""

from __future__ import annotations

from tether.session import CommandContext, ExtensionAPI

MARKERS = ("TODO", "FIXME")


def setup(api: ExtensionAPI) -> None:
    @api.command("todos", description="List TODO/FIXME lines; /todos fix asks the agent to fix the first")
    async def todos(args: str, ctx: CommandContext) -> str:
        found: list[str] = []
        for path in sorted(ctx.cwd.rglob("*.py")):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            for number, line in enumerate(lines, 1):
                if any(marker in line for marker in MARKERS):
                    found.append(f"{path.relative_to(ctx.cwd)}:{number}: {line.strip()}")
        if not found:
            return "no TODO or FIXME in the workspace"
        if args.strip() == "fix":
            await ctx.send(f"Fix this and remove the marker: {found[0]}")
            return f"asked the agent to fix {found[0].split(': ')[0]}"
        return "\n".join(found)
