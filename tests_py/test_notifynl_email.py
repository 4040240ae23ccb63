"""NotifyNL's e-mail address rule, as nmc.notifynl.notifynl_email reimplements it.

NotifyNL answers `400 ValidationError: email_address Not a valid email address` for what
GOV.UK Notify's notifications-utils (`recipient_validation/email_address.py`) refuses. The
cases below are the ones that module's own tests list
(tests/recipient_validation/test_email_address.py), taken as data, and a few more that
follow from its rules (noted as such).
"""

import pytest

from nmc.notifynl.notifynl_email import ADDRESS_MAX, refused_by_notifynl

# notifications-utils: valid_email_addresses.
ACCEPTED = [
    "email@domain.com",
    "email@domain.COM",
    "firstname.lastname@domain.com",
    "firstname.o'lastname@domain.com",
    "email@subdomain.domain.com",
    "firstname+lastname@domain.com",
    "1234567890@domain.com",
    "email@domain-one.com",
    "_______@domain.com",
    "email@domain.name",
    "email@domain.superlongtld",
    "email@domain.co.jp",
    "firstname-lastname@domain.com",
    "info@german-financial-services.vermögensberatung",
    "info@german-financial-services.reallylongarbitrarytldthatiswaytoohugejustincase",
    "japanese-info@例え.テスト",
    "email@double--hyphen.com",
]

# notifications-utils: test_validate_email_address_strips_whitespace (accepted once stripped).
ACCEPTED_AFTER_STRIPPING = [
    " email@domain.com ",
    "\temail@domain.com",
    "\temail@domain.com\n",
    "\u200bemail@domain.com\u200b",
]

# notifications-utils: invalid_email_addresses.
REFUSED = [
    "email@123.123.123.123",
    "email@[123.123.123.123]",
    "plainaddress",
    "@no-local-part.com",
    "Outlook Contact <outlook-contact@domain.com>",
    "no-at.domain.com",
    "no-tld@domain",
    ";beginning-semicolon@domain.co.uk",
    "middle-semicolon@domain.co;uk",
    "trailing-semicolon@domain.com;",
    '"email+leading-quotes@domain.com',
    'email+middle"-quotes@domain.com',
    '"quoted-local-part"@domain.com',
    '"quoted@domain.com"',
    "lots-of-dots@domain..gov..uk",
    "two-dots..in-local@domain.com",
    "multiple@domains@domain.com",
    "spaces in local@domain.com",
    "spaces-in-domain@dom ain.com",
    "underscores-in-domain@dom_ain.com",
    "pipe-in-domain@example.com|gov.uk",
    "comma,in-local@gov.uk",
    "comma-in-domain@domain,gov.uk",
    "pound-sign-in-local£@domain.com",
    "local-with-\u2019-apostrophe@domain.com",
    "local-with-\u201d-quotes@domain.com",
    "domain-starts-with-a-dot@.domain.com",
    "brackets(in)local@domain.com",
    f"email-too-long-{'a' * 320}@example.com",
    "incorrect-punycode@xn---something.com",
]

# Consequences of the same rules, each named by the rule it follows from.
DERIVED = [
    ("a@b---c.nl", True),  # a label's inner hyphens come one or two at a time
    ("a@-b.nl", True),  # a label starts with a letter or digit
    ("a@b-.nl", True),  # and ends with one
    ("a@b.nl.", True),  # no empty label (a trailing dot)
    ("a@" + "b" * 64 + ".nl", True),  # a label holds at most 63 characters
    ("a@" + "b" * 63 + ".nl", False),
    ("a@b.n", True),  # a TLD of letters has 2 to 63 of them
    ("a@b.nl1", True),  # and only letters
    ("a@b.xn--p1ai", False),  # or it is punycode
    ("a@b.xn--p1--ai", True),  # with single inner hyphens only
    ("a@b.xn--", True),
    ("a@" + ".".join(["b" * 63] * 3 + ["c" * 61]) + ".nl", True),  # host over 253
    ("a@" + ".".join(["b" * 63] * 3 + ["c" * 58]) + ".nl", False),  # host of 253
    ("jan\u00a0@voorbeeld.nl", False),  # a no-break space is removed anywhere
    ("jan\u2028@voorbeeld.nl", False),  # and so is a line separator
    ("jan @voorbeeld.nl", True),  # an inner space is not
    (".jan@voorbeeld.nl", False),  # the local part is a set of characters, not a dot-atom
    ("jan.@voorbeeld.nl", False),
    ("a" * 65 + "@voorbeeld.nl", False),  # no limit of its own on the local part
    ("j\u00e4n@voorbeeld.nl", True),  # ASCII only in the local part
    ("jan@caf\u00e9.nl", False),  # IDNA in the domain
    ("jan@xn--caf-dma.nl", False),
    ("jan@voor\u00adbeeld.nl", False),  # IDNA maps a soft hyphen to nothing
    ("jan@a\ud800.nl", True),  # a lone surrogate cannot be IDNA-encoded
    ("a@b.nl\n", False),  # surrounding whitespace is stripped
]


def local_of_length(total: int) -> str:
    return "a" * (total - len("@voorbeeld.nl")) + "@voorbeeld.nl"


@pytest.mark.parametrize("address", ACCEPTED + ACCEPTED_AFTER_STRIPPING)
def test_accepted_as_notifynl_accepts(address):
    assert not refused_by_notifynl(address)


@pytest.mark.parametrize("address", REFUSED)
def test_refused_as_notifynl_refuses(address):
    assert refused_by_notifynl(address)


@pytest.mark.parametrize(("address", "refused"), DERIVED)
def test_what_follows_from_the_rules(address, refused):
    assert refused_by_notifynl(address) is refused


def test_the_length_limit_is_320_after_stripping():
    assert ADDRESS_MAX == 320
    assert not refused_by_notifynl(local_of_length(320))
    assert refused_by_notifynl(local_of_length(321))
    assert not refused_by_notifynl(" " + local_of_length(320) + "\u200b")


@pytest.mark.parametrize("value", [None, 5, b"a@b.nl", ["a@b.nl"]])
def test_what_is_no_text_is_refused(value):
    assert refused_by_notifynl(value)
