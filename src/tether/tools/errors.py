"""The one exception type the tools raise on purpose.

The agent loop turns any exception from ``execute`` into an error tool result whose text is the
exception's message, so a ``ToolError`` message is written for the model: what went wrong, where,
and what to do instead.
"""


class ToolError(Exception):
    """A tool call that cannot be carried out; the message tells the model why."""


class PathOutsideWorkspace(ToolError):
    """A tool was asked to touch a path outside the workspace without the user's permission."""
