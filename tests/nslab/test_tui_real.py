"""The terminal wizard on real OpenSSH hosts (the namespace lab), driven by bench/tui_real.py's operator: rows fill
in host by host as each host answers, before the run ends, and the counts add up. Times are the benchmark's to
report (``python -m bench.tui_real --hosts 1000``); here only behaviour is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.tui_real import drive, write_answers
from tests.nslab.conftest import NsCluster

pytestmark = [pytest.mark.nslab, pytest.mark.slow]

HOSTS = 20


@pytest.mark.hosts(HOSTS)
async def test_rows_fill_in_host_by_host_through_the_connection_test_and_discovery(ns_cluster: NsCluster) -> None:
    state = ns_cluster.workdir / "state"
    # One host at a time: every host's row must appear on its own, however fast the lab answers.
    write_answers(ns_cluster.lab, state, parallel=1)

    result = await drive(Path(state), keys=True)

    assert result["hosts"] == HOSTS
    # The connection test: every host's row was filled in, and not all at once at the end.
    assert result["conn_rows_filled"] == HOSTS
    assert result["conn_row_updates"] > 2
    assert result["conn_first_row_s"] is not None and result["conn_all_rows_s"] is not None
    # Discovery: a host's row shows its facts as soon as they are saved, long before the last host is read.
    assert result["disc_rows_filled"] == HOSTS
    assert 0 < result["disc_rows_before_done"] < HOSTS
    assert result["disc_row_updates"] > 2
    assert result["disc_first_row_s"] is not None
    # Mid-run the page counted hosts per state, and the counts added up to the hosts.
    during = result["progress_during"]
    assert during.startswith("discovery: 0/20 done"), during
    words = during.split(": ", 1)[1].replace("/20 done", " done").split(", ")
    counted = sum(int(part.split()[0]) for part in words if part.split()[0].isdigit())
    assert counted == HOSTS, during
    assert " probing" in during or " read" in during
    # The lab's hosts are plain namespaces without ConnectX ports: discovery reads them and then fails its checks
    # on every host, which the final counts say.
    assert result["counts"] == {"failed": HOSTS}
    # The operator's keys took effect, during the run and after it.
    assert {"during/filter", "after/filter", "after/finder", "after/scroll", "after/page"} <= set(result["keys"])
    assert not result["missed"]
    assert result["engine_process_peak_mib"], "the host work ran in an engine process of its own"
