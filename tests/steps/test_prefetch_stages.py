"""Each stage declares its read-only probes as data: on the reference lab, every declared command is one the probe
runs, and a fresh host's first read of the stage misses exactly the reads that depend on that read's output."""

from __future__ import annotations

import pytest

from tests.record_probes import first_read, lab_hosts, step
from wizard.engine.prefetch import explain_misses
from wizard.engine.step import ProbeContext

SYSCTL = "sysctl -e " + " ".join(
    f"net.ipv4.conf.{i}.{k}"
    for i in ("all", "eno1", "ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1")
    for k in ("arp_ignore", "arp_announce", "rp_filter")
)
# the type and netdev of each GID slot in use on a prepared host (link-local and IPv4, as RoCE v1 and v2), which the
# GID values of the same read name
GID_ATTRS = "grep -sH . " + " ".join(
    f"/sys/class/infiniband/mlx5_{device}/ports/1/gid_attrs/{kind}/{index}"
    for device in range(4)
    for index in range(4)
    for kind in ("types", "ndevs")
)

# stage -> (hosts as the stage first meets them: prepared = DOCA-OFED, rails and peermem in place, the misses)
FIRST_READS = {
    # nothing depends on this read: the one local-repository listing is not asked for by the example answers
    "ofed": (False, []),
    "network": (
        True,
        [
            GID_ATTRS,
            # each netplan file other than the wizard's own, as find of this read listed them
            "cat -- /etc/netplan/00-installer-config.yaml",
            "cat -- /etc/netplan/60-roce-rails.yaml",
            # the ARP and rp_filter keys of every interface ip of this read listed
            SYSCTL,
        ],
    ),
    # per-port QoS and per-device RDMA-CM reads are predicted from discovery's ports and mlnx-tools: all right here
    "roce": (True, []),
    # firmware queries and the peermem build reads predicted from discovery: all right here
    "gpudirect": (True, []),
    "nccl": (
        True,
        [
            GID_ATTRS,
            # all_reduce_perf is not built yet, so the probe looks for nvcc where the libnccl2 of this read points
            "/usr/local/cuda/bin/nvcc --version",
            "/usr/local/cuda-12.4/bin/nvcc --version",
            # and for the nccl-tests source tree (test -d follows only when the Makefile is there)
            "test -f /opt/nccl-tests/Makefile",
            "test -e /opt/nccl-tests",
        ],
    ),
    # a pip list needs the venv's python to answer, a journal a failed unit: neither on a host not yet deployed; the
    # newest vLLM release is asked of PyPI only because this host has no venv with vLLM yet
    "inference": (True, ["curl -sSf --max-time 20 https://pypi.org/pypi/vllm/json"]),
}


@pytest.mark.parametrize("stage", sorted(FIRST_READS))
async def test_a_stages_first_read_runs_what_it_declares_and_misses_only_its_dependent_reads(stage: str) -> None:
    prepared, dependent = FIRST_READS[stage]
    declared, reader, _ = await first_read(stage, "server1", prepared=prepared)
    assert declared, "every stage declares its fixed reads"
    assert set(declared) <= set(reader.calls), [d for d in declared if d not in reader.calls]
    assert reader.misses == dependent
    assert "not declared by the stage" not in explain_misses(dependent, step(stage).dependent_probes)


async def test_the_batched_read_gives_the_facts_of_a_read_that_fetched_nothing() -> None:
    """roce on a bare host (discovery saw no mlnx-tools, so dcb is predicted and is what the probe uses): the ECN and
    RDMA-CM globs and the batch change no fact."""
    declared, reader, found = await first_read("roce", "server1", prepared=False)
    assert set(declared) <= set(reader.calls) and reader.misses == []
    async with lab_hosts(prepared=False) as (answers, executors):
        entry, ex = answers.hosts[0], executors["server1"]
        facts = {"discovery": await step("discovery").probe(ProbeContext(entry, ex, answers, {}))}
        alone = await step("roce").probe(ProbeContext(entry, ex, answers, facts))
    assert found == alone
    assert found["qos_tool"] == "dcb" and [p["netdev"] for p in found["ports"]] == [
        "ens1f0np0", "ens1f1np1", "ens2f0np0", "ens2f1np1",
    ]  # fmt: skip
