"""tether.tools."""
