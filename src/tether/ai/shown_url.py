"""A provider's URL as messages and stored records show it.

A base URL may carry a credential (``http://user:pw@proxy/v1``, Gemini's ``?key=...``), and what
shows it (an error message, a session's model entry) is stored, streamed to JSON and RPC clients
and printed. A leaf of ``tether.ai``: the start-up path uses it without loading the transport.
"""

from __future__ import annotations

from urllib.parse import urlsplit


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
