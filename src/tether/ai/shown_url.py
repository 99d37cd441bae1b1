"""A provider's URL as messages and stored records show it, and a model as a session stores it.

A base URL may carry a credential (``http://user:pw@proxy/v1``, Gemini's ``?key=...``), and what
shows it (an error message, a session's model entry) is stored, streamed to JSON and RPC clients
and printed. A leaf of ``tether.ai``: the start-up path uses it without loading the transport,
and a stored ``tether -p`` run without loading the model catalog (and pydantic with it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from tether.wire import ModelInfo


def shown_url(url: str) -> str:
    """``url`` for a message, without what may be a credential: its user part
    (``http://u:pw@proxy/v1``) and the values of its query (``?key=...``, Gemini's way). An
    error message is stored with the reply, streamed to JSON and RPC clients and printed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the provider's URL"
    netloc = parts.netloc
    if "@" in netloc:  # a bare user part may be a token too (https://TOKEN@host)
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(
        f"{pair.split('=', 1)[0]}=***" if "=" in pair else pair for pair in parts.query.split("&")
    )
    return parts._replace(netloc=netloc, query=query if parts.query else "").geturl()


def stored_descriptor(model: ModelInfo) -> ModelInfo:
    """``model`` as a session stores it: without its headers (``models.json``'s may hold a key)
    and with its base URL shown without credentials (``shown_url``); ``tether.ai.models.
    restored_model`` takes neither from it."""
    if "headers" not in model and "@" not in model["baseUrl"] and "?" not in model["baseUrl"]:
        return model
    kept = cast(dict[str, Any], {k: v for k, v in model.items() if k != "headers"})
    kept["baseUrl"] = shown_url(model["baseUrl"])
    return cast("ModelInfo", kept)
