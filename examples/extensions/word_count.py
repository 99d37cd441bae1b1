"""A tool with its own parameters: ``count_words`` counts the words of a file in the workspace.

Load it for one run with ``tether -e examples/extensions/word_count.py``, or copy it into
``~/.config/tether/extensions/``. The parameters come from the function's signature, exactly as
for a tool of the library (``tether.agent.tool``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import Field

from tether.agent import tool
from tether.session import ExtensionAPI


def setup(api: ExtensionAPI) -> None:
    @api.register_tool
    @tool
    def count_words(
        path: Annotated[str, Field(description="File to count, relative to the workspace")],
        min_length: Annotated[int, Field(ge=1, description="Only count words this long or longer")] = 1,
    ) -> str:
        """Count the words of a text file in the workspace."""
        target = (api.cwd / path).resolve()
        if not target.is_relative_to(api.cwd.resolve()):
            raise ValueError(f"{path} is outside the workspace")
        words = [w for w in Path(target).read_text(encoding="utf-8").split() if len(w) >= min_length]
        return f"{path}: {len(words)} words of at least {min_length} letters"
