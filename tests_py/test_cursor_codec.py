"""The cursor codec (nmc.feed.cursor_codec) under both cursors: tokens handed out before the
list and the feed cursor shared it still decode (a DV keeps its cursor across an upgrade), the same
positions still encode to the same strings, and no kind of cursor passes for another."""

import base64
import uuid
from datetime import UTC, datetime

import pytest

from nmc.api import lijst_cursor
from nmc.crypto.peppers import parse_peppers
from nmc.feed.cursor_codec import Codec, InvalidCursor, Keys, Layout
from nmc.feed.feed_cursor import CursorCodec, Position


def _key(byte: int) -> str:
    return base64.b64encode(bytes([byte]) * 32).decode("ascii")


# Without a `cursor` pepper (the key derived from the dvref pepper), and with one.
DERIVED = parse_peppers({"dvref": {"current": 1, "versions": {"1": _key(1)}}})
OWN = parse_peppers(
    {
        "dvref": {"current": 1, "versions": {"1": _key(1)}},
        "cursor": {"current": 3, "versions": {"3": _key(3)}},
    }
)
POSITION = Position(
    epoch=3, xid=2**63 + 5, event_id=42, uitgegeven_op=datetime(2025, 3, 1, 9, 0, 7, 123456, UTC)
)
NA = uuid.UUID("0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0")
LISTED = (
    datetime(2026, 3, 1, 9, 0, 0, 123456, UTC),
    uuid.UUID("8a7b6c5d-4e3f-4a1b-9c8d-7e6f5a4b3c2d"),
)
BEFORE_1970 = (datetime(1969, 12, 31, 23, 59, 59, 1, UTC), LISTED[1])

# Made by the codecs as they were before they shared nmc.feed.cursor_codec (DV 7).
OLD_FEED = {
    "derived": "AYABAAAABwAAAAOAAAAAAAAABQAAAAAAAAAqAAYvRCZM9gDR-4FFmAvOofHwH5A-odqt",
    "own": "AQADAAAABwAAAAOAAAAAAAAABQAAAAAAAAAqAAYvRCZM9gCrz4t87Bp8yb88IMmwiFZL",
}
OLD_SNAPSHOT = {
    "derived": "AoABAAAABwAAAAOAAAAAAAAABQAAAAAAAAAqAAYvRCZM9gAPHi08S1pJaId2pbTD0uHw"
    "XUt-4ImsmkwU0vHr5YcxtA",
    "own": "AgADAAAABwAAAAOAAAAAAAAABQAAAAAAAAAqAAYvRCZM9gAPHi08S1pJaId2pbTD0uHw"
    "S45PWMUma-npV0l3nC_0Eg",
}
OLD_LIST = "AQAGS_Kx9gZAintsXU4_ShucjX5vWks8LQ"
OLD_LIST_BEFORE_1970 = "Af______8L3BintsXU4_ShucjX5vWks8LQ"
PEPPERS = {"derived": DERIVED, "own": OWN}


@pytest.mark.parametrize("keyed", ["derived", "own"])
def test_an_old_feed_cursor_and_snapshot_token_decode_and_encode_alike(keyed):
    codec = CursorCodec(PEPPERS[keyed])
    assert codec.decode(7, OLD_FEED[keyed]) == POSITION
    assert codec.decode_snapshot(7, OLD_SNAPSHOT[keyed]) == (POSITION, NA)
    assert codec.encode(7, POSITION) == OLD_FEED[keyed]
    assert codec.encode_snapshot(7, POSITION, NA) == OLD_SNAPSHOT[keyed]


def test_an_old_feed_cursor_stays_valid_once_a_cursor_pepper_is_added():
    assert CursorCodec(OWN).decode(7, OLD_FEED["derived"]) == POSITION


def test_an_old_list_cursor_decodes_and_encodes_alike():
    assert lijst_cursor.decode(OLD_LIST) == LISTED
    assert lijst_cursor.decode(OLD_LIST_BEFORE_1970) == BEFORE_1970
    assert lijst_cursor.encode(*LISTED) == OLD_LIST
    assert lijst_cursor.encode(*BEFORE_1970) == OLD_LIST_BEFORE_1970


def test_no_kind_of_cursor_passes_for_another():
    feed = CursorCodec(OWN)
    for token in (OLD_LIST, lijst_cursor.encode(*LISTED)):
        with pytest.raises(InvalidCursor):
            feed.decode(7, token)
        with pytest.raises(InvalidCursor):
            feed.decode_snapshot(7, token)
    for token in (*OLD_FEED.values(), *OLD_SNAPSHOT.values()):
        with pytest.raises(InvalidCursor):
            lijst_cursor.decode(token)
    with pytest.raises(InvalidCursor):
        feed.decode(7, OLD_SNAPSHOT["own"])
    with pytest.raises(InvalidCursor):
        feed.decode_snapshot(7, OLD_FEED["own"])


def test_a_cursor_stays_bound_to_its_dv():
    feed = CursorCodec(OWN)
    with pytest.raises(InvalidCursor, match="another DV"):
        feed.decode(8, OLD_FEED["own"])
    with pytest.raises(InvalidCursor, match="another DV"):
        feed.decode_snapshot(8, OLD_SNAPSHOT["own"])


LAYOUT = Layout(kind=0x05, fields="qi")
KEYS = Keys({1: b"k" * 32, 2: b"l" * 32}, current=2, context=b"test/v1\x00")


def test_an_open_and_a_sealed_codec_refuse_each_others_tokens():
    sealed, open_ = Codec(KEYS), Codec()
    assert sealed.decode(LAYOUT, sealed.encode(LAYOUT, -1, 9)) == (-1, 9)
    assert open_.decode(LAYOUT, open_.encode(LAYOUT, -1, 9)) == (-1, 9)
    with pytest.raises(InvalidCursor):
        sealed.decode(LAYOUT, open_.encode(LAYOUT, -1, 9))
    with pytest.raises(InvalidCursor):
        open_.decode(LAYOUT, sealed.encode(LAYOUT, -1, 9))
    other_kind = Layout(kind=0x06, fields="qi")
    with pytest.raises(InvalidCursor, match="unknown format"):
        sealed.decode(other_kind, sealed.encode(LAYOUT, -1, 9))


def test_a_sealed_token_names_its_key_and_opens_under_it_only():
    old = Codec(Keys({1: KEYS.by_id[1]}, current=1, context=KEYS.context))
    token = old.encode(LAYOUT, 1, 2)
    assert Codec(KEYS).decode(LAYOUT, token) == (1, 2)  # key 1 is still configured
    with pytest.raises(InvalidCursor, match="not authentic"):
        Codec(Keys({2: KEYS.by_id[2]}, current=2, context=KEYS.context)).decode(LAYOUT, token)
    with pytest.raises(InvalidCursor, match="not authentic"):
        Codec(Keys(KEYS.by_id, current=1, context=b"other/v1\x00")).decode(LAYOUT, token)


def test_a_field_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match="does not fit"):
        Codec().encode(LAYOUT, 0, 2**31)
