"""The size of an HTTP body once decoded, counted while it arrives.

A small ``Content-Encoding: gzip`` body can inflate to gigabytes, and the HTTP client decodes
it only when it is read: a bound on the bytes received stops nothing. ``DecodedSize`` inflates
each chunk again, in steps of at most ``STEP`` bytes and never past the bound, only to count
what the client is about to make of it (the client still decodes the same bytes itself). The
model clients (``llm/_body_bound.py``) and the MCP HTTP client (``mcp/_http_limits.py``) count
their answers with it.
"""

from __future__ import annotations

import zlib

#: The most bytes one inflating step makes while a compressed body is counted.
STEP = 1 << 20

#: zlib's window setting for each content coding it can count.
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class DecodedSize:
    """The decoded size of a body in ``coding`` so far; counting stops once it passes
    ``limit``. A coding it cannot inflate (``br``, ``zstd``, stacked codings) is counted by its
    bytes as received; data that is not what its coding says is left for the client to refuse."""

    def __init__(self, coding: str, limit: int) -> None:
        self.size = 0
        self._limit = limit
        coding = coding.strip().lower()
        wbits = _WBITS.get(coding)
        self._inflate = zlib.decompressobj(wbits) if wbits is not None else None
        self._raw_deflate = coding == "deflate"  # zlib-wrapped or raw: clients take both

    def add(self, chunk: bytes) -> int:
        """Count ``chunk`` (as received); the decoded size so far."""
        if self._inflate is None:
            self.size += len(chunk)
            return self.size
        data = chunk
        while data and self.size <= self._limit:
            try:
                self.size += len(self._inflate.decompress(data, STEP))
            except zlib.error:
                if not self._raw_deflate:  # not what it says: the client's decoder will say so
                    self._inflate = None  # counted by its bytes from here on
                    self.size += len(data)
                    return self.size
                self._raw_deflate = False
                self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            data = self._inflate.unconsumed_tail
        return self.size


__all__ = ["STEP", "DecodedSize"]
