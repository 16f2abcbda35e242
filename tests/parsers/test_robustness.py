"""Every RDMA, Ethernet and system parser gives the same result whatever the line endings, and a sample cut off
anywhere either parses or is refused with ParseError (never another exception)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_files import real_outputs
from wizard.parsers import ParseError, get_parser

TOOLS = (
    "ethtool", "ethtool_i", "ethtool_S", "rdma_link", "ibdev2netdev", "ibv_devices", "ibv_devinfo", "ibstat",
    "show_gids", "sysfs_gids", "cma_roce_mode", "lspci", "lsmod", "ofed_info", "bonding", "ip_link", "mlnx_qos",
)  # fmt: skip
SAMPLES = [(tool, path) for tool in TOOLS for path in real_outputs(tool)]


@pytest.mark.parametrize(("tool", "path"), SAMPLES, ids=lambda v: v if isinstance(v, str) else v.name)
def test_results_ignore_crlf_and_trailing_blanks(tool: str, path: Path) -> None:
    parse = get_parser(tool)
    text = path.read_text()
    expected = parse(text)
    assert parse(text.replace("\n", "\r\n")) == expected
    assert parse(text.replace("\n", " \t \n")) == expected


@pytest.mark.parametrize(("tool", "path"), SAMPLES, ids=lambda v: v if isinstance(v, str) else v.name)
def test_output_cut_anywhere_parses_or_is_refused(tool: str, path: Path) -> None:
    parse = get_parser(tool)
    text = path.read_text()
    for cut in range(1, len(text), 5):
        try:
            parse(text[:cut])
        except ParseError:
            pass
