"""tether.session."""
