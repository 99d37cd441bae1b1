"""tether.acp: ``tether --mode acp``, the Agent Client Protocol server for editors (Zed, JetBrains...).

Needs the ``acp`` extra (the official ``agent-client-protocol`` SDK). ``run_acp`` serves ACP on
stdio; each ACP session is an ``AgentSession`` (``tether.session``) on an ordinary stored session.
The modules: ``server`` answers the protocol's methods, ``session`` is one ACP session's work,
``updates`` builds the ``session/update`` payloads, ``tools`` routes file and terminal access
through the editor, ``transport`` answers unreadable input.
"""
