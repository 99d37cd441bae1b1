"""A provider's URL as messages and stored records show it, and a model as a session stores it.

A base URL may carry a credential (``http://user:pw@proxy/v1``, Gemini's ``?key=...``), and what
shows it (an error message, a session's model entry) is stored, streamed to JSON and RPC clients
and printed. A leaf of ``tether.ai``: the start-up path uses it without loading the transport,
and a stored ``tether -p`` run without loading the model catalog (and pydantic with it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast
from urllib.parse import SplitResult, unquote_plus, urlsplit

from tether.wire.json_copy import copy_json

if TYPE_CHECKING:
    from tether.wire import ModelInfo


def shown_url(url: str) -> str:
    """``url`` for a message, without what may be a credential (``_credentials``): its user part
    becomes ``***`` and its query's values too. An error message is stored with the reply,
    streamed to JSON and RPC clients and printed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the provider's URL"
    user, pairs = _credentials(parts)
    netloc = parts.netloc if user is None else "***@" + parts.netloc.rpartition("@")[2]
    query = "&".join(name if value is None else f"{name}=***" for name, value in pairs)
    return parts._replace(netloc=netloc, query=query).geturl()


def secrets_of(url: str) -> list[str]:
    """What ``shown_url`` leaves out of ``url``: its user part, the user name and password in it,
    its query's values, each as written and decoded (``%40``, ``+``): a text that may echo
    the URL in part (a server's error body) loses them as well."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    user, pairs = _credentials(parts)
    written = [user, *user.split(":", 1)] if user else []
    written += [value for _, value in pairs if value is not None]
    return list(dict.fromkeys([*written, *map(unquote_plus, written)]))


def _credentials(parts: SplitResult) -> tuple[str | None, list[tuple[str, str | None]]]:
    """Where a URL may carry a credential: its user part (``http://u:pw@proxy/v1``; a bare
    ``https://TOKEN@host`` too; ``None``: no ``@``) and its query's pairs (``?key=...``, Gemini's
    way; value ``None``: a name alone), as written."""
    user = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else None
    pairs = [pair.partition("=") for pair in parts.query.split("&")] if parts.query else []
    return user, [(name, value if equals else None) for name, equals, value in pairs]


def stored_descriptor(model: ModelInfo) -> ModelInfo:
    """``model`` as a session stores it: without its headers (``models.json``'s may hold a key)
    and with its base URL shown without credentials (``shown_url``); ``tether.ai.models.
    restored_model`` takes neither from it. Always a copy: the session keeps it as its current
    model, so the live dict itself let a change made to it in place (an embedder raising
    ``contextWindow``) look recorded already, and the writer thread could encode it mid-change."""
    kept = cast(dict[str, Any], copy_json(model))
    kept.pop("headers", None)
    if "@" in model["baseUrl"] or "?" in model["baseUrl"]:
        kept["baseUrl"] = shown_url(model["baseUrl"])
    return cast("ModelInfo", kept)
