"""A TCP relay that forwards each connection to a server and keeps every byte the client
sent on it: how benchmarks/bench_fuzz_baselines.py records what a fuzzing campaign sent,
to replay it afterwards into a build instrumented for measuring.

In the bench's own process, :class:`RecordingRelay` keeps the connections in memory.  For
a target that ``pycdr fuzz --spawn`` starts (and restarts) itself, this script is the
spawned command:

    python benchmarks/recording_relay.py --journal DIR -- SERVER ARGS...

It forks a relay, then becomes SERVER (exec: the process the fuzzer watches, its CPU,
memory, exit status and sanitizer report, is the server's own, started with the
environment the fuzzer gives it, PYCDR_COVERAGE and all).  The server's standard output
goes to the relay, which reads the IOR it prints, prints the same IOR with the relay's
address in place of the server's, and from then on forwards the server's output and
relays connections to it, appending what each client sends to a journal of its own in
DIR as it comes (so a relay stopped at any moment has kept all it saw).  It ends when the
server's output does, at the server's exit.  The server's standard error (a sanitizer's
report) is left as it was.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import socket
import struct
import sys
import tempfile
import threading
import time

# Bytes kept of one recorded connection (a fuzzer's case is far shorter; a longer one is
# replayed cut, and counted).
MAX_CONNECTION_BYTES = 1 << 20
# A journal's record: the connection's number in that journal, the chunk's length.
JOURNAL_RECORD = struct.Struct(">II")
JOURNAL_SUFFIX = ".journal"
# Replay: how long a connection waits for the server's next answer or close, and the
# longest its answers are read, in such waits.
REPLAY_WAIT = 0.5
REPLAY_ANSWERS_WAITS = 4
# What rewriting the server's IOR needs.
REFERENCE_MODULES = ("pycdr.addressing.rewrite", "pycdr.codec.ior", "pycdr.fuzz.target")


class RecordingRelay:
    """Forwards each connection to ``target`` and keeps what the client sent on it; runs
    its own event loop in a thread.  ``target``: (host, port), or a function giving it
    for each new connection (called in a worker thread: it may restart a server).
    ``journal``: a file each chunk a client sends is also appended to as it comes."""

    def __init__(self, target, journal: str | None = None):
        self.target = target
        self.connections: list = []      # what the client sent, a bytearray a connection
        self.cut = 0                     # connections longer than MAX_CONNECTION_BYTES
        self.journal = None if journal is None else \
            os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.loop = asyncio.new_event_loop()
        self.port = None
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self.thread.start()
        ready.wait(10)

    def _run(self, ready):
        asyncio.set_event_loop(self.loop)
        # (A connection the fuzzer left open is cut at the end, its task with it: not an
        # error worth a message.)
        self.loop.set_exception_handler(lambda loop, context: None)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=256))
        self.port = self.server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    def _keep(self, number: int, sent: bytearray, chunk: bytes) -> None:
        chunk = chunk[:MAX_CONNECTION_BYTES - len(sent)]
        if not chunk:
            return
        sent.extend(chunk)
        if self.journal is not None:
            os.write(self.journal, JOURNAL_RECORD.pack(number, len(chunk)) + chunk)

    async def _serve(self, client_reader, client_writer):
        sent = bytearray()
        # (Kept from the start: a connection still open at the end counts too.)
        number = len(self.connections)
        self.connections.append(sent)
        try:
            target = self.target if isinstance(self.target, tuple) else \
                await self.loop.run_in_executor(None, self.target)
            server_reader, server_writer = await asyncio.open_connection(*target)
        except OSError:
            client_writer.close()
            return

        async def upstream():
            while True:
                chunk = await client_reader.read(65536)
                if not chunk:
                    break
                self._keep(number, sent, chunk)
                server_writer.write(chunk)
                await server_writer.drain()
            if server_writer.can_write_eof():
                server_writer.write_eof()

        async def downstream():
            while True:
                chunk = await server_reader.read(65536)
                if not chunk:
                    break
                client_writer.write(chunk)
                await client_writer.drain()
            client_writer.close()

        try:
            await asyncio.gather(upstream(), downstream())
        except (OSError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            for writer in (server_writer, client_writer):
                writer.close()

    async def _stop(self):
        self.server.close()
        for _ in range(10):              # (a connection accepted meanwhile: its task too)
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if not tasks:
                break
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.sleep(0.05)    # (the cancelled tasks' own ends run)
        self.loop.stop()

    def close(self) -> list:
        """Stops the relay; returns the connections' bytes (the empty ones left out)."""
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop)
        self.thread.join(10)
        if self.journal is not None:
            os.close(self.journal)
        self.cut = sum(len(sent) >= MAX_CONNECTION_BYTES for sent in self.connections)
        return [bytes(sent) for sent in self.connections if sent]


def read_journals(folder: str) -> tuple:
    """The connections the journals in ``folder`` kept, journal after journal, each in
    the order they were opened: ([bytes, ...], how many reached MAX_CONNECTION_BYTES)."""
    out, cut = [], 0
    for name in sorted(os.listdir(folder)):
        if not name.endswith(JOURNAL_SUFFIX):
            continue
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        connections: dict = {}
        at = 0
        while at + JOURNAL_RECORD.size <= len(data):
            number, size = JOURNAL_RECORD.unpack_from(data, at)
            at += JOURNAL_RECORD.size
            connections.setdefault(number, bytearray()).extend(data[at:at + size])
            at += size
        for number in sorted(connections):
            out.append(bytes(connections[number]))
            cut += len(connections[number]) >= MAX_CONNECTION_BYTES
    return out, cut


def save_connections(connections: list, path: str) -> None:
    """Connections, each as a 4-byte big-endian length and its bytes."""
    with open(path, "wb") as f:
        for data in connections:
            f.write(struct.pack(">I", len(data)) + data)


def load_connections(path: str) -> list:
    """The connections save_connections() wrote."""
    with open(path, "rb") as f:
        data = f.read()
    out, at = [], 0
    while at + 4 <= len(data):
        size = struct.unpack_from(">I", data, at)[0]
        out.append(data[at + 4:at + 4 + size])
        at += 4 + size
    return out


def replay_connection(host: str, port: int, data: bytes, wait: float = REPLAY_WAIT) -> None:
    """Sends ``data`` on a connection of its own, shuts the sending side and reads the
    answers until the server closes, nothing came for ``wait`` seconds, or
    REPLAY_ANSWERS_WAITS such waits have passed (a server that answers without end: omniORB
    4.2.5 floods some connections with replies)."""
    try:
        with socket.create_connection((host, port), timeout=5) as s:
            s.settimeout(wait)
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                deadline = time.monotonic() + REPLAY_ANSWERS_WAITS * wait
                while s.recv(65536) and time.monotonic() < deadline:
                    pass
            except OSError:
                pass
    except OSError:
        pass


def _relayed_reference(line: str, port: int) -> str:
    """``line`` with the IOR it holds pointing at 127.0.0.1:``port`` in place of the
    server's address, and that address: (line, (host, port))."""
    from pycdr.addressing.rewrite import ReferenceRewriter
    from pycdr.codec.ior import ior_from_string, ior_to_string
    from pycdr.fuzz.target import IOR_RE, endpoint
    text = IOR_RE.search(line).group(1)
    server = endpoint(text)
    ior = ior_from_string(text)
    moved, _ = ReferenceRewriter({server: ("127.0.0.1", port)}).rewrite(ior)
    # (The IOR's encapsulation keeps the server's byte order: its first octet.)
    return line.replace(text, ior_to_string(moved, little=text[4:6] == "01")), server


def _relay_output(output: int, journal_dir: str) -> None:
    """The relay's side of the fork: reads the server's output from ``output``."""
    for module in REFERENCE_MODULES:      # (imported while the server starts)
        importlib.import_module(module)
    relay = None
    with os.fdopen(output, "r", errors="replace") as server_output:
        for line in server_output:
            if relay is None and "IOR:" in line:
                fd, journal = tempfile.mkstemp(suffix=JOURNAL_SUFFIX, dir=journal_dir)
                os.close(fd)
                relay = RecordingRelay(None, journal)
                line, relay.target = _relayed_reference(line, relay.port)
            try:
                sys.stdout.write(line)
                sys.stdout.flush()
            except OSError:           # (the fuzzer closed its end: the server was stopped)
                pass
    # The server has exited: the fuzzer's pipe is let go at once (it reads the server's
    # output to its end, a sanitizer's report, before judging the exit).
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(devnull, fd)
    if relay is not None:
        relay.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--journal", required=True, metavar="DIR",
                        help="folder of the journals (one per server process)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="-- SERVER ARGS...: the server, which prints its IOR")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no server command after --")
    os.makedirs(args.journal, exist_ok=True)
    output, server_end = os.pipe()
    if os.fork() == 0:
        os.close(server_end)
        try:
            _relay_output(output, args.journal)
        finally:
            os._exit(0)
    os.close(output)
    os.dup2(server_end, 1)
    os.close(server_end)
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main())
