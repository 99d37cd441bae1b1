"""What the user asked for on the command line, as one typed value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

if TYPE_CHECKING:
    from tether.session.factory import SessionOptions

Mode = Literal["interactive", "print", "json", "rpc", "acp"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    prompt: str | None = None
    more_prompts: tuple[str, ...] = ()
    """Print and JSON modes: the positional words after the first, each a prompt of its own run
    after the one before, as pi runs them (interactive mode joins the words into one prompt)."""
    mode: Mode = "interactive"
    model: str | None = None
    thinking: str | None = None
    continue_: bool = False
    resume: str | None = None
    """``None``: not asked; ``""``: pick from a list; else the session id."""
    session_id: str | None = None
    no_session: bool = False
    name: str | None = None
    """``--name``: the session's display name, set once it is open (pi's ``--name``)."""
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
    provider: str | None = None
    api_key: str | None = field(default=None, repr=False)
    """``--api-key``: for this run only; never stored, logged or passed to tool processes."""
    models: tuple[str, ...] | None = None
    """``--models a,b``: the patterns of the models Ctrl-P and RPC's ``cycle_model`` go through."""
    append_system_prompt: tuple[str, ...] = ()
    """``--append-system-prompt``, each a text or the text of the file it names."""
    no_context_files: bool = False
    allow_outside: bool = False
    sandbox: str | None = None
    """``--sandbox MODE``: overrides the ``sandbox`` setting's mode for this run."""
    sandbox_network: bool = False
    """``--sandbox-network``: confined commands may use the network."""
    sandbox_allow_hosts: tuple[str, ...] = ()
    """``--sandbox-allow-host HOST``: hosts confined commands may reach over HTTP(S)."""
    export: tuple[str, str | None] | None = None
    """``--export FILE [OUTPUT]``: write a session file (or stored session) as HTML and exit."""
    no_extensions: bool = False
    """``--no-extensions``: load no extension from folders or installed packages."""
    extensions: tuple[Path, ...] = ()
    """``-e PATH``: extensions loaded for this run."""
    flags: tuple[str, ...] = ()
    """``--flag NAME[=VALUE]``: extensions' flags."""

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
            provider=self.provider,
            api_key=self.api_key,
            models=self.models,
            append_system_prompt=self.append_system_prompt,
            context_files=not self.no_context_files,
            allow_outside=True if self.allow_outside else None,
            sandbox=self.sandbox,
            sandbox_network=True if self.sandbox_network else None,
            sandbox_allow_hosts=self.sandbox_allow_hosts,
            extensions=not self.no_extensions,
            extension_paths=self.extensions,
            extension_flags=self.flags,
        )

    @classmethod
    def from_click(cls, words: tuple[str, ...], values: Mapping[str, object]) -> RunOptions:
        def text(key: str) -> str | None:
            value = values.get(key)
            return value if isinstance(value, str) else None

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
        return cls(
            prompt=prompt,
            more_prompts=more_prompts,
            mode=mode,
            model=text("model"),
            thinking=text("thinking"),
            continue_=bool(values.get("continue_")),
            resume=text("resume"),
            session_id=text("session_id"),
            no_session=bool(values.get("no_session")),
            name=text("name"),
            follow=bool(values.get("follow")),
            tools=tools,
            system_prompt=text("system_prompt"),
            cwd=Path(cwd).resolve() if cwd else None,
            yes=bool(values.get("yes")),
            mcp_config=Path(mcp_config).resolve() if mcp_config else None,
            no_mcp=bool(values.get("no_mcp")),
            provider=text("provider"),
            api_key=text("api_key"),
            models=tuple(m.strip() for m in models_text.split(",") if m.strip()) if models_text else None,
            append_system_prompt=tuple(_prompt_text(source) for source in sources),
            no_context_files=bool(values.get("no_context_files")),
            allow_outside=bool(values.get("allow_outside")),
            sandbox=text("sandbox"),
            sandbox_network=bool(values.get("sandbox_network")),
            sandbox_allow_hosts=tuple(
                str(h) for h in cast(tuple[object, ...], values.get("sandbox_allow_host") or ())
            ),
            no_extensions=bool(values.get("no_extensions")),
            extensions=tuple(
                Path(str(p)).resolve() for p in cast(tuple[object, ...], values.get("extension") or ())
            ),
            flags=tuple(str(f) for f in cast(tuple[object, ...], values.get("flag") or ())),
        )


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
