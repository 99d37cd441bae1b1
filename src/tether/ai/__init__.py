"""tether.ai."""
