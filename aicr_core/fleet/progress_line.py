"""The progress line of long fleet work on a terminal: `DONE/ALL clusters, F failed[, wave NAME]`, redrawn in place.

A fleet read of 500 clusters, or a write across hundreds, would otherwise print nothing until it
ends. The operation reports its `Tally` (aicr_core.fleet.fan_out) to a callback on the thread that
reads its outcomes; on the command line that callback is this line's `show`, which redraws it in
place (a carriage return, the words, the rest of the line erased). Whoever writes another line to
the same terminal clears it first and redraws it after (`clear`, `redraw`: the waves' event lines),
and it is erased when the work is done (`end`), so that nothing of it stays on the screen.

A few lines of our own rather than a progress-bar library (tqdm, rich): a library would be a new
dependency for one line of text; this module costs nothing at start-up (it is imported only when
a fleet on a terminal runs). When to show it at all (a terminal, enough clusters, the text table)
is the command line's decision (aicr_core.fleet.flags.progress_line); this module writes to the
stream it is given.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from aicr_core.fleet.fan_out import Tally

ERASE = "\r\x1b[K"  # to the line's start, and erase it (ANSI EL: what every terminal emulator knows)


def words(tally: Tally) -> str:
    """`DONE/ALL clusters, F failed[, wave NAME]`."""
    text = f"{tally.done}/{tally.all} clusters, {tally.failed} failed"
    if tally.wave is not None:
        from aicr_core.framework.terminal import safe

        text += f", wave {safe(tally.wave, allow_newlines=False)}"
    return text


class ProgressLine:
    """One line of a terminal, redrawn in place as the tally changes."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.text = ""       # what it says now; empty: nothing to draw
        self.drawn = False   # whether it is on the screen

    def show(self, tally: Tally) -> None:
        """The progress callback: the line says `tally`."""
        self.text = words(tally)
        self._draw()

    def clear(self) -> None:
        """Off the screen, to be redrawn (`redraw`) after another line is written."""
        if self.drawn:
            self._write(ERASE)
            self.drawn = False

    def redraw(self) -> None:
        if self.text and not self.drawn:
            self._draw()

    def end(self) -> None:
        """The work is done (or about to ask): erased, and not redrawn until it is shown again."""
        self.clear()
        self.text = ""

    def _draw(self) -> None:
        self._write(ERASE + self.text[:self._columns() - 1])  # a line that wrapped could not be redrawn in place
        self.drawn = True

    def _columns(self) -> int:
        import os

        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            return 80

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except OSError:
            pass  # a terminal gone away (a closed window): the work goes on, its result says what it did
