"""Every registered parser, given any text, returns a model or raises ParseError: never another exception."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzz._corpus import (
    FILES,
    FUZZ,
    TEXTS,
    crlf,
    json_values,
    mutated_fixture,
    strip_trailing_blanks,
    toolish_text,
    tools_for,
)
from wizard.parsers import TOOLS, Parsed, ParseError, get_parser

ALL_TOOLS = sorted(TOOLS)


def parses_or_refuses(tool: str, text: str) -> None:
    """The property itself: a model, or ParseError with a one-line message; anything else fails the test."""
    try:
        result = get_parser(tool)(text)
    except ParseError as exc:
        message = str(exc)
        assert message.strip(), f"{tool}: ParseError without a reason"
        assert "\n" not in message.strip(), f"{tool}: ParseError message spans lines: {message!r}"
        return
    assert isinstance(result, Parsed), f"{tool} returned {type(result).__name__}, not a Parsed model"
    # a model that cannot be serialised would crash `roce-wizard parse --json` later
    result.model_dump_json()


def test_every_fixture_folder_maps_to_registered_parsers() -> None:
    assert FILES, "no real-output fixtures found"
    for path in FILES:
        assert set(tools_for(path)) <= set(TOOLS), path


@pytest.mark.parametrize("tool", ALL_TOOLS)
@FUZZ
@given(text=st.text())
def test_arbitrary_text_parses_or_raises_parse_error(tool: str, text: str) -> None:
    parses_or_refuses(tool, text)


@pytest.mark.parametrize("tool", ALL_TOOLS)
@FUZZ
@given(text=toolish_text())
def test_mangled_real_lines_parse_or_raise_parse_error(tool: str, text: str) -> None:
    parses_or_refuses(tool, text)


@pytest.mark.parametrize("tool", ["ip_json", "lldpctl_json"])
@FUZZ
@given(value=json_values(), prefix=st.sampled_from(["", "$ ip -j addr\n", "root@gpu-001:~# lldpctl -f json\r\n"]))
def test_json_of_any_shape_parses_or_raises_parse_error(tool: str, value: object, prefix: str) -> None:
    parses_or_refuses(tool, prefix + json.dumps(value))


@FUZZ
@given(sample=mutated_fixture())
def test_real_fixture_cut_anywhere_with_any_line_endings_parses_or_raises(sample: tuple[Path, str]) -> None:
    path, text = sample
    for tool in tools_for(path):
        parses_or_refuses(tool, text)


@FUZZ
@given(sample=mutated_fixture(), tool=st.sampled_from(ALL_TOOLS))
def test_real_fixture_fed_to_another_parser_parses_or_raises(sample: tuple[Path, str], tool: str) -> None:
    parses_or_refuses(tool, sample[1])


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_whole_fixture_with_crlf_and_stripped_blanks_parses_or_raises(path: Path) -> None:
    for tool in tools_for(path):
        for text in (TEXTS[path], crlf(TEXTS[path]), strip_trailing_blanks(TEXTS[path])):
            parses_or_refuses(tool, text)
