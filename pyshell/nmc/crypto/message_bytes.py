"""The checks and encodings shared by the envelope's AADs and the peppered HMACs' messages.

Both put the DV's id in as 8 bytes, big endian, and text as UTF-8; a value that does not fit
is refused before any key is touched.
"""

_BIGINT_MIN, _BIGINT_MAX = -(2**63), 2**63 - 1


def check_dv_id(dv_id: int) -> None:
    """Refuse a dv_id that is not an int fitting a bigint (what `to_bytes(8, ...)` needs)."""
    if isinstance(dv_id, bool) or not isinstance(dv_id, int):
        raise TypeError("dv_id must be an int")
    if not _BIGINT_MIN <= dv_id <= _BIGINT_MAX:
        raise ValueError("dv_id must fit a bigint")


def utf8(text: str) -> bytes:
    """`text` as UTF-8; ValueError (naming no content) for an unpaired surrogate."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text contains an unpaired surrogate") from None
