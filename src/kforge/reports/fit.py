"""Tables laid out for the width they are printed at, so that nothing a person reads is cut.

Rich, given a table wider than the terminal, shrinks the columns it may wrap, folds words at any character
(`interrup|ted`), and crops the rest (`3.31` without its `x`, `gated_cha…`). The tables of `kforge runs` and
`kforge show` are laid out here instead:

- figures (runtimes, speedups with their `x`, counts) are *fixed* columns: never wrapped, never cut;
- names (a problem, an outcome, who made an attempt, why a run stopped) are *folded* columns: broken only after
  `_`, `-`, `:`, `/`, `.` or at a space, so every line is a whole piece of the name (`gated_channel_` /
  `scale`), never an ellipsis;
- when even that does not fit, the table falls back to a narrower *variant* that drops its least important
  columns (the time of a run, the round of an attempt, the LLM usage) or stacks two figures in one cell.

`Fitted(variants)` is a renderable that picks, at print time, the first variant whose columns fit the
console's width (the last one where none does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

_PIECES = re.compile(r"[^_\-:/.\s]*[_\-:/.]+|\S+|\s+")


def fold(text: str, width: int) -> str:
    """`text` in lines of at most `width` characters, broken after `_ - : / .` or at spaces (a piece longer than
    `width` is cut into `width`-long parts, the only case a piece is split)."""
    width = max(width, 1)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for piece in _PIECES.findall(paragraph):
            if piece.isspace():
                if line:
                    line += " "
                continue
            if len(line) + len(piece) > width and line.strip():
                lines.append(line.rstrip())
                line = ""
            while len(piece) > width:
                lines.append(piece[:width])
                piece = piece[width:]
            line += piece
        lines.append(line.rstrip())
    return "\n".join(lines)


def longest_piece(text: str) -> int:
    """The narrowest width `fold` keeps every piece of `text` whole at."""
    return max((len(p) for p in _PIECES.findall(text) if not p.isspace()), default=1)


@dataclass
class Column:
    """One column: a header (lines separated by `\\n`) and its cells.

    `fixed`: never wrapped (figures); its width is its widest cell or header line. Otherwise the column folds
    (`fold`) between `min_width` (default: its longest unbreakable piece, so that no piece is split) and its widest
    cell; `whole` lists texts that must stay on one line each (a status word), which raises that minimum;
    `max_width` caps the width it grows to."""

    header: str
    cells: list[str]
    fixed: bool = False
    justify: str = "left"
    min_width: int | None = None
    max_width: int | None = None
    whole: list[str] = field(default_factory=list)
    grows: int = 1  # the order folded columns get the space left in: lower first

    def widest(self) -> int:
        lines = [line for text in (self.header, *self.cells) for line in text.split("\n")]
        return max((len(line) for line in lines), default=1)

    def narrowest(self) -> int:
        if self.fixed:
            return self.widest()
        header = max(len(line) for line in self.header.split("\n"))
        pieces = max((longest_piece(cell) for cell in self.cells), default=1)
        whole = max((len(text) for text in self.whole), default=1)
        return max(header, whole, self.min_width if self.min_width is not None else pieces)

    def natural(self) -> int:
        wide = self.widest()
        return max(self.narrowest(), min(wide, self.max_width) if self.max_width else wide)


def _overhead(count: int) -> int:
    """Characters a table of `count` columns adds to their contents: one space each side of a column but the
    outer sides, and a rule between columns."""
    return 2 * count - 2 + (count - 1)


def layout(columns: Sequence[Column], width: int) -> list[int] | None:
    """Widths for `columns` within `width` characters, or None when they do not fit even folded as far as
    they may be. Folded columns get their minimum, then the space left in the order of their `grows`, each up to
    its natural width."""
    widths = [c.narrowest() for c in columns]
    spare = width - _overhead(len(columns)) - sum(widths)
    if spare < 0:
        return None
    for index, column in sorted(enumerate(columns), key=lambda item: item[1].grows):
        if column.fixed:
            continue
        more = min(spare, column.natural() - widths[index])
        widths[index] += more
        spare -= more
    return widths


def build(columns: Sequence[Column], widths: Sequence[int], title: str | None = None,
          caption: str | None = None) -> Table:
    table = Table(title=title, caption=caption, caption_justify="left", show_edge=False, pad_edge=False,
                  box=box.HEAVY_HEAD)
    for column, width in zip(columns, widths, strict=True):
        table.add_column(Text(column.header), justify=column.justify, width=width, no_wrap=True,  # type: ignore[arg-type]
                         overflow="fold")
    for row in zip(*(c.cells for c in columns), strict=True):
        table.add_row(*(Text(cell if c.fixed else fold(cell, w))
                        for cell, c, w in zip(row, columns, widths, strict=True)))
    return table


class Fitted:
    """A renderable that lays out, at print time, the first of its variants that fits the width."""

    def __init__(self, variants: Iterable[Sequence[Column]], title: str | None = None,
                 caption: str | None = None) -> None:
        self.variants = list(variants)
        self.title = title
        self.caption = caption

    def table(self, width: int) -> Table:
        for columns in self.variants:
            widths = layout(columns, width)
            if widths is not None:
                return build(columns, widths, self.title, self.caption)
        narrowest = self.variants[-1]
        return build(narrowest, [c.narrowest() for c in narrowest], self.title, self.caption)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.table(options.max_width)
