"""tether.rpc."""
