"""Shared pieces of the fuzz suite: the real-output corpus, its mutations and the example budget."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.fixture_files import FIXTURES
from wizard.parsers import TOOLS

# Examples per property: small enough that the whole fuzz suite stays well under a minute on a busy 2-core CI box,
# large enough that each run explores new inputs (hypothesis draws fresh ones every run and replays past failures).
EXAMPLES = 150
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Fixture folders named after something other than the tool whose parser reads them.
_FOLDER_TOOLS: dict[str, tuple[str, ...]] = {
    "lldpctl": ("lldpctl_json",),
    "mlxconfig": ("mlxconfig_q",),
    "nccl_errors": ("nccl_debug", "nccl_all_reduce_perf"),
    "perftest_errors": ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat"),
}


def fixture_files() -> list[Path]:
    """Every real-output fixture, in a stable order."""
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.parent != FIXTURES)


def tools_for(path: Path) -> tuple[str, ...]:
    """The tools whose parser the fixture ``path`` is an output of."""
    folder = path.parent.name
    if folder in TOOLS:
        return (folder,)
    return _FOLDER_TOOLS[folder]


FILES = fixture_files()
TEXTS: dict[Path, str] = {p: p.read_text(encoding="utf-8") for p in FILES}
# Every line of every fixture: material that looks like tool output, so fuzzed texts get past the first checks.
CORPUS_LINES: list[str] = sorted({line for text in TEXTS.values() for line in text.splitlines()})


def crlf(text: str) -> str:
    """Windows line endings, as a paste from a Windows terminal gives."""
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def strip_trailing_blanks(text: str) -> str:
    """Trailing spaces and tabs removed from every line, as some editors and chat tools do."""
    return "\n".join(line.rstrip(" \t") for line in text.split("\n"))


@st.composite
def mutated_fixture(draw: st.DrawFn) -> tuple[Path, str]:
    """A real fixture, cut at a random point, and perhaps with CRLF endings and trailing blanks stripped."""
    path = draw(st.sampled_from(FILES))
    text = TEXTS[path]
    cut = draw(st.integers(min_value=0, max_value=len(text)))
    text = text[:cut]
    if draw(st.booleans()):
        text = strip_trailing_blanks(text)
    if draw(st.booleans()):
        text = crlf(text)
    return path, text


_TOKENS = st.sampled_from(
    ["0", "-1", "1e999", "nan", ":", "=", "|", "{", "}", "[", "]", "\t", "  ", "0x", "mlx5_0", "port", "GID",
     "Gb/sec", "MB/sec", "N/A", "\x00", "é", "\u2028", "\r", "#", "$ ", "root@h:~# ", "-", "/"]
)  # fmt: skip


@st.composite
def toolish_text(draw: st.DrawFn) -> str:
    """Text made of real fixture lines, reordered and mangled: tool-shaped enough to reach deep parser code."""
    lines = draw(st.lists(st.sampled_from(CORPUS_LINES), min_size=0, max_size=25))
    out: list[str] = []
    for line in lines:
        choice = draw(st.integers(min_value=0, max_value=5))
        if choice == 0 and line:
            # replace one character span with a token: breaks numbers, units and separators
            start = draw(st.integers(min_value=0, max_value=len(line) - 1))
            end = draw(st.integers(min_value=start, max_value=len(line)))
            line = line[:start] + draw(_TOKENS) + line[end:]
        elif choice == 1:
            line = line + draw(_TOKENS) + draw(st.text(max_size=8))
        elif choice == 2:
            line = line[: draw(st.integers(min_value=0, max_value=len(line)))]
        out.append(line)
    return draw(st.sampled_from(["\n", "\r\n"])).join(out)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


def json_values() -> st.SearchStrategy[object]:
    """Arbitrary JSON values (the JSON parsers must refuse wrong shapes with ParseError)."""
    return _JSON
