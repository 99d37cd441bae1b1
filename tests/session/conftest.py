"""The session tests run on every store backend: the fixtures are ``store_fixtures``'."""

from store_fixtures import db_path, manager, postgres_url, store_location, tether_home

__all__ = ["db_path", "manager", "postgres_url", "store_location", "tether_home"]
