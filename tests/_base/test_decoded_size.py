"""``DecodedSize`` counts what a body becomes once decoded, while it arrives, and never inflates
far past its bound (a gzip bomb costs about the bound, not what it would inflate to)."""

from __future__ import annotations

import gzip
import zlib

import pytest

from agentensemble._base.decoded_size import STEP, DecodedSize

BODY = b"x" * 300_000


def raw_deflate(data: bytes) -> bytes:
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return squeeze.compress(data) + squeeze.flush()


@pytest.mark.parametrize(
    ("coding", "sent", "counted"),
    [
        ("", BODY, len(BODY)),
        ("identity", BODY, len(BODY)),
        ("gzip", gzip.compress(BODY), len(BODY)),
        (" GZIP ", gzip.compress(BODY), len(BODY)),  # as a header may spell it
        ("deflate", zlib.compress(BODY), len(BODY)),  # zlib-wrapped
        ("deflate", raw_deflate(BODY), len(BODY)),  # raw, which clients take too
        ("br", b"\x1b" * 1000, 1000),  # a coding it cannot inflate: its bytes
        ("gzip", b"not gzip at all", len(b"not gzip at all")),  # the client will refuse it
    ],
)
def test_the_decoded_size_is_counted_chunk_by_chunk(coding: str, sent: bytes, counted: int) -> None:
    size = DecodedSize(coding, limit=10_000_000)
    for start in range(0, len(sent), 1000):
        size.add(sent[start : start + 1000])
    assert size.size == counted


def test_a_bomb_is_counted_only_a_step_past_the_bound() -> None:
    bomb = gzip.compress(b"\0" * 200_000_000)  # ~200 kB that would inflate to 200 MB
    size = DecodedSize("gzip", limit=1_000_000)
    size.add(bomb)
    assert 1_000_000 < size.size <= 1_000_000 + STEP
