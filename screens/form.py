"""A form for one answers section, built from its pydantic model; errors come from the same model headless uses."""

from __future__ import annotations

import typing
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Input, Label, Select, Static, Switch


def _literal_choices(annotation: Any) -> list[Any] | None:
    for arg in [annotation, *typing.get_args(annotation)]:
        if typing.get_origin(arg) is typing.Literal:
            return list(typing.get_args(arg))
    return None


def _is_complex(value: Any, annotation: Any) -> bool:
    return isinstance(value, list | dict) or typing.get_origin(annotation) in (list, dict)


def _flow(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False).strip()


def field_errors(model: type[BaseModel], data: dict[str, Any]) -> dict[str, str]:
    """Validation messages per field name ('' for problems across fields), worded as headless words them."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        errors: dict[str, str] = {}
        for err in exc.errors():
            key = str(err["loc"][0]) if err["loc"] else ""
            message = err["msg"].removeprefix("Value error, ")
            if err["loc"][1:]:
                message = ".".join(str(p) for p in err["loc"][1:]) + ": " + message
            errors.setdefault(key, message)
        return errors
    return {}


def _say(widget: Static, message: str) -> None:
    """Show a validation message, or hide the line when there is none."""
    widget.update(message)
    widget.display = bool(message)


class SectionForm(VerticalScroll):
    """One row per answers key: an input, select or switch, the key's help, and its validation message."""

    class Changed(Message):
        """The form holds new values; ``data`` is None while something is invalid."""

        def __init__(self, form: SectionForm, data: dict[str, Any] | None) -> None:
            self.form = form
            self.data = data
            super().__init__()

    def __init__(self, section: str, model: type[BaseModel], values: dict[str, Any], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.section = section
        self.model = model
        self.values = dict(values)

    def compose(self) -> ComposeResult:
        yield Static("", id="form-error", classes="field-error hidden")
        for name, info in self.model.model_fields.items():
            value = self.values.get(name, info.default)
            with Horizontal(classes="field-row"):
                yield Label(name, classes="field-name")
                yield self._editor(name, info.annotation, value)
            yield Static("", id=f"err-{name}", classes="field-error hidden")
            if info.description:
                yield Static(" ".join(info.description.split()), classes="field-help", markup=False)

    def _editor(self, name: str, annotation: Any, value: Any) -> Input | Select[Any] | Switch:
        wid = f"f-{name}"
        choices = _literal_choices(annotation)
        if choices is not None and not _is_complex(value, annotation):
            options = [(str(c), c) for c in choices]
            optional = type(None) in typing.get_args(annotation)
            return Select(
                options, value=value if value is not None else Select.NULL, allow_blank=optional, compact=True, id=wid
            )
        if isinstance(value, bool) or annotation is bool:
            return Switch(value=bool(value), id=wid)
        text = _flow(value) if _is_complex(value, annotation) else ("" if value is None else str(value))
        return Input(text, compact=True, id=wid)

    def read(self) -> dict[str, Any]:
        """The form's values as answers data (empty optional fields become None)."""
        data: dict[str, Any] = {}
        for name, info in self.model.model_fields.items():
            widget = self.query_one(f"#f-{name}")
            if isinstance(widget, Switch):
                data[name] = widget.value
            elif isinstance(widget, Select):
                data[name] = None if widget.value is Select.NULL else widget.value
            elif isinstance(widget, Input):
                data[name] = self._parse(widget.value, info.annotation, self.values.get(name, info.default))
        return data

    @staticmethod
    def _parse(text: str, annotation: Any, original: Any) -> Any:
        if _is_complex(original, annotation):
            try:
                return yaml.safe_load(text) if text.strip() else []
            except yaml.YAMLError:
                return text  # the model then says what is wrong with it
        if not text.strip() and type(None) in typing.get_args(annotation):
            return None
        return text.strip()

    def validate_now(self) -> dict[str, Any] | None:
        """Show each field's message next to it; returns the data when everything is valid."""
        data = self.read()
        errors = field_errors(self.model, data)
        for name in self.model.model_fields:
            _say(self.query_one(f"#err-{name}", Static), errors.get(name, ""))
        _say(self.query_one("#form-error", Static), errors.get("", ""))
        return None if errors else data

    def show_problem(self, message: str) -> None:
        """A problem found across sections (e.g. overlapping subnets), shown above the fields."""
        _say(self.query_one("#form-error", Static), message)

    def on_mount(self) -> None:
        self._shown = self.read()

    def _changed(self) -> None:
        # Widgets report their first value when mounted; only a value the operator changed is news.
        data = self.read()
        if data == getattr(self, "_shown", None):
            return
        self._shown = data
        self.post_message(self.Changed(self, self.validate_now()))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._changed()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self._changed()

    def on_switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        self._changed()
