"""Test pods request every rail's RDMA resource and network, IPC_LOCK and no memory limit; the ib_write_bw script
finds the RoCE v2 GID of the pod's rail address itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from wizard.cli.export_k8s import main as k8s_cmd
from wizard.cli.export_k8s import saved_facts
from wizard.export.k8s_inputs import gather
from wizard.export.k8s_pods import nccl_pods, pair_hosts, perftest_pods, script
from wizard.paths import assets_dir


def test_perftest_pods_use_every_rail_across_two_nodes(answers, facts):
    inputs = gather(answers, facts)
    server, client = perftest_pods(inputs, pair_hosts(inputs))
    assert server["spec"]["nodeSelector"]["kubernetes.io/hostname"] == "server1"
    assert client["spec"]["nodeSelector"]["kubernetes.io/hostname"] == "server2"
    for pod in (server, client):
        container = pod["spec"]["containers"][0]
        assert pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == (
            "default/rail0,default/rail1,default/rail2,default/rail3"
        )
        assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        assert container["resources"]["limits"] == {f"rdma/rdma_rail{i}": 1 for i in range(4)}
        assert "memory" not in container["resources"]["limits"]
    assert client["spec"]["containers"][0]["command"][1:] == [
        "client",
        "server.rdma-test",
        "mlx5_0:net1:18515",  # the names DOCA gives the devices: the export runs after the ofed stage
        "mlx5_1:net2:18516",
        "mlx5_2:net3:18517",
        "mlx5_3:net4:18518",
    ]


def test_nccl_pods_take_the_gpus_and_rail_devices_found(answers, facts):
    inputs = gather(answers, facts)
    rank0, rank1 = nccl_pods(inputs, pair_hosts(inputs))
    env = {e["name"]: e["value"] for e in rank0["spec"]["containers"][0]["env"]}
    assert env["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"
    # 8 ranks in one pod share memory through /dev/shm: a memory-backed volume, not the container's 64 MiB
    container = rank0["spec"]["containers"][0]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in container["volumeMounts"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}} in rank0["spec"]["volumes"]
    assert env["NCCL_IB_TC"] == "106" and env["NCCL_CROSS_NIC"] == "0"
    assert rank1["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert "--node-rank=1" in rank1["spec"]["containers"][0]["command"]


def _fake_tools(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ip").write_text(
        "#!/bin/sh\necho '3: net1    inet 192.168.11.130/24 brd 192.168.11.255 scope global net1'\n"
    )
    (bin_dir / "ib_write_bw").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/calls\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    port = tmp_path / "sys/class/infiniband/rocep59s0f0/ports/1"
    rows = {
        "0": ("fe80:0000:0000:0000:0e42:a1ff:fe00:0000", "IB/RoCE v1"),
        "1": ("fe80:0000:0000:0000:0e42:a1ff:fe00:0000", "RoCE v2"),
        "2": ("0000:0000:0000:0000:0000:ffff:c0a8:0b82", "IB/RoCE v1"),
        "3": ("0000:0000:0000:0000:0000:ffff:c0a8:0b82", "RoCE v2"),
    }
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs/types").mkdir(parents=True)
    for index, (gid, kind) in rows.items():
        (port / "gids" / index).write_text(gid + "\n")
        (port / "gid_attrs/types" / index).write_text(kind + "\n")
    return bin_dir


def test_script_picks_the_roce_v2_gid_of_the_pod_address(tmp_path):
    bin_dir = _fake_tools(tmp_path)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SYSFS": str(tmp_path / "sys"), "TCLASS": "106"}
    run = subprocess.run(
        ["sh", str(assets_dir() / "k8s/ib_write_bw.sh"), "client", "server.rdma-test", "rocep59s0f0:net1:18515"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 0, run.stderr
    calls = (tmp_path / "calls").read_text().split()
    assert calls == [
        "-d",
        "rocep59s0f0",
        "-x",
        "3",
        "-p",
        "18515",
        "-F",
        "-D",
        "10",
        "--report_gbits",
        "--tclass=106",
        "server.rdma-test",
    ]


def test_script_fails_when_the_address_has_no_roce_v2_gid(tmp_path):
    bin_dir = _fake_tools(tmp_path)
    (tmp_path / "sys/class/infiniband/rocep59s0f0/ports/1/gid_attrs/types/3").write_text("IB/RoCE v1\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SYSFS": str(tmp_path / "sys")}
    run = subprocess.run(
        ["sh", str(assets_dir() / "k8s/ib_write_bw.sh"), "server", "-", "rocep59s0f0:net1:18515"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 1
    assert "no RoCE v2 GID for net1 (192.168.11.130)" in run.stderr
    assert not (tmp_path / "calls").exists()


def test_scripts_are_valid_shell_and_python():
    assert subprocess.run(["sh", "-n", str(assets_dir() / "k8s/ib_write_bw.sh")]).returncode == 0
    compile(script("allreduce.py"), "allreduce.py", "exec")


def test_command_exports_from_saved_facts_without_contacting_hosts(answers, facts, tmp_path):
    from wizard.engine.state import StateStore

    store = StateStore(tmp_path / "state")
    for host, host_facts in facts.items():
        store.save_facts(host, host_facts)
    assert saved_facts(answers, tmp_path / "state") is not None
    out = tmp_path / "k8s"
    argv = [
        "--answers",
        str(assets_dir() / "answers.example.yaml"),
        "--state-dir",
        str(tmp_path / "state"),
        "-o",
        str(out),
    ]
    assert k8s_cmd(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "10-nic-cluster-policy.yaml",
        "20-ip-pools.yaml",
        "30-rail-networks.yaml",
        "40-nic-configuration.yaml",
        "50-rdma-test.yaml",
        "60-nccl-test.yaml",
        "README.md",
        "helm-values.yaml",
    ]
    assert "resource `rdma/rdma_rail0`" in (out / "README.md").read_text()


def test_help_is_cheap():
    code = "import sys; from wizard.cli import export_k8s; print('pydantic' in sys.modules, 'asyncio' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["False", "False"], run.stderr
