"""``lab serve``: run a lab in the foreground and print how to reach it (used by the CLI and ``python -m``)."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable

from wizard.lab.cluster import Lab
from wizard.lab.faults import FAULT_HELP, parse_fault


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="roce-wizard lab serve", description="Serve simulated RoCE hosts over SSH.")
    p.add_argument("--hosts", type=int, default=2, help="number of hosts (2 = the seed-000 back-to-back pair)")
    p.add_argument("--names", help="comma-separated host names (overrides --hosts)")
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--base-port", type=int, default=0, help="first port (host i listens on base+i); 0 = ephemeral")
    p.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="HOST:KIND[=ARG]",
        help="inject a fault; kinds: " + "; ".join(FAULT_HELP.values()),
    )
    p.add_argument("--time-scale", type=float, default=1.0, help="multiply simulated delays (sleep, ping, apt)")
    p.add_argument("--credentials", help="directory for id_ed25519 and known_hosts (default: a temp dir)")
    return p


def make_lab(args: argparse.Namespace) -> Lab:
    faults = [parse_fault(s) for s in args.fault]
    if args.names:
        lab = Lab.reference([n.strip() for n in args.names.split(",") if n.strip()], faults=faults)
    elif args.hosts == 2:
        lab = Lab.reference(["server1", "server2"], faults=faults)
    else:
        lab = Lab.generated(args.hosts, faults=faults)
    lab.time_scale = args.time_scale
    return lab


async def serve(
    lab: Lab,
    *,
    bind: str = "127.0.0.1",
    base_port: int = 0,
    credentials: str | None = None,
    say: Callable[[str], None] = print,
) -> None:
    """Start ``lab``, print endpoints and credentials, and run until cancelled."""
    from pathlib import Path

    if credentials:
        lab.write_credentials(Path(credentials))
    await lab.start(bind, base_port)
    try:
        say(f"roce-wizard lab: {len(lab.names)} simulated hosts (every result is simulated)")
        for name in lab.names:
            host, port = lab.endpoint(name)
            note = " (unreachable fault: nothing listens)" if lab.host(name).fault("unreachable") else ""
            say(f"  {name:<12} {host}:{port}  mgmt {lab.host(name).mgmt}{note}")
        say(f"client key:  {lab.client_key_path}")
        say(f"known_hosts: {lab.known_hosts_path}")
        first = lab.names[0]
        say(
            f"try: ssh -i {lab.client_key_path} -o UserKnownHostsFile={lab.known_hosts_path} "
            f"-p {lab.endpoint(first)[1]} root@{lab.endpoint(first)[0]} rdma link show"
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await lab.stop()  # also removes the lab-owned credentials directory


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        lab = make_lab(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(lab, bind=args.bind, base_port=args.base_port, credentials=args.credentials))
    except KeyboardInterrupt:
        pass
    return 0
