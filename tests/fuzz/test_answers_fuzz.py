"""The answers loader, given any YAML or a damaged copy of the example, loads or raises AnswersError naming the key;
the command line turns that into exit 2 with one-line messages, never a traceback."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.fuzz._corpus import FUZZ
from wizard.answers.model import Answers, parse_answers
from wizard.errors import AnswersError
from wizard.paths import example_answers

EXAMPLE: dict[str, Any] = yaml.safe_load(example_answers().read_text(encoding="utf-8"))
ROOT = Path(__file__).resolve().parents[2]


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at] if at else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*at, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += _paths(value, (*at, index))
    return out


PATHS = _paths(EXAMPLE)


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


LIST_PATHS = [p for p in PATHS if isinstance(_at(EXAMPLE, p), list)]
KEYS = sorted({str(p[-1]) for p in PATHS if isinstance(p[-1], str)})


def dotted(path: tuple[Any, ...]) -> str:
    """A key path as the loader prints it: network.rails[0].subnet."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def load(text: str) -> Answers | list[str]:
    """The answers, or the loader's problems; any other exception fails the calling test."""
    try:
        return parse_answers(text, "fuzz.yaml")
    except AnswersError as exc:
        assert exc.problems, "AnswersError without a problem"
        for problem in exc.problems:
            assert problem.strip() and "\n" not in problem, f"problem is not one line: {problem!r}"
        assert "Traceback" not in str(exc)
        return exc.problems


def problem_path(problem: str) -> str:
    return problem.split(" (line ")[0].split(": ")[0]


OTHER_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), st.integers() | st.text(max_size=6), max_size=3),
)


@st.composite
def mutated_example(draw: st.DrawFn) -> tuple[str, tuple[Any, ...], str]:
    """The example with one key deleted, one value replaced by something else, or one list emptied."""
    data = copy.deepcopy(EXAMPLE)
    kind = draw(st.sampled_from(["delete", "replace", "empty"]))
    path = draw(st.sampled_from(LIST_PATHS if kind == "empty" else PATHS))
    parent, last = _at(data, path[:-1]), path[-1]
    if kind == "delete":
        del parent[last]
    elif kind == "empty":
        parent[last] = []
    else:
        value = draw(OTHER_VALUES)
        assume(value != parent[last] or type(value) is not type(parent[last]))
        parent[last] = value
    return yaml.safe_dump(data, sort_keys=False), path, kind


def test_the_unchanged_example_loads() -> None:
    assert isinstance(load(yaml.safe_dump(EXAMPLE, sort_keys=False)), Answers)


@FUZZ
@given(sample=mutated_example())
def test_a_damaged_example_loads_or_names_the_damaged_key(sample: tuple[str, tuple[Any, ...], str]) -> None:
    text, path, kind = sample
    result = load(text)
    if isinstance(result, Answers):
        return
    key = dotted(path)
    # Deleting a list item renumbers the rest, so any problem inside that list names the damage.
    anchor = dotted(path[:-1]) if kind == "delete" and isinstance(path[-1], int) else key
    assert any(
        problem_path(p).startswith(anchor) or (anchor.startswith(problem_path(p)) and problem_path(p)) for p in result
    ), f"{kind} {key}: no problem names it: {result}"


YAML_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10) | st.dates(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8) | st.integers(), inner, max_size=5)
    ),
    max_leaves=25,
)


@FUZZ
@given(data=YAML_DATA)
def test_any_yaml_document_loads_or_raises_answers_error(data: Any) -> None:
    load(yaml.safe_dump(data))


@FUZZ
@given(top=st.dictionaries(st.sampled_from(["version", *KEYS]), YAML_DATA, max_size=6))
def test_any_mapping_of_known_keys_loads_or_raises_answers_error(top: dict[str, Any]) -> None:
    load(yaml.safe_dump({"version": 1, "hosts": EXAMPLE["hosts"], **top}))


@FUZZ
@given(text=st.text())
def test_any_text_loads_or_raises_answers_error(text: str) -> None:
    load(text)


@pytest.mark.parametrize(
    "text",
    ["version: 1\nhosts: &a\n  - *a\n", "version: 1\nnetwork: &n {rails: *n}\nhosts: []\n"],
    ids=["list", "mapping"],
)
def test_a_self_referencing_yaml_alias_is_refused_naming_its_line(text: str) -> None:
    problems = load(text)
    assert isinstance(problems, list) and problems[0].startswith("line ") and "alias *" in problems[0], problems


@FUZZ
@given(sample=mutated_example())
def test_plan_with_a_damaged_example_exits_2_with_one_line_messages(
    sample: tuple[str, tuple[Any, ...], str], tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture
) -> None:
    from wizard.cli.main import main

    text = sample[0]
    # Only files the loader refuses: a valid one would make `plan` connect to the example's hosts.
    assume(not isinstance(load(text), Answers))
    path = tmp_path_factory.mktemp("answers") / "answers.yaml"
    path.write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert main(["plan", "--answers", str(path)]) == 2
    err = capsys.readouterr().err
    assert err and all(line.startswith(f"roce-wizard: {path}: ") for line in err.splitlines()), err


def test_plan_in_a_real_process_exits_2_without_a_traceback(tmp_path: Path) -> None:
    samples = {
        "missing-hosts.yaml": yaml.safe_dump({k: v for k, v in EXAMPLE.items() if k != "hosts"}, sort_keys=False),
        "mtu-text.yaml": yaml.safe_dump({**EXAMPLE, "network": {**EXAMPLE["network"], "mtu": "jumbo"}}),
        "alias.yaml": "version: 1\nhosts: &a\n  - *a\n",
    }
    expected = {"missing-hosts.yaml": "hosts", "mtu-text.yaml": "network.mtu", "alias.yaml": "line 3"}
    for name, text in samples.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "wizard", "plan", "--answers", str(path)],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr and f"{path}: {expected[name]}" in done.stderr, done.stderr
