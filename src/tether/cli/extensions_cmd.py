"""``tether extensions list``: load this folder's extensions the way a session would, and say
what each one registers, and which could not load and why."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path


def print_extensions(cwd: Path, paths: Sequence[Path], *, discover: bool) -> int:
    """One block per extension (origin, tools, commands, providers, hooks), then the problems;
    exit status 1 when an extension failed to load."""
    from tether.ai.paths import config_dir
    from tether.session.resources import load_resources
    from tether.session.settings import load_settings

    resources = load_resources(
        cwd, config_dir(), load_settings(config_dir(), cwd), extensions=discover, extension_paths=paths
    )
    host = resources.extensions
    if host is None or not host.extensions:
        sys.stdout.write(
            f"no extensions (looked in {config_dir() / 'extensions'}, a trusted project's "
            ".tether/extensions and the tether.extensions entry points)\n"
            if discover
            else "no extensions\n"
        )
    for extension in host.extensions if host is not None else ():
        registered = extension.registered
        sys.stdout.write(f"{extension.name}  {extension.origin}\n")
        rows = [
            ("tools", [t.name for t in registered.tools]),
            ("commands", [f"/{c.name}" for c in registered.commands]),
            ("providers", [p.name for p in registered.providers]),
            ("hooks", [f"{event} ({len(hooks)})" for event, hooks in registered.hooks.items()]),
        ]
        for label, names in rows:
            if names:
                sys.stdout.write(f"  {label:<10} {', '.join(names)}\n")
    problems = host.problems if host is not None else []
    for problem in problems:
        sys.stderr.write(f"tether: {problem}\n")
    return 1 if problems else 0
