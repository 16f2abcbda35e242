"""The key bar is one line of text: it shows the screen's keys, repaints only when they change (never rebuilds
widgets or lays the screen out again: at 1,000 hosts a page change paid most of its time for that), and a click
on a key presses it."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Input

from screens.footer import KeyFooter


class CountingFooter(KeyFooter):
    paints = 0

    def render(self) -> Text:
        CountingFooter.paints += 1
        return super().render()


class Form(App[None]):
    BINDINGS = [Binding("ctrl+s", "save", "Save"), Binding("f2", "extra", "Extra")]
    extra_offered = False
    saved = 0

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.extra_offered if action == "extra" else True

    def compose(self) -> ComposeResult:
        yield Input(id="a")
        yield Input(id="b")
        yield CountingFooter()

    def action_save(self) -> None:
        self.saved += 1

    def action_extra(self) -> None:
        pass


def bar(app: App[None]) -> CountingFooter:
    return app.query_one(CountingFooter)


async def test_moving_the_focus_between_fields_with_the_same_keys_does_not_repaint_the_key_bar() -> None:
    app = Form()
    async with app.run_test() as pilot:
        await pilot.pause()
        before = CountingFooter.paints
        for _ in range(5):
            await pilot.press("tab")
            await pilot.pause()
        assert CountingFooter.paints == before
        assert "Save" in bar(app).labels
        assert "Save" in str(bar(app).render())


async def test_a_new_key_is_shown_at_once_and_a_disabled_one_is_not_offered() -> None:
    app = Form()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert "Extra" not in bar(app).labels
        app.extra_offered = True
        app.refresh_bindings()
        await pilot.pause(0.2)
        assert {"Save", "Extra"} <= set(bar(app).labels)
        assert "Extra" in str(bar(app).render())


async def test_clicking_a_key_on_the_bar_presses_it() -> None:
    app = Form()
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        text = str(bar(app).render())
        await pilot.click(CountingFooter, offset=(text.index("Save"), 0))
        await pilot.pause()
        assert app.saved == 1
