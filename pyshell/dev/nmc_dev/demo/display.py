"""The demo's output: phase lines, live counts per status, and the summary table.

On a terminal the counts are a small block redrawn in place; otherwise (a pipe, a CI log,
--no-tty) one line every few seconds, so a log never floods.
"""

import time
from collections.abc import Mapping
from typing import TextIO

STATUSES = (
    "aangenomen", "in-verzending", "verzonden", "bezorgd",  # on the way
    "definitief-bezorgd", "niet-bezorgbaar", "technisch-mislukt", "bezorgstatus-onbekend",
    "verlopen", "geannuleerd",  # terminal
)  # fmt: skip
TERMINAL = frozenset(STATUSES[4:])
LINE_INTERVAL_S = 5.0


class Display:
    def __init__(self, out: TextIO, *, tty: bool) -> None:
        self.out = out
        self.tty = tty
        self.started = time.monotonic()
        self._block_lines = 0  # lines of the live block now on screen
        self._last_line = 0.0
        self._last_text = ""

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def note(self, text: str) -> None:
        """A line that stays (a phase, a fact)."""
        self._erase_block()
        self.out.write(f"[{self.elapsed():6.1f}s] {text}\n")
        self.out.flush()
        self._last_line = 0.0  # show the counts again right after a phase line

    def counts(self, counts: Mapping[str, int], feed: str) -> None:
        """The live counts per status (as the DV's feed shows them)."""
        if self.tty:
            self._erase_block()
            block = _block(counts, f"{feed} · {self.elapsed():.0f} s")
            self.out.write(block)
            self._block_lines = block.count("\n")
        else:
            text = " · ".join(f"{s} {counts[s]}" for s in STATUSES if counts.get(s))
            due = time.monotonic() - self._last_line >= LINE_INTERVAL_S
            if due and text != self._last_text:
                self.out.write(f"[{self.elapsed():6.1f}s]   {text or '-'} | {feed}\n")
                self._last_line, self._last_text = time.monotonic(), text
        self.out.flush()

    def close(self) -> None:
        self._erase_block()
        self.out.flush()

    def _erase_block(self) -> None:
        if self._block_lines:
            # Cursor up to the block's first line, clear from there to the end of the screen.
            self.out.write(f"\x1b[{self._block_lines}F\x1b[J")
            self._block_lines = 0


def _block(counts: Mapping[str, int], feed: str) -> str:
    on_the_way, terminal = STATUSES[:4], STATUSES[4:]
    lines = []
    for i in range(len(terminal)):
        left = f"{on_the_way[i]:<14}{counts.get(on_the_way[i], 0):>5}" if i < 4 else " " * 19
        right = f"{terminal[i]:<22}{counts.get(terminal[i], 0):>5}"
        lines.append(f"    {left}     {right}")
    lines.append(f"    {feed}")
    return "\n".join(lines) + "\n"


def table(header: tuple[str, ...], rows: list[tuple[str, ...]], right: tuple[int, ...] = ()) -> str:
    """A text table; the columns in `right` (numbers) are right-aligned."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]

    def line(row: tuple[str, ...]) -> str:
        cells = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        return "  " + "  ".join(cells).rstrip()

    rule = "  " + "  ".join("-" * width for width in widths)
    return "\n".join([line(header), rule, *(line(row) for row in rows)])
