"""The one place the version is written: ``pyproject.toml`` reads it from here (hatch's dynamic
version), and every layer that reports it (``tether --version``, telemetry, RPC, ACP, MCP, DBOS)
imports it from this leaf instead of from the front door, which would load every layer."""

__version__ = "0.1.0"
