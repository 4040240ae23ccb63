"""Notificatie ids: UUIDv7 (RFC 9562 §5.7), made by the intake before it seals."""

import os
import time
import uuid

_RAND_BITS = 74  # rand_a (12 bits) and rand_b (62 bits)
_RAND_B_BITS = 62
_VERSION_AND_VARIANT = 0x7 << 76 | 0b10 << 62


def new_notificatie_ids(count: int) -> list[uuid.UUID]:
    """`count` fresh UUIDv7s, ascending: 48-bit Unix milliseconds, version 7, 74 random bits.

    Time-ordered rather than random (v4) ids, so PostgreSQL inserts them at the right edge of
    the primary key's B-tree (and of every other index on the id) instead of on random pages.
    The random bits of all ids come from one os.urandom call; sorting them makes the ids of a
    batch, which share their millisecond, ascend as well. The id carries no personal data: the
    DV learns nothing from its timestamp that the intake answer does not already tell it.
    """
    prefix = (time.time_ns() // 1_000_000 & (1 << 48) - 1) << 80 | _VERSION_AND_VARIANT
    randomness = os.urandom(10 * count)  # 80 bits per id, of which 74 are used
    tails = sorted(
        int.from_bytes(randomness[i : i + 10], "big") >> (80 - _RAND_BITS)
        for i in range(0, 10 * count, 10)
    )
    rand_b_mask = (1 << _RAND_B_BITS) - 1
    return [
        uuid.UUID(int=prefix | (tail >> _RAND_B_BITS) << 64 | tail & rand_b_mask) for tail in tails
    ]
