"""A step's bytes in and out: pipes and pseudo-terminals read and written by the event loop.

Output (``pump``): each task's stdout and stderr (or its terminal's
master, ``agent.pty``) is read as soon as anything is there, in chunks of
up to ``CHUNK`` bytes, and handed on at once -- no line buffering here:
``srun -l`` labels lines on its side, and a prompt without a newline must
show.  ``pump`` awaits its consumer before reading more, so a slow client
slows the task down (the pipe fills, the task's ``write`` blocks) instead
of the agent holding its output in memory.  The end of a pipe is an empty
read; the end of a terminal is ``EIO`` (all slave descriptors closed).

Input (``StdinFeed``): srun sends stdin in pieces (``POST /v1/steps/input``);
each piece goes to every task that reads stdin.  A feed keeps what its pipe
cannot take yet and writes it when the pipe drains; the request that
brought it is answered once every feed holds at most ``BACKLOG`` bytes, so
a task that reads slowly slows srun down, while one that never reads (but
keeps its stdin open) costs ``BACKLOG`` bytes at most before srun waits.
A task that has ended drops what was meant for it (``EPIPE``).  End of
file closes the pipe once its backlog is written; on a terminal it is a
``^D`` (``agent.pty.EOF_BYTE``), the terminal stays.

Worked example: ``srun -n2 cat`` and srun sends ``b"hi\\n"`` then EOF ->
both feeds write ``hi\\n``, close; each ``cat`` prints ``hi`` and ends; two
``out`` lines and two ``exit`` lines go back to srun.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

from agent.pty import EOF_BYTE

__all__ = ["BACKLOG", "CHUNK", "StdinFeed", "encode_event", "output_event", "pump", "readable"]

CHUNK = 65536
BACKLOG = 1 << 20  # bytes a feed may hold before the input request waits


def encode_event(event: dict[str, Any]) -> bytes:
    """One NDJSON line: ``{"task": 0, "out": "aGkK"}`` + newline."""
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


def output_event(task: int, stream: str, data: bytes) -> dict[str, Any]:
    return {"task": task, stream: base64.b64encode(data).decode("ascii")}


async def readable(fd: int) -> None:
    """Wait until ``fd`` can be read (or has ended)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(fd)


async def pump(fd: int, emit: Callable[[bytes], Awaitable[None]]) -> None:
    """Hand everything ``fd`` delivers to ``emit`` until its end; closes ``fd`` (also if cancelled)."""
    os.set_blocking(fd, False)
    try:
        while True:
            try:
                data = os.read(fd, CHUNK)
            except BlockingIOError:
                await readable(fd)
                continue
            except OSError as exc:
                if exc.errno == errno.EIO:  # a terminal whose slave side is all closed
                    return
                raise
            if not data:
                return
            await emit(data)
    finally:
        os.close(fd)


class StdinFeed:
    """The stdin of one task: a pipe (or a terminal master) written without blocking."""

    def __init__(self, fd: int, terminal: bool = False) -> None:
        os.set_blocking(fd, False)
        self.fd: int | None = fd
        self.terminal = terminal
        self._backlog = bytearray()
        self._closing = False
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def pending(self) -> int:
        return len(self._backlog)

    def write(self, data: bytes) -> None:
        if self.fd is None or self._closing:
            return
        self._backlog += data
        self._flush()

    def end(self) -> None:
        """End of file, once the backlog is written."""
        if self.fd is None or self._closing:
            return
        if self.terminal:
            self.write(EOF_BYTE)
            return
        self._closing = True
        self._flush()

    def close(self) -> None:
        """Drop the backlog and the descriptor (the task ended, or the step did)."""
        if self.fd is not None:
            asyncio.get_running_loop().remove_writer(self.fd)
            os.close(self.fd)
            self.fd = None
        self._backlog.clear()
        self._wake()

    async def drained(self, limit: int = BACKLOG) -> None:
        """Wait until at most ``limit`` bytes are still to be written."""
        while self.fd is not None and len(self._backlog) > limit:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter

    def _flush(self) -> None:
        if self.fd is None:
            return
        loop = asyncio.get_running_loop()
        while self._backlog:
            try:
                sent = os.write(self.fd, self._backlog[:CHUNK])
            except BlockingIOError:
                loop.add_writer(self.fd, self._writable)
                self._wake()  # waiters check the backlog again
                return
            except OSError:  # EPIPE: the task does not read any more
                self.close()
                return
            del self._backlog[:sent]
        loop.remove_writer(self.fd)
        self._wake()
        if self._closing:
            self.close()

    def _writable(self) -> None:
        self._flush()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)
