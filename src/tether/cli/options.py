"""What the user asked for on the command line, as one typed value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

if TYPE_CHECKING:
    from tether.session.factory import SessionOptions

Mode = Literal["interactive", "print", "json", "rpc", "acp"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    prompt: str | None = None
    mode: Mode = "interactive"
    model: str | None = None
    thinking: str | None = None
    continue_: bool = False
    resume: str | None = None
    """``None``: not asked; ``""``: pick from a list; else the session id."""
    session_id: str | None = None
    no_session: bool = False
    tools: tuple[str, ...] | None = None
    system_prompt: str | None = None
    cwd: Path | None = None
    yes: bool = False
    stream: bool | None = None
    """Print mode: write text as it streams. ``None``: when stdout is a terminal."""
    mcp_config: Path | None = None
    no_mcp: bool = False
    follow: bool = False
    """RPC mode: watch ``--session ID`` read-only while another process runs it."""
    no_extensions: bool = False
    """``--no-extensions``: load no extension from folders or installed packages."""
    extensions: tuple[Path, ...] = ()
    """``-e PATH``: extensions loaded for this run."""

    def session_options(self) -> SessionOptions:
        """What every session of this run is started with (``--yes``: approve everything)."""
        from tether.session.factory import SessionOptions

        return SessionOptions(
            self.model,
            self.thinking,
            self.tools,
            self.system_prompt,
            "yes" if self.yes else None,
            mcp=not self.no_mcp,
            mcp_config=self.mcp_config,
            extensions=not self.no_extensions,
            extension_paths=self.extensions,
        )

    @classmethod
    def from_click(cls, words: tuple[str, ...], values: Mapping[str, object]) -> RunOptions:
        def text(key: str) -> str | None:
            value = values.get(key)
            return value if isinstance(value, str) else None

        prompt = " ".join(words) if words else None
        mode: Mode = "interactive"
        if values.get("mode") in ("json", "rpc", "acp"):
            mode = cast(Mode, values["mode"])
        elif values.get("print_mode"):
            mode = "print"
        tools_text = text("tools")
        tools = None if tools_text is None else tuple(t.strip() for t in tools_text.split(",") if t.strip())
        cwd = text("cwd")
        mcp_config = text("mcp_config")
        return cls(
            prompt=prompt,
            mode=mode,
            model=text("model"),
            thinking=text("thinking"),
            continue_=bool(values.get("continue_")),
            resume=text("resume"),
            session_id=text("session_id"),
            no_session=bool(values.get("no_session")),
            follow=bool(values.get("follow")),
            tools=tools,
            system_prompt=text("system_prompt"),
            cwd=Path(cwd).resolve() if cwd else None,
            yes=bool(values.get("yes")),
            mcp_config=Path(mcp_config).resolve() if mcp_config else None,
            no_mcp=bool(values.get("no_mcp")),
            no_extensions=bool(values.get("no_extensions")),
            extensions=tuple(
                Path(str(p)).resolve() for p in cast(tuple[object, ...], values.get("extension") or ())
            ),
        )
