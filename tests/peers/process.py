"""Running a peer ORB as a subprocess for the length of a test.

A peer writes its stdout and stderr to log files (never to pipes nobody reads, which would block
it once full); the launcher polls the log for the lines that say the peer is ready. Our own peer
programs exit when their stdin closes: stopping closes it (and if the test process dies, the
kernel closes it), then falls back to SIGTERM and SIGKILL. Programs that cannot watch stdin
(omniNames) get SIGTERM at once, and the kernel kills them if the test process dies.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS_DIR = os.path.dirname(os.path.abspath(__file__))

LOOPBACK = "127.0.0.1"


class PeerError(RuntimeError):
    """A peer did not start, did not answer in time, or failed."""


class PeerNotInstalled(PeerError):
    """A peer's programs are missing: run .ci/install-peers.sh."""


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


def corbaloc(host, port, object_key, giop=(1, 2)):
    """corbaloc URL for `object_key` (bytes) at host:port; the key is %-escaped as RFC 2396 says."""
    key = urllib.parse.quote_from_bytes(object_key, safe="/;?:@&=+$,-_.!~*'()")
    return f"corbaloc:iiop:{giop[0]}.{giop[1]}@{host}:{port}/{key}"


def _set_parent_death_signal():
    """Runs in the child before exec: SIGKILL it when the parent dies (Linux prctl
    PR_SET_PDEATHSIG), for peers that cannot watch their stdin (omniNames)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class PeerProcess:
    """One running peer program. `lines` are its stdout lines read so far."""

    def __init__(self, name, argv, *, env=None, exits_when_stdin_closes=True):
        self.name = name
        self.argv = list(argv)
        self.exits_when_stdin_closes = exits_when_stdin_closes
        self.log_dir = tempfile.mkdtemp(prefix=f"pycdr-peer-{name}-")
        self.stdout_path = os.path.join(self.log_dir, "stdout.log")
        self.stderr_path = os.path.join(self.log_dir, "stderr.log")
        with open(self.stdout_path, "wb") as stdout, open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=stdout, stderr=stderr, env=env,
                close_fds=True,
                preexec_fn=None if exits_when_stdin_closes else _set_parent_death_signal)

    @property
    def pid(self):
        return self.process.pid

    def stdout_text(self):
        with open(self.stdout_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stderr_text(self):
        with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def describe(self):
        """Command, exit status and output, for error messages."""
        return (f"{self.name}: {' '.join(self.argv)}\n"
                f"exit status: {self.process.poll()}\n"
                f"--- stdout ---\n{self.stdout_text()[-4000:]}\n"
                f"--- stderr ---\n{self.stderr_text()[-4000:]}")

    def wait_for_line(self, predicate, timeout, *, stream="stdout"):
        """The first complete line of `stream` for which predicate(line) holds; PeerError if the
        peer exits or `timeout` seconds pass first."""
        read_text = self.stdout_text if stream == "stdout" else self.stderr_text
        deadline = time.monotonic() + timeout
        while True:
            for line in read_text().splitlines(keepends=True):
                if line.endswith("\n") and predicate(line.rstrip("\r\n")):
                    return line.rstrip("\r\n")
            if self.process.poll() is not None:
                raise PeerError(f"peer exited before it was ready\n{self.describe()}")
            if time.monotonic() > deadline:
                raise PeerError(f"peer not ready after {timeout} s\n{self.describe()}")
            time.sleep(0.02)

    def stop(self, timeout=10):
        """End the peer and wait for it; idempotent. Removes its logs."""
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass  # the peer is already on its way out
            ways_to_end = [self.process.terminate, self.process.kill]
            if self.exits_when_stdin_closes:
                ways_to_end.insert(0, None)  # the stdin just closed; give it time to exit
            for send_signal in ways_to_end:
                if send_signal is not None:
                    send_signal()
                try:
                    self.process.wait(timeout=timeout / 3)
                    break
                except subprocess.TimeoutExpired:
                    continue
            else:
                self.process.wait()  # after SIGKILL this returns promptly
        elif self.process.stdin and not self.process.stdin.closed:
            self.process.stdin.close()
        shutil.rmtree(self.log_dir, ignore_errors=True)


class RunningPeer:
    """A started server peer: where it listens and what it serves. Use as a context manager or
    call stop(). `object_key` is bytes; `ior` the stringified IOR ("IOR:..."); `corbaloc` a
    corbaloc URL for the same object."""

    def __init__(self, process, *, ior, host, port, object_key, extra_dirs=()):
        self.process = process
        self.ior = ior
        self.host = host
        self.port = port
        self.object_key = object_key
        self.corbaloc = corbaloc(host, port, object_key)
        self._extra_dirs = list(extra_dirs)

    @property
    def pid(self):
        return self.process.pid

    def stop(self):
        self.process.stop()
        for directory in self._extra_dirs:
            shutil.rmtree(directory, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.stop()

    def __repr__(self):
        return f"<{self.process.name} peer pid {self.pid} at {self.host}:{self.port} key {self.object_key!r}>"


def start_server_with_retries(start_once, port, attempts=3):
    """Call start_once(port) and return its result. When the caller left the port to us, a port
    found free may be taken before the peer binds it, so a failed start is retried on a new port."""
    if port is not None:
        return start_once(port)
    for attempt in range(attempts):
        try:
            return start_once(free_port())
        except PeerError:
            if attempt == attempts - 1:
                raise


def read_echo_server_banner(process, timeout):
    """Wait for the "IOR:...", "KEY <hex>", "READY" lines our echo server programs print; return
    (ior, object_key). Stops the process and raises PeerError if they do not come."""
    try:
        process.wait_for_line(lambda line: line == "READY", timeout)
    except PeerError:
        process.stop()
        raise
    lines = process.stdout_text().splitlines()
    ior = next(line for line in lines if line.startswith("IOR:"))
    object_key = bytes.fromhex(next(line for line in lines if line.startswith("KEY "))[4:])
    return ior, object_key


def run_client_process(name, argv, timeout):
    """Run a peer client program to completion; return its stdout lines. PeerError if it fails or
    runs longer than `timeout` seconds (it is killed then)."""
    try:
        completed = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                   timeout=timeout)
    except subprocess.TimeoutExpired as timed_out:
        raise PeerError(f"{name} client did not finish in {timeout} s: {' '.join(argv)}\n"
                        f"--- stdout ---\n{timed_out.stdout}\n--- stderr ---\n{timed_out.stderr}") from None
    if completed.returncode != 0:
        raise PeerError(f"{name} client failed with exit status {completed.returncode}: {' '.join(argv)}\n"
                        f"--- stdout ---\n{completed.stdout}\n--- stderr ---\n{completed.stderr}")
    return completed.stdout.splitlines()
