"""NotifyNL's rule for an e-mail address: what it answers `email_address Not a valid email
address` (400 ValidationError) for, judged before the call (SPEC §7 intake, §4 transitions).

NotifyNL is GOV.UK Notify; its address check is notifications-utils'
`recipient_validation/email_address.py`, which is not published on PyPI. This module states
the same rules, in this order:

1. Zero-width and no-break spaces (U+180E, U+200B-U+200D, U+2060, U+FEFF, U+2028, U+2029,
   U+00A0, U+202F) are removed wherever they are, then ASCII whitespace around the address.
2. What remains is `local@host`: a local part of ASCII letters, digits and
   ``.!#$%&'*+/=?^_`{|}~-`` (no quotes, spaces, commas, brackets or semicolons; dots
   anywhere), one `@`, and a host that does not start with a dot and holds no `@` and no
   whitespace.
3. At most 320 characters, and no `..` anywhere.
4. The host is encoded with Python's `idna` codec (IDNA 2003, as NotifyNL does); one it
   cannot encode is refused. The result has at most 253 characters and two or more labels.
5. Every label is 1 to 63 characters: letters and digits, with single or double hyphens
   between them (so not at either end, and never three in a row).
6. The last label (the TLD) is 2 to 63 letters, or punycode: `xn--` and letters and digits
   with single inner hyphens.

The API refuses such an address at intake (422, nmc.api.validation); the worker refuses a
Profielservice address before the send (`ongeldig-adres` without a call, nmc.worker.verzenden).
"""

import re
import string

ADDRESS_MAX = 320
HOST_MAX = 253
LABEL_MAX = 63

# Step 1: characters removed anywhere, and the whitespace stripped around the address.
_REMOVED_ANYWHERE = dict.fromkeys(
    map(ord, "\u180e\u200b\u200c\u200d\u2060\ufeff\u2028\u2029\u00a0\u202f")
)
_STRIPPED_AROUND = string.whitespace

# Step 2. `\s` is Unicode whitespace, as in NotifyNL's pattern.
_LOCAL_CHARACTERS = r"A-Za-z0-9.!#$%&'*+/=?^_`{|}~\-"
_ADDRESS = re.compile(rf"[{_LOCAL_CHARACTERS}]+@([^.@][^@\s]+)")
# Steps 5 and 6, on the ASCII host.
_LABEL = re.compile(r"[A-Za-z0-9]+(?:--?[A-Za-z0-9]+)*")
_TLD = re.compile(r"[A-Za-z]{2,63}|xn--(?:[A-Za-z0-9]+-)*[A-Za-z0-9]+")


def refused_by_notifynl(address: object) -> bool:
    """True when NotifyNL would refuse `address` as an e-mail address (anything but a
    string is refused)."""
    if not isinstance(address, str):
        return True
    # The removed characters are none of them ASCII: an ASCII address keeps its characters.
    text = address if address.isascii() else address.translate(_REMOVED_ANYWHERE)
    text = text.strip(_STRIPPED_AROUND)
    match = _ADDRESS.fullmatch(text)
    if match is None or len(text) > ADDRESS_MAX or ".." in text:
        return True
    host = match.group(1)
    if not host.isascii():
        # An ASCII host the codec returns unchanged, refusing only an empty or over-long
        # label, which the label rule below refuses as well: the verdict is the same.
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return True
    labels = host.split(".")
    if len(host) > HOST_MAX or len(labels) < 2:
        return True
    if not all(len(label) <= LABEL_MAX and _LABEL.fullmatch(label) for label in labels):
        return True
    return _TLD.fullmatch(labels[-1]) is None
