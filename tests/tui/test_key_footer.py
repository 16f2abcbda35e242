"""The key bar is rebuilt when the keys it shows change, and only then (a rebuild restyles one widget per key; at
1,000 hosts every focus change paid for one)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Input

from screens.footer import KeyFooter


class CountingFooter(KeyFooter):
    builds = 0

    def compose(self) -> ComposeResult:
        CountingFooter.builds += 1
        yield from super().compose()


class Form(App[None]):
    BINDINGS = [Binding("ctrl+s", "save", "Save"), Binding("f2", "extra", "Extra")]
    extra_offered = False

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.extra_offered if action == "extra" else True

    def compose(self) -> ComposeResult:
        yield Input(id="a")
        yield Input(id="b")
        yield CountingFooter()

    def action_save(self) -> None:
        pass

    def action_extra(self) -> None:
        pass


def keys_shown(app: App[None]) -> list[str]:
    return [str(key.description) for key in app.query("FooterKey")]


async def test_moving_the_focus_between_fields_with_the_same_keys_does_not_rebuild_the_key_bar() -> None:
    app = Form()
    async with app.run_test() as pilot:
        await pilot.pause()
        before = CountingFooter.builds
        for _ in range(5):
            await pilot.press("tab")
            await pilot.pause()
        assert CountingFooter.builds == before
        assert "Save" in keys_shown(app)


async def test_a_new_key_is_shown_at_once() -> None:
    app = Form()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert "Extra" not in keys_shown(app)
        app.extra_offered = True
        app.refresh_bindings()
        await pilot.pause(0.2)
        assert {"Save", "Extra"} <= set(keys_shown(app))
