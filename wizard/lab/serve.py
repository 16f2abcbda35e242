"""`roce-wizard lab serve`: the simulated cluster as a standalone SSH server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import signal
import sys
from pathlib import Path

from wizard.answers import yamlio
from wizard.errors import EXIT_OK, UsageError


def lab_answers(names: list[str], endpoints: dict[str, tuple[str, int]], key: Path, known_hosts: Path) -> dict:
    """A complete answers file that reaches the lab's hosts with the lab's key and host keys."""
    prefix = 24 if len(names) <= 250 else 16
    rails = []
    for rail in range(4):
        base = (
            ipaddress.ip_network(f"192.168.{11 + rail}.0/24")
            if prefix == 24
            else ipaddress.ip_network(f"172.{16 + rail}.0.0/16")
        )
        rails.append({"subnet": str(base)})
    return {
        "version": 1,
        "cluster": {"name": "sim-lab"},
        "ssh": {
            "user": "operator",
            "identity_file": str(key),
            "known_hosts": str(known_hosts),
            "connect_timeout_s": 5,
        },
        "hosts": [{"name": n, "address": endpoints[n][0], "port": endpoints[n][1]} for n in names],
        "discovery": {"expect_rdma_ports": 4, "expect_gpus": 8, "expect_link_speed_gbps": 25},
        "network": {"topology": "rails", "mtu": 9000, "rails": rails},
    }


def rails16_answers(
    endpoints: dict[str, tuple[str, int]], key: Path, known_hosts: Path, profile: str = "rails-16"
) -> dict:
    """The profile's answers (assets/answers.<profile>.yaml; rails-N's made from rails-16's) with the hosts and SSH
    settings pointing at the served lab."""
    from wizard.answers.profiles import demo_answers

    doc, _ = yamlio.load_with_lines(demo_answers(profile).read_text(encoding="utf-8"))
    doc["ssh"] = {
        "user": "operator",
        "identity_file": str(key),
        "known_hosts": str(known_hosts),
        "connect_timeout_s": 5,
    }
    doc["hosts"] = [{"name": n, "address": a, "port": p} for n, (a, p) in endpoints.items()]
    return doc


async def serve_lab(
    hosts: int,
    port: int,
    faults: list[str],
    write_answers: Path | None,
    profile: str | None = None,
    switch_os: str | None = None,
) -> int:
    from wizard.answers.profiles import rails_hosts
    from wizard.lab import Lab, parse_fault

    if hosts < 1 or hosts > 4096:
        raise UsageError("--hosts must be between 1 and 4096")
    try:
        parsed = [parse_fault(spec) for spec in faults]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        count = rails_hosts(profile)
        if count is not None:
            lab = Lab.rails(count, faults=parsed, switch_os=switch_os)
        elif profile == "ib-seed003":
            lab = Lab.ib_seed003(faults=parsed)
        elif hosts == 2:
            lab = Lab.reference(["server1", "server2"], faults=parsed)
        else:
            lab = Lab.generated(hosts, faults=parsed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    lab.time_scale = float(os.environ.get("ROCE_WIZARD_LAB_TIME_SCALE", "1") or 1)
    await lab.start(base_port=port)
    try:
        endpoints = {name: lab.endpoint(name) for name in lab.names}
        sys.stderr.write(
            f"SIMULATED cluster: {len(endpoints)} simulated hosts on 127.0.0.1 "
            f"(ports {min(p for _, p in endpoints.values())}-{max(p for _, p in endpoints.values())}); "
            "Ctrl-C stops it\n"
        )
        if write_answers is not None:
            creds = write_answers.parent / f"{write_answers.stem}-lab"
            key, known = lab.write_credentials(creds)
            if count is not None or profile == "ib-seed003":
                doc = rails16_answers(endpoints, key, known, str(profile))
            else:
                doc = lab_answers(list(lab.names), endpoints, key, known)
            header = "# SIMULATED cluster served by `roce-wizard lab serve`; valid only while it runs.\n"
            write_answers.write_text(header + yamlio.dump(doc), encoding="utf-8")
            sys.stderr.write(f"answers for it: {write_answers} (key and known_hosts in {creds}/)\n")
        for name, (host, p) in endpoints.items():
            sys.stderr.write(
                f"  {name}: ssh -p {p} -i {lab.client_key_path} "
                f"-o UserKnownHostsFile={lab.known_hosts_path} operator@{host}\n"
            )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await lab.stop()
    sys.stderr.write("lab stopped\n")
    return EXIT_OK
