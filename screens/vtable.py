"""A virtualised table: only the rows on screen are drawn, so 1,000 hosts or 20,000 checks cost what 20 rows cost.

Textual's DataTable measures every added row with Rich on the next idle (about 0.15 s per 1,000 rows, 1.8 s per
20,000 on this machine), so rebuilding it on a key press or a burst of events stalls the screen. Here a row is a
tuple of plain strings or single-style Texts; column widths come from ``len`` (capped), and ``render_line`` pads
or cuts only the visible cells.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

Cell = str | Text
MAX_WIDTH = 48


def update_if_changed(widget: Any, content: Any) -> None:
    """``Static.update`` lays the whole screen out again, and a layout repaints all of it (50 ms at 160x50 with
    1,000 hosts, measured on a discovery under way): redraws that change nothing skip the update, and a widget whose
    size does not follow its content (a one-line title 100% wide) is updated without a layout."""
    if getattr(widget, "_last_content", None) != content:
        widget._last_content = content
        widget.update(content, layout=sized_by_content(widget))


def sized_by_content(widget: Any) -> bool:
    """Whether the widget's width or height is ``auto`` (unset counts as auto): then new content can resize it."""
    styles = widget.styles
    return any(scalar is None or scalar.is_auto for scalar in (styles.width, styles.height))


def _plain_style(cell: Cell) -> tuple[str, Style | str]:
    if isinstance(cell, str):
        return cell, ""
    style = cell.spans[0].style if cell.spans else cell.style
    return cell.plain, style


class VirtualTable(ScrollView, can_focus=True):
    """Rows with a fixed header line, a row cursor, zebra stripes; ``RowHighlighted`` names the row's key.

    No horizontal scroll bar: at 80 columns it took one of the few rows; the last columns are cut at the edge
    (pages put the long, least needed column last and show the full row of the cursor below the table)."""

    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
        Binding("enter", "select", "Select", show=False),
    ]
    COMPONENT_CLASSES = {"vtable--header", "vtable--cursor", "vtable--even", "vtable--group"}
    DEFAULT_CSS = """
    VirtualTable { height: 1fr; background: $surface; overflow-x: hidden; }
    VirtualTable > .vtable--header { text-style: bold; background: $panel; color: $foreground; }
    VirtualTable > .vtable--cursor { background: $block-cursor-blurred-background; }
    VirtualTable:focus > .vtable--cursor { background: $block-cursor-background; color: $block-cursor-foreground; }
    VirtualTable > .vtable--even { background: $surface-lighten-1; }
    VirtualTable > .vtable--group { text-style: bold; color: $accent; }
    """

    class RowHighlighted(Message):
        """The cursor moved to ``row`` (whose key is ``key``)."""

        def __init__(self, table: VirtualTable, row: int, key: Hashable | None) -> None:
            self.table = table
            self.cursor_row = row
            self.key = key
            super().__init__()

        @property
        def control(self) -> VirtualTable:
            return self.table

    class RowSelected(RowHighlighted):
        """Enter (or a click) on a row."""

    def __init__(self, *columns: str, cursor: bool = True, max_width: int = MAX_WIDTH, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.columns = list(columns)
        self.cursor = cursor
        self.max_width = max_width
        self.rows: list[Sequence[Cell]] = []
        self.keys: list[Hashable | None] = []
        self.group_rows: set[int] = set()
        self.widths = [cell_len(c) for c in self.columns]
        self.cursor_row = 0

    # -- data ---------------------------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.rows)

    def set_columns(self, *columns: str) -> None:
        self.columns = list(columns)

    def set_rows(
        self,
        rows: Sequence[Sequence[Cell]],
        keys: Sequence[Hashable | None] | None = None,
        groups: set[int] | None = None,
    ) -> None:
        """Replace every row (O(rows), no Rich measuring); the cursor stays on the same key when it is still there."""
        new_keys = list(keys) if keys is not None else list(range(len(rows)))
        if new_keys == self.keys and (groups or set()) == self.group_rows and rows == self.rows:
            return  # a redraw with nothing new (events keep coming during a run) costs no repaint
        old_key = self.keys[self.cursor_row] if 0 <= self.cursor_row < len(self.keys) else None
        self.rows = list(rows)
        self.keys = new_keys
        self.group_rows = groups or set()
        widths = [cell_len(c) for c in self.columns]
        # Group header rows span the whole line ("▸ leaf-r0..r7, r3: leaf-r4  1 host, 1 failed"): they size no column.
        sized = [row for n, row in enumerate(self.rows) if n not in self.group_rows]
        for i in range(len(widths) - 1):  # the last column takes what is left
            longest = max(
                (len(row[i]) if isinstance(row[i], str) else len(row[i].plain) for row in sized if i < len(row)),
                default=0,
            )
            widths[i] = max(widths[i], min(longest, self.max_width))
        self.widths = widths
        if old_key is not None and old_key in self.keys:
            self.cursor_row = self.keys.index(old_key)
        self.cursor_row = max(0, min(self.cursor_row, len(self.rows) - 1))
        total = sum(w + 2 for w in widths[:-1]) + max(widths[-1:] or [0])
        self.virtual_size = Size(total, len(self.rows) + 1)
        self.refresh()

    def key_at(self, row: int) -> Hashable | None:
        return self.keys[row] if 0 <= row < len(self.keys) else None

    @property
    def cursor_key(self) -> Hashable | None:
        return self.key_at(self.cursor_row)

    # -- cursor -------------------------------------------------------------------------------------------
    def move_cursor(self, row: int, *, announce: bool = True) -> None:
        if not self.rows:
            return
        row = max(0, min(row, len(self.rows) - 1))
        self.cursor_row = row
        body = self.scrollable_content_region.height - 1
        top = int(self.scroll_offset.y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif body > 0 and row >= top + body:
            self.scroll_to(y=row - body + 1, animate=False, immediate=True)
        self.refresh()
        if announce:
            self.post_message(self.RowHighlighted(self, row, self.key_at(row)))

    def action_move(self, delta: int) -> None:
        self.move_cursor(self.cursor_row + delta)

    def action_page(self, delta: int) -> None:
        self.move_cursor(self.cursor_row + delta * max(1, self.scrollable_content_region.height - 2))

    def action_jump(self, row: int) -> None:
        self.move_cursor(row if row >= 0 else len(self.rows) - 1)

    def action_select(self) -> None:
        if self.rows:
            self.post_message(self.RowSelected(self, self.cursor_row, self.cursor_key))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        row = int(self.scroll_offset.y) + event.y - 1
        if event.y >= 1 and 0 <= row < len(self.rows):
            self.move_cursor(row)

    # -- drawing ------------------------------------------------------------------------------------------
    def _line(self, cells: Sequence[Cell], base: Style, *, header: bool = False) -> list[Segment]:
        segments: list[Segment] = []
        last = len(self.widths) - 1
        for i, width in enumerate(self.widths):
            cell = cells[i] if i < len(cells) else ""
            text, style = _plain_style(cell)
            if i == last:
                width = max(width, self.size.width + int(self.scroll_offset.x))
            cell_style = base + (self.app.console.get_style(style) if style and not header else Style())
            segments.append(Segment(set_cell_size(text, width), cell_style))
            if i != last:
                segments.append(Segment("  ", base))
        return segments

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x, scroll_y = int(self.scroll_offset.x), int(self.scroll_offset.y)
        base = self.rich_style
        if y == 0:
            header = self.get_component_rich_style("vtable--header")
            return Strip(self._line(self.columns, base + header, header=True)).crop(scroll_x, scroll_x + width)
        index = scroll_y + y - 1
        if index >= len(self.rows):
            return Strip.blank(width, base)
        style = base
        if index % 2 == 1:
            style += self.get_component_rich_style("vtable--even")
        if index in self.group_rows:
            style += self.get_component_rich_style("vtable--group")
        if self.cursor and index == self.cursor_row:
            style += self.get_component_rich_style("vtable--cursor")
        if index in self.group_rows:
            text = "  ".join(_plain_style(cell)[0] for cell in self.rows[index] if _plain_style(cell)[0])
            full = max(sum(w + 2 for w in self.widths), width + scroll_x)
            return Strip([Segment(set_cell_size(text, full), style)]).crop(scroll_x, scroll_x + width)
        return Strip(self._line(self.rows[index], style)).crop(scroll_x, scroll_x + width)
