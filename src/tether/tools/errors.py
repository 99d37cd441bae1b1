"""The tools' own error beside the family's ``ToolError`` (``tether.errors``), which is the one
exception type the tools raise on purpose."""

from tether.errors import ToolError


class PathOutsideWorkspace(ToolError):
    """A tool was asked to touch a path outside the workspace without the user's permission."""
