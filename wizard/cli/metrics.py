"""`roce-wizard metrics`: a Prometheus exporter over the same SSH executors (``--listen``) or one scrape."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from wizard.cli.options import add_target_options, check_target, command_parser, run_async
from wizard.errors import EXIT_FAILED, EXIT_OK, UsageError

DEFAULT_LISTEN = "127.0.0.1:9420"


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--listen {text!r}: want HOST:PORT, e.g. {DEFAULT_LISTEN}")
    return host.strip("[]") or "127.0.0.1", int(port)


def parser() -> argparse.ArgumentParser:
    """The command's options (also read by tests/engine/test_cli_options.py)."""
    p = command_parser("metrics", "Prometheus exporter: per port and priority PFC pause frames and time, discards, "
                       "out-of-sequence, ECN marks, CNPs, link state/speed/MTU and the cross-host lint, read from "
                       "every host over SSH (one exec per host per scrape).")  # fmt: skip
    add_target_options(p, state_dir="state directory (the demo prepares its hosts there)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--listen", metavar="HOST:PORT", help=f"serve /metrics here (default {DEFAULT_LISTEN})")
    mode.add_argument("--once", action="store_true", help="print one scrape in the exposition format and exit "
                      "(status 1 when a host could not be read)")  # fmt: skip
    p.add_argument("--scrape-timeout", type=float, default=5.0, metavar="S",
                   help="per-host limit of one scrape; a slower host is reported stale (default 5)")  # fmt: skip
    p.add_argument("--lint-interval", type=float, default=300.0, metavar="S",
                   help="seconds between background lint and port-list refreshes (default 300)")  # fmt: skip
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    check_target(args, "metrics")
    if args.scrape_timeout <= 0 or args.lint_interval <= 0:
        raise UsageError("--scrape-timeout and --lint-interval must be positive")
    listen = None if args.once else _listen(args.listen or DEFAULT_LISTEN)
    return run_async(_main(args, listen))


async def _main(args: argparse.Namespace, listen: tuple[str, int] | None) -> int:
    # The same executors (and demo preparation) as bwtest/doctor: one place knows how to reach the hosts.
    from wizard.cli.connect import connected_hosts
    from wizard.metrics.scrape import Scraper

    async with connected_hosts(args) as (answers, executors, _state_dir):
        scraper = Scraper(answers, executors, timeout_s=args.scrape_timeout, simulated=args.demo,
                          lint_interval_s=args.lint_interval)  # fmt: skip
        try:
            await scraper.refresh()  # the port list first: a scrape reads ports it knows
            if listen is None:
                return await _once(scraper)
            return await _serve(scraper, *listen)
        finally:
            await scraper.close()


async def _once(scraper: Any) -> int:
    from wizard.metrics.exposition import render

    snap = await scraper.scrape()
    sys.stdout.write(render(snap))
    sys.stdout.flush()
    stale = [f"{name} ({r.reason})" for name, r in snap.hosts.items() if not r.up]
    if stale:
        sys.stderr.write(f"roce-wizard: stale: {', '.join(stale)}\n")
    return EXIT_FAILED if stale else EXIT_OK


async def _serve(scraper: Any, host: str, port: int) -> int:
    """prometheus_client's HTTP server runs in its own thread; each scrape hops onto this event loop, which owns
    the SSH connections, and waits at most the scrape timeout plus a margin."""
    import asyncio
    import signal

    from prometheus_client import start_http_server

    from wizard.metrics.exposition import registry_for

    loop = asyncio.get_running_loop()

    async def scrape() -> Any:
        scraper.start_refresh()
        return await scraper.scrape()

    def source() -> Any:
        return asyncio.run_coroutine_threadsafe(scrape(), loop).result(timeout=scraper.timeout_s + 10)

    try:
        server, thread = start_http_server(port, addr=host, registry=registry_for(source))
    except OSError as exc:
        raise UsageError(f"--listen {host}:{port}: {exc.strerror or exc}") from None
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"roce-wizard: serving http://{shown}:{port}/metrics (Ctrl-C stops)\n")
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        server.shutdown()
        thread.join(timeout=5)
    return EXIT_OK
