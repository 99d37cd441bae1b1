"""What kind of file is this? Decided from its first bytes, never from its name.

A ``.png`` that is really text, or a ``notes`` file that is really a JPEG, is handled as what it
is. ``SNIFF_BYTES`` is enough for every signature here and for the binary check.
"""

from __future__ import annotations

SNIFF_BYTES = 8192

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime_type(head: bytes) -> str | None:
    """The MIME type of an image format every vision model accepts, else ``None``."""
    for signature, mime in _IMAGE_SIGNATURES:
        if head.startswith(signature):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def looks_binary(head: bytes) -> bool:
    """Git's heuristic: a NUL byte in the first block means binary."""
    return b"\x00" in head[:SNIFF_BYTES]
