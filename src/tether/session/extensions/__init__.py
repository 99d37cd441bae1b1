"""Python extensions: modules that add tools, slash commands, providers and hooks to a session.

``api`` is what an extension sees, ``loader`` finds and imports them, ``host`` calls into them
on the core's behalf; ``entry_points`` finds installed ones cheaply. See docs/extensions.md.
"""
