"""Specifications of the nvidia-smi parsers (topo -m, -L, --query-gpu csv), checked against real outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_files import real_output, real_outputs
from wizard.parsers.common import ParseError
from wizard.parsers.gpu import parse_nvidia_smi_L, parse_nvidia_smi_query, parse_nvidia_smi_topo

# Synthetic (written for these tests, not captured): what
# `nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version --format=csv` prints on an 8x L20
# (48 GB) server; the format follows the real L40S sample, whose 48 GB boards also report 46068 MiB.
SYNTHETIC_L20_CSV = """\
index, name, pci.bus_id, memory.total [MiB], driver_version
0, NVIDIA L20, 00000000:0F:00.0, 46068 MiB, 570.124.06
1, NVIDIA L20, 00000000:34:00.0, 46068 MiB, 570.124.06
2, NVIDIA L20, 00000000:48:00.0, 46068 MiB, 570.124.06
3, NVIDIA L20, 00000000:5A:00.0, 46068 MiB, 570.124.06
4, NVIDIA L20, 00000000:87:00.0, 46068 MiB, 570.124.06
5, NVIDIA L20, 00000000:AE:00.0, 46068 MiB, 570.124.06
6, NVIDIA L20, 00000000:C2:00.0, 46068 MiB, 570.124.06
7, NVIDIA L20, 00000000:D7:00.0, 46068 MiB, 570.124.06
"""


@pytest.mark.parametrize("path", real_outputs("nvidia_smi_topo"), ids=lambda p: p.name)
def test_every_topo_sample_parses_with_a_full_gpu_to_gpu_matrix(path: Path) -> None:
    topo = parse_nvidia_smi_topo(path.read_text(encoding="utf-8"))
    assert topo.gpus
    for gpu in topo.gpus:
        assert topo.matrix[gpu][gpu] == "X"
        assert set(topo.matrix[gpu]) == set(topo.gpus) | set(topo.nics)


@pytest.mark.parametrize("path", real_outputs("nvidia_smi_L"), ids=lambda p: p.name)
def test_every_gpu_list_sample_parses(path: Path) -> None:
    listing = parse_nvidia_smi_L(path.read_text(encoding="utf-8"))
    assert listing.gpus and listing.errors == []


@pytest.mark.parametrize("path", real_outputs("nvidia_smi_query"), ids=lambda p: p.name)
def test_every_query_sample_parses_into_rows_matching_the_header(path: Path) -> None:
    query = parse_nvidia_smi_query(path.read_text(encoding="utf-8"))
    assert query.has_header and query.rows
    assert all(list(row) == query.columns for row in query.rows)


# --- topo -m -------------------------------------------------------------------------------------------------


def test_topo_fused_last_nic_cell_and_cpu_affinity_are_split_not_misassigned() -> None:
    topo = parse_nvidia_smi_topo(real_output("nvidia_smi_topo", "brev-a100-8nic-phb-truncated-9.txt"))
    assert topo.gpus == [f"GPU{i}" for i in range(8)] and topo.nics == [f"NIC{i}" for i in range(8)]
    assert topo.matrix["GPU0"]["NIC7"] == "PHB" and topo.matrix["GPU0"]["GPU1"] == "NV12"
    assert (topo.cpu_affinity["GPU0"], topo.numa_affinity["GPU0"], topo.gpu_numa_id["GPU0"]) == ("0-115", "0-3", None)
    assert len(topo.warnings) == 8 and "'PH0-115'" in topo.warnings[0]
    assert topo.nic_names["NIC7"] == "mlx5_7" and topo.matrix["NIC7"]["NIC7"] == "X"
    assert topo.nearest_nics("GPU3") == [f"mlx5_{i}" for i in range(8)]  # all PHB: a VM behind one host bridge


def test_topo_single_nic_without_legend_and_nic_row_without_affinity() -> None:
    topo = parse_nvidia_smi_topo(real_output("nvidia_smi_topo", "l40s-tp8-normalized-nic0-8.txt"))
    assert topo.nics == ["NIC0"] and topo.nic_names == {}
    assert topo.matrix["GPU1"]["GPU0"] == "PIX" and topo.matrix["GPU4"]["NIC0"] == "SYS"
    assert (topo.cpu_affinity["GPU4"], topo.numa_affinity["GPU4"]) == ("32-63,96-127", "1")
    assert "NIC0" not in topo.cpu_affinity
    assert topo.nearest_nics("GPU0") == ["NIC0"] and topo.nic_device("NIC0") == "NIC0"


def test_topo_one_gpu_and_five_roce_lag_nics_picks_the_pxb_bond() -> None:
    topo = parse_nvidia_smi_topo(real_output("nvidia_smi_topo", "lmdeploy-notes-1gpu-5bond-4.txt"))
    assert topo.gpus == ["GPU0"] and len(topo.nics) == 5
    assert topo.matrix["GPU0"]["NIC3"] == "PXB" and topo.matrix["GPU0"]["NIC4"] == "NODE"
    assert topo.nearest_nics("GPU0") == ["mlx5_bond_3"]
    assert topo.cpu_affinity == {"GPU0": "32-63,96-127"} and topo.numa_affinity == {"GPU0": "1"}


def test_topo_raw_tabs_with_two_pix_nics_per_gpu_pair() -> None:
    topo = parse_nvidia_smi_topo(real_output("nvidia_smi_topo", "openpi-env-a800-bond-tabs-3.txt"))
    assert topo.nearest_nics("GPU0") == ["mlx5_bond_0", "mlx5_bond_1"]
    assert topo.nearest_nics("GPU6") == ["mlx5_bond_6", "mlx5_bond_7"]
    assert topo.matrix["GPU2"]["NIC0"] == "NODE" and topo.matrix["NIC7"]["NIC6"] == "PIX"
    assert (topo.cpu_affinity["GPU4"], topo.numa_affinity["GPU4"], topo.gpu_numa_id["GPU4"]) == ("62-123", "1", None)
    assert topo.warnings == []


def test_topo_without_nics_has_no_nic_columns_and_no_nearest_nic() -> None:
    topo = parse_nvidia_smi_topo(real_output("nvidia_smi_topo", "rhelai-h100x8-no-nic-7.txt"))
    assert (topo.nics, topo.nic_names, topo.nearest_nics("GPU0")) == ([], {}, [])
    assert topo.matrix["GPU3"]["GPU7"] == "NV18" and topo.cpu_affinity["GPU7"] == "0-63"


def test_topo_old_layout_names_nic_columns_by_rdma_device() -> None:
    topo = parse_nvidia_smi_topo(real_output("nvidia_smi_topo", "traverse-power9-4gpu-oldstyle-6.txt"))
    assert topo.nics == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"] and topo.nic_names == {}
    assert topo.nearest_nics("GPU2") == ["mlx5_2", "mlx5_3"]
    assert (topo.numa_affinity["GPU2"], topo.gpu_numa_id) == ("8", {})
    assert "mlx5_0" not in topo.cpu_affinity and topo.matrix["mlx5_0"]["mlx5_1"] == "PIX"


# --- -L ------------------------------------------------------------------------------------------------------


def test_gpu_list_single_h200_after_a_prompt_line() -> None:
    listing = parse_nvidia_smi_L(real_output("nvidia_smi_L", "dranet-gke-1.txt"))
    assert [(g.index, g.name, g.uuid) for g in listing.gpus] == [
        (0, "NVIDIA H200", "GPU-0c37e717-0699-77ee-9b44-bd80680d3cf2")
    ]


def test_gpu_list_with_mig_children() -> None:
    (gpu,) = parse_nvidia_smi_L(real_output("nvidia_smi_L", "mig-tutorial-a100-mig-devices-4.txt")).gpus
    assert (gpu.index, gpu.name) == (7, "NVIDIA A100-SXM4-80GB")
    assert [(m.profile, m.index, m.uuid) for m in gpu.mig_devices] == [
        ("1c.3g.40gb", 0, "MIG-XXXXXXXX-XXXX-XXXX-937b-d7d1304c37e5"),
        ("2c.3g.40gb", 1, "MIG-XXXXXXXX-XXXX-XXXX-825f-d0b7d9521771"),
    ]


def test_gpu_list_of_eight_a100() -> None:
    listing = parse_nvidia_smi_L(real_output("nvidia_smi_L", "perf-report-a100x8-5.txt"))
    assert [g.index for g in listing.gpus] == list(range(8))
    assert {g.name for g in listing.gpus} == {"NVIDIA A100-SXM4-80GB"}
    assert listing.gpus[5].uuid == "GPU-1021f22a-12ac-70f2-4a35-78a932dffea6"


def test_gpu_list_driver_failure_is_an_error_not_an_exception() -> None:
    listing = parse_nvidia_smi_L("No devices were found\n")
    assert (listing.gpus, listing.errors) == ([], ["No devices were found"])


# --- --query-gpu ---------------------------------------------------------------------------------------------


def test_query_l40s_with_units_in_header_and_values() -> None:
    q = parse_nvidia_smi_query(real_output("nvidia_smi_query", "l40s-tp8-csv-3.txt"))
    assert q.columns == ["index", "name", "pci.bus_id", "memory.total", "driver_version"]
    assert q.units == {"memory.total": "MiB"} and len(q.rows) == 8
    row = q.rows[6]
    assert (q.index(row), row["name"], q.memory_total_mib(row), q.driver_version(row)) == (
        6,
        "NVIDIA L40S",
        46068,
        "580.178.04",
    )
    assert (row["pci.bus_id"], q.pci_bus_id(row)) == ("00000000:E3:00.0", "0000:e3:00.0")


def test_query_without_index_column() -> None:
    q = parse_nvidia_smi_query(real_output("nvidia_smi_query", "perf-report-a100x8-csv-2.txt"))
    assert q.columns == ["name", "memory.total", "driver_version"] and len(q.rows) == 8
    assert {q.memory_total_mib(r) for r in q.rows} == {81920} and q.index(q.rows[0]) is None


def test_query_gpu_names_with_spaces_and_no_units() -> None:
    q = parse_nvidia_smi_query(real_output("nvidia_smi_query", "vllm-notes-mixed-gpus-csv-4.txt"))
    assert [r["name"] for r in q.rows] == [
        "NVIDIA T1000 8GB",
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    ]
    assert q.units == {} and q.memory_total_mib(q.rows[0]) is None and q.pci_bus_id(q.rows[2]) == "0000:75:00.0"


def test_query_synthetic_eight_l20() -> None:
    q = parse_nvidia_smi_query(SYNTHETIC_L20_CSV)
    assert [q.index(r) for r in q.rows] == list(range(8)) and {r["name"] for r in q.rows} == {"NVIDIA L20"}
    assert sum(q.memory_total_mib(r) for r in q.rows) == 8 * 46068
    assert len({q.pci_bus_id(r) for r in q.rows}) == 8 and q.pci_bus_id(q.rows[0]) == "0000:0f:00.0"
    assert {q.driver_version(r) for r in q.rows} == {"570.124.06"}


def test_query_noheader_nounits_takes_columns_from_the_caller() -> None:
    text = "$ nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits\n0, NVIDIA L20, 46068\n"
    q = parse_nvidia_smi_query(text, columns=["index", "name", "memory.total"])
    assert (q.has_header, q.memory_total_mib(q.rows[0]), q.rows[0]["name"]) == (False, 46068, "NVIDIA L20")
    positional = parse_nvidia_smi_query(text)
    assert (positional.columns, positional.rows[0]["1"]) == (["0", "1", "2"], "NVIDIA L20")


def test_query_not_available_values_and_invalid_field_error() -> None:
    q = parse_nvidia_smi_query("index, memory.used [MiB]\n0, [N/A]\n")
    assert q.memory_used_mib(q.rows[0]) is None and q.value(q.rows[0], "memory.used") is None
    bad = parse_nvidia_smi_query('Field "memory.totl" is not a valid field to query.\n')
    assert (bad.rows, bad.errors) == ([], ['Field "memory.totl" is not a valid field to query.'])


@pytest.mark.parametrize(
    ("parser", "text", "reason"),
    [
        (parse_nvidia_smi_topo, "", "empty"),
        (parse_nvidia_smi_topo, real_output("nvidia_smi_L", "perf-report-a100x8-5.txt"), "GPU0"),
        (parse_nvidia_smi_L, real_output("nvidia_smi_topo", "rhelai-h100x8-no-nic-7.txt"), "nvidia-smi -L"),
        (parse_nvidia_smi_L, " \n", "empty"),
        (parse_nvidia_smi_query, real_output("perftest_errors", "k8s-rdma-shared-issue169-nodev-7.txt"), "query"),
        (parse_nvidia_smi_query, real_output("nvidia_smi_topo", "l40s-tp8-normalized-nic0-8.txt"), "query"),
    ],
)
def test_text_that_is_not_the_nvidia_smi_output_asked_for_is_refused(parser, text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parser(text)


# A real driver warning: nvidia-smi prints it (and exits 14) when a board's infoROM fails its checksum
# (NVIDIA/gpu-operator#20 "WARNING: infoROM is corrupted at gpu 0000:B3:00.0"; nvidia-smi(1) RETURN VALUE 14
# "infoROM is corrupted"). Where it lands before the CSV is synthetic here: the real L40S CSV behind the real line.
INFOROM = "WARNING: infoROM is corrupted at gpu 0000:B3:00.0"


def test_query_with_a_leading_inforom_warning_keeps_every_gpu_and_the_warning() -> None:
    q = parse_nvidia_smi_query(INFOROM + "\n" + real_output("nvidia_smi_query", "l40s-tp8-csv-3.txt"))
    assert q.columns == ["index", "name", "pci.bus_id", "memory.total", "driver_version"] and len(q.rows) == 8
    assert q.warnings == [INFOROM] and q.memory_total_mib(q.rows[7]) == 46068 and q.index(q.rows[7]) == 7


def test_query_noheader_with_a_warning_is_not_a_phantom_gpu() -> None:
    text = f"{INFOROM}\n0, NVIDIA H100 80GB HBM3, 81559\n1, NVIDIA H100 80GB HBM3, 81559\n"
    q = parse_nvidia_smi_query(text, columns=["index", "name", "memory.total"])
    assert [q.index(r) for r in q.rows] == [0, 1] and q.warnings == [INFOROM]
    assert parse_nvidia_smi_query(text).columns == ["0", "1", "2"]


def test_query_values_with_units_and_not_available_are_numbers_or_none() -> None:
    text = (
        "index, memory.total [MiB], power.limit [W], clocks.max.sm [MHz], utilization.gpu [%], ecc.errors.uncorrected"
        ".volatile.total\n0, 81559 MiB, 350.00 W, 1980 MHz, 3 %, [N/A]\n1, 81559 MiB, [Not Supported], 1980 MHz, "
        "0 %, 0\n"
    )
    q = parse_nvidia_smi_query(text)
    first, second = q.rows
    assert q.units == {"memory.total": "MiB", "power.limit": "W", "clocks.max.sm": "MHz", "utilization.gpu": "%"}
    assert (q.memory_total_mib(first), q.number(first, "power.limit"), q.number(first, "utilization.gpu")) == (
        81559,
        350.0,
        3.0,
    )
    assert q.number(first, "ecc.errors.uncorrected.volatile.total") is None and q.number(second, "power.limit") is None
    assert q.number(second, "ecc.errors.uncorrected.volatile.total") == 0.0


def test_gpu_list_with_a_warning_line_keeps_it_and_the_gpus() -> None:
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1b2c)\n" + INFOROM + "\n"
    listing = parse_nvidia_smi_L(text)
    assert [g.index for g in listing.gpus] == [0] and listing.warnings == [INFOROM]
