"""A command's output over real OpenSSH comes back exactly as printed, whatever the size of the pieces it arrives in:
long lines that span many reads, many short lines, a last line without a newline, stderr apart, every line handed
to the live callback once and in order (the executor reads whatever has arrived and splits lines itself)."""

from __future__ import annotations

import pytest

from tests.nslab.conftest import NsCluster
from tests.nslab.test_host_lock_real import executor

pytestmark = pytest.mark.nslab

# 3 lines of 200,000 characters (each spans several reads), 50,000 short lines, a last line without a newline.
SCRIPT = (
    'python3 -c "import sys; [print(chr(97 + i) * 200000) for i in range(3)]; '
    "[print('line', i) for i in range(50000)]; print('to stderr', file=sys.stderr); print('end', end='')\""
)


async def test_output_arrives_byte_for_byte_and_line_by_line(ns_cluster: NsCluster) -> None:
    ssh = executor(ns_cluster, "h1")
    seen: list[tuple[str, str]] = []
    try:
        result = await ssh.run(SCRIPT, on_line=lambda stream, line: seen.append((stream, line)), timeout_s=60)
    finally:
        await ssh.close()

    expected = [c * 200000 for c in "abc"] + [f"line {i}" for i in range(50000)] + ["end"]
    assert result.exit_status == 0
    assert result.stdout == "\n".join(expected)
    assert result.raw_stdout == "\n".join(expected)  # what was printed, newlines included
    assert result.stderr == "to stderr"
    assert [line for stream, line in seen if stream == "stdout"] == expected
    assert [line for stream, line in seen if stream == "stderr"] == ["to stderr"]
