"""Vectors between the store's float32 bytes and pgvector's text form, exactly: a float32 printed
with the shortest repr that round-trips reads back as the same float32 (and pgvector prints its
floats that way too), so a vector exported and imported again is the same bytes."""

from __future__ import annotations

import numpy as np


def to_pg(blob: bytes) -> str:
    """float32 bytes → '[x,y,…]' for a `%s::vector` parameter."""
    values = np.frombuffer(blob, dtype=np.float32)
    return "[" + ",".join(repr(float(v)) for v in values) + "]"


def query_to_pg(vector: np.ndarray) -> str:
    return to_pg(np.asarray(vector, dtype=np.float32).tobytes())


def from_pg(text: str) -> bytes:
    """'[x,y,…]' (a vector cast to text) → float32 bytes."""
    return np.array(text.strip("[]").split(","), dtype=np.float32).tobytes()
