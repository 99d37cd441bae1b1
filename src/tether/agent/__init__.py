"""tether.agent."""
