"""What the user asked for on the command line, as one typed value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, cast, overload

from tether.session.options import SessionOptions

Mode = Literal["interactive", "print", "json", "rpc", "acp"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What this run does; the choices of its sessions are ``session_options``, filled in from the
    flags field by field (each flag's meaning is said once, on ``SessionOptions``)."""

    prompt: str | None = None
    more_prompts: tuple[str, ...] = ()
    """Print and JSON modes: the positional words after the first, each a prompt of its own run
    after the one before, as pi runs them (interactive mode joins the words into one prompt)."""
    mode: Mode = "interactive"
    continue_: bool = False
    resume: str | None = None
    """``None``: not asked; ``""``: pick from a list; else the session id."""
    session_id: str | None = None
    no_session: bool = False
    name: str | None = None
    """``--name``: the session's display name, set once it is open (pi's ``--name``)."""
    cwd: Path | None = None
    stream: bool | None = None
    """Print mode: write text as it streams. ``None``: when stdout is a terminal."""
    follow: bool = False
    """RPC mode: watch ``--session ID`` read-only while another process runs it."""
    export: tuple[str, str | None] | None = None
    """``--export FILE [OUTPUT]``: write a session file (or stored session) as HTML and exit."""
    session_options: SessionOptions = field(default_factory=SessionOptions)
    """What every session of this run is started with (``--model``, ``--tools``, ``--yes``, ...)."""

    @classmethod
    def from_click(cls, words: tuple[str, ...], values: Mapping[str, object]) -> RunOptions:
        def text(key: str) -> str | None:
            value = values.get(key)
            return value if isinstance(value, str) else None

        words = tuple(valid_text(word) for word in words)
        export_file = text("export")
        if export_file is not None:  # pi: `--export FILE [OUTPUT]`, the output as the first word
            return cls(mode="print", export=(export_file, words[0] if words else None))
        mode: Mode = "interactive"
        if values.get("mode") in ("json", "rpc", "acp"):
            mode = cast(Mode, values["mode"])
        elif values.get("print_mode"):
            mode = "print"
        prompt = " ".join(words) if words else None
        more_prompts: tuple[str, ...] = ()
        if mode in ("print", "json") and words:
            prompt, more_prompts = words[0], words[1:]
        tools_text = text("tools")
        tools = None if tools_text is None else tuple(t.strip() for t in tools_text.split(",") if t.strip())
        cwd = text("cwd")
        mcp_config = text("mcp_config")
        models_text = text("models")
        appended = values.get("append_system_prompt")
        sources = cast(tuple[str, ...], appended) if isinstance(appended, tuple) else ()
        agent = SessionOptions(
            model=text("model"),
            provider=text("provider"),
            api_key=text("api_key"),
            models=tuple(m.strip() for m in models_text.split(",") if m.strip()) if models_text else None,
            thinking=text("thinking"),
            tools=tools,
            system_prompt=valid_text(text("system_prompt")),
            append_system_prompt=tuple(valid_text(_prompt_text(source)) for source in sources),
            context_files=not values.get("no_context_files"),
            approval="yes" if values.get("yes") else None,
            allow_outside=True if values.get("allow_outside") else None,
            mcp=not values.get("no_mcp"),
            mcp_config=Path(mcp_config).resolve() if mcp_config else None,
            sandbox=text("sandbox"),
            sandbox_network=True if values.get("sandbox_network") else None,
            sandbox_allow_hosts=tuple(
                str(h) for h in cast(tuple[object, ...], values.get("sandbox_allow_host") or ())
            ),
            extensions=not values.get("no_extensions"),
            extension_paths=tuple(
                Path(str(p)).resolve() for p in cast(tuple[object, ...], values.get("extension") or ())
            ),
            extension_flags=tuple(str(f) for f in cast(tuple[object, ...], values.get("flag") or ())),
        )
        return cls(
            prompt=prompt,
            more_prompts=more_prompts,
            mode=mode,
            continue_=bool(values.get("continue_")),
            resume=text("resume"),
            session_id=text("session_id"),
            no_session=bool(values.get("no_session")),
            name=text("name"),
            follow=bool(values.get("follow")),
            cwd=_workspace(cwd) if cwd else None,
            session_options=agent,
        )


@overload
def valid_text(text: str) -> str: ...
@overload
def valid_text(text: None) -> None: ...
def valid_text(text: str | None) -> str | None:
    """``text`` with what was not UTF-8 as U+FFFD, as pi (Node) decodes its arguments and stdin.

    Python hands over undecodable bytes of an argument as lone surrogates (``\\udcff``), which
    reached the session store and JSON mode's encoder as they were and failed the run there
    ("could not store session", a listener error per event)."""
    if text is None or text.isascii():
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a surrogate no decoding made (from a file read elsewhere)
        return text.encode("utf-8", "replace").decode("utf-8")


def _workspace(cwd: str) -> Path:
    """``--cwd``, which must be a folder: click's ``Path(file_okay=False)`` refuses only a regular
    file, so a FIFO or a device (``--cwd /dev/null``) became the session's folder, every tool
    failing in it ("cwd . is not a directory")."""
    import click

    path = Path(cwd).resolve()
    if not path.is_dir():
        raise click.BadParameter(f"{cwd!r} is not a directory.", param_hint="'--cwd'")
    return path


def _prompt_text(source: str) -> str:
    """A text, or the text of the file it names; an unreadable file is a usage error."""
    import click

    from tether.session.system_prompt import prompt_text

    try:
        return prompt_text(source)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot read {source}: {exc.strerror}", param_hint="--append-system-prompt"
        ) from None
