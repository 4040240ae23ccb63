"""The one exception the CLI turns into a message on stderr and exit code 1."""


class NmcError(Exception):
    """A failure the operator can act on; its text is the whole message."""
