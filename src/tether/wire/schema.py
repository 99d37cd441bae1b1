"""JSON Schema bundle of the wire types (placeholder until the generator lands)."""

from __future__ import annotations


def bundle_json() -> str:
    raise NotImplementedError


def summary() -> str:
    raise NotImplementedError
