"""Unit tests of nmc.feed.feed_cursor: round trips, authentication, DV binding, key rotation."""

import uuid
from datetime import UTC, datetime

import pytest

from nmc.crypto.peppers import new_peppers, parse_peppers
from nmc.crypto.secret_files import CryptoConfigError
from nmc.feed.feed_cursor import CursorCodec, InvalidCursor, Position

MOMENT = datetime(2025, 3, 1, 9, 0, 7, 123456, tzinfo=UTC)
POSITION = Position(epoch=3, xid=2**63 + 5, event_id=42, uitgegeven_op=MOMENT)


@pytest.fixture
def peppers():
    return parse_peppers(new_peppers())


def test_round_trip(peppers):
    codec = CursorCodec(peppers)
    token = codec.encode(7, POSITION)
    assert codec.decode(7, token) == POSITION
    assert len(token) <= 128 and token.isascii()
    na = uuid.uuid4()
    assert codec.decode_snapshot(7, codec.encode_snapshot(7, POSITION, na)) == (POSITION, na)


def test_encoding_is_deterministic(peppers):
    codec = CursorCodec(peppers)
    assert codec.encode(7, POSITION) == codec.encode(7, POSITION)


def test_another_dv_kind_or_key_is_refused(peppers):
    codec = CursorCodec(peppers)
    token = codec.encode(7, POSITION)
    with pytest.raises(InvalidCursor):
        codec.decode(8, token)
    with pytest.raises(InvalidCursor):
        codec.decode_snapshot(7, token)
    with pytest.raises(InvalidCursor):
        codec.decode(7, codec.encode_snapshot(7, POSITION, uuid.uuid4()))
    with pytest.raises(InvalidCursor):
        CursorCodec(parse_peppers(new_peppers())).decode(7, token)


def test_a_history_cursor_is_bound_to_its_notification_and_dv(peppers):
    codec = CursorCodec(peppers)
    mine = uuid.uuid4()
    token = codec.encode_geschiedenis(7, mine, 12, 3)
    assert codec.decode_geschiedenis(7, mine, token) == (12, 3)
    assert len(token) <= 128 and "." not in token
    for dv_id, notificatie_id in ((7, uuid.uuid4()), (8, mine)):
        with pytest.raises(InvalidCursor):
            codec.decode_geschiedenis(dv_id, notificatie_id, token)
    with pytest.raises(InvalidCursor):  # a feed cursor is no history cursor, nor back
        codec.decode_geschiedenis(7, mine, codec.encode(7, POSITION))
    with pytest.raises(InvalidCursor):
        codec.decode(7, token)
    with pytest.raises(InvalidCursor):
        codec.decode_geschiedenis(7, mine, codec.encode_geschiedenis(7, mine, -1, 0))


def test_every_changed_character_is_refused(peppers):
    codec = CursorCodec(peppers)
    token = codec.encode(7, POSITION)
    for index in range(len(token) - 1):  # the last character carries padding bits too
        changed = token[:index] + ("B" if token[index] == "A" else "A") + token[index + 1 :]
        with pytest.raises(InvalidCursor):
            codec.decode(7, changed)


@pytest.mark.parametrize("bad", ["", "!!", "A" * 129, "AAAA", "\u00e9" * 10])
def test_malformed_is_refused(peppers, bad):
    with pytest.raises(InvalidCursor):
        CursorCodec(peppers).decode(7, bad)


def test_a_cursor_pepper_added_later_keeps_old_cursors_valid():
    document = new_peppers()
    old = CursorCodec(parse_peppers(document))
    token = old.encode(7, POSITION)
    document.update(new_peppers(("cursor",)))
    new = CursorCodec(parse_peppers(document))
    assert new.decode(7, token) == POSITION
    assert new.encode(7, POSITION) != token, "new cursors use the cursor pepper"


def test_position_from_a_page():
    page = {"epoch": 1, "xid": "7001", "eventId": 3, "uitgegevenOp": "2025-03-01T10:00:07+01:00"}
    position = Position.from_page(page)
    assert position == Position(1, 7001, 3, datetime(2025, 3, 1, 9, 0, 7, tzinfo=UTC))
    after = position.after_event({"xid": "6999", "eventId": 2})
    assert (after.xid, after.event_id, after.epoch) == (6999, 2, 1)
    assert position.sql_params()["xid"] == "7001"


def test_a_cursor_pepper_version_must_fit():
    document = new_peppers(("dvref", "cursor"))
    document["cursor"]["versions"] = {"40000": document["cursor"]["versions"]["1"]}
    document["cursor"]["current"] = 40000
    with pytest.raises(CryptoConfigError):
        CursorCodec(parse_peppers(document))
