"""Python extensions: modules that add tools, slash commands, providers and hooks to a session.

``api`` is what an extension sees, ``loader`` finds and imports them, ``host`` calls into them
on the core's behalf; ``tether.session.resources`` finds them. See docs/extensions.md.
"""
