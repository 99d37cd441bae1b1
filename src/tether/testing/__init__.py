"""tether.testing."""
