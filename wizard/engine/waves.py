"""Work over many hosts in waves of at most N at a time (the answers' ssh.max_parallel_hosts).

Each host's probe holds its raw output until it is parsed: a thousand hosts probed at once held a thousand batches
of lspci, GID tables and counters in memory together, where a wave of 64 holds 64. Order of results follows the
jobs, as with asyncio.gather."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def in_waves(limit: int, jobs: Iterable[Awaitable[T]]) -> list[T]:
    gate = asyncio.Semaphore(max(1, limit))

    async def one(job: Awaitable[T]) -> T:
        async with gate:
            return await job

    return list(await asyncio.gather(*(one(job) for job in jobs)))
