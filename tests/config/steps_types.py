"""A typed output for the crew-file tests (imported by path from a crew file)."""

from __future__ import annotations

from pydantic import BaseModel


class Verdict(BaseModel):
    approved: bool
    remarks: str
