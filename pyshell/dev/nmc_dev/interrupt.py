"""How the development tools stop: SIGTERM is turned into KeyboardInterrupt, as Ctrl-C is, so
one `except KeyboardInterrupt` and the `finally` clauses stop every child process either way."""

EXIT_INTERRUPTED = 130  # what a shell reports for a process ended by SIGINT


def raise_interrupt(signum, frame) -> None:
    """A SIGTERM handler: `signal.signal(signal.SIGTERM, raise_interrupt)`."""
    raise KeyboardInterrupt
