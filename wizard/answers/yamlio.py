"""YAML in one place: safe loading that remembers the line of every key, and stable dumping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

KeyPath = tuple[str | int, ...]


class YamlSyntaxError(ValueError):
    """The text is not valid YAML; the message carries the line."""


def load_with_lines(text: str) -> tuple[Any, dict[KeyPath, int]]:
    """Parse ``text`` safely and return the data plus a map from key path to 1-based line number."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise YamlSyntaxError(f"{where}invalid YAML ({problem})") from None
    lines: dict[KeyPath, int] = {}
    if node is not None:
        _walk(node, (), lines)
    return data, lines


def _walk(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[(*path, key)] = key_node.start_mark.line + 1
            _walk(value_node, (*path, key), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _walk(item, (*path, index), lines)


def line_of(lines: dict[KeyPath, int], path: KeyPath) -> int | None:
    """Line of ``path`` or of its nearest ancestor that exists in the file."""
    for cut in range(len(path), -1, -1):
        if path[:cut] in lines:
            return lines[path[:cut]]
    return None


def dump(data: Any) -> str:
    """Dump plain data as block-style YAML, keys in the order given."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)


def read_text(path: Path) -> str:
    """Read a YAML file as UTF-8 text."""
    return path.read_text(encoding="utf-8")
