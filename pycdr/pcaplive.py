"""Live capture: packets of an interface as a pcapng stream, for CaptureReader.

    with LiveCapture("lo", "tcp port 2809") as live:
        for segment in CaptureReader(live.stream):
            ...

libpcap does the capturing, through Wireshark's ``dumpcap`` (the capture
helper tshark itself runs; Debian/Ubuntu ``wireshark-common`` or
``tshark``): it writes pcapng to a pipe, read here by the same streaming
reader as files, so a live capture decodes exactly as the file it would save.
``save`` also writes every byte read to a file as it goes (``pycdr pcap -w``).
Capturing needs rights (root, CAP_NET_RAW/CAP_NET_ADMIN, or membership in the
group dumpcap is installed for); without them dumpcap's refusal is raised as
a :class:`~pycdr.errors.CaptureError` saying so.
"""

from __future__ import annotations

import shutil
import subprocess
import threading

from .errors import CaptureError

CAPTURE_RIGHTS = ("capturing needs rights: run as root, give dumpcap CAP_NET_RAW and "
                  "CAP_NET_ADMIN, or join the group allowed to run it (often 'wireshark')")


class _Tee:
    """A pipe's reads, also written to ``save``."""

    def __init__(self, pipe, save):
        self.pipe = pipe
        self.save = save
        self.name = getattr(pipe, "name", "<live>")

    def read1(self, n: int = -1) -> bytes:
        data = self.pipe.read1(n)
        if data:
            self.save.write(data)
        return data

    read = read1


class LiveCapture:
    """``dumpcap`` capturing ``interface`` (BPF ``bpf``; ``count`` packets or
    ``duration`` seconds at most) into ``stream``, a binary pipe of pcapng."""

    def __init__(self, interface: str, bpf: str | None = None, *, count: int | None = None,
                 duration: float | None = None, save: str | None = None):
        dumpcap = shutil.which("dumpcap")
        if dumpcap is None:
            raise CaptureError("live capture needs Wireshark's dumpcap (package "
                               "wireshark-common or tshark) on PATH")
        argv = [dumpcap, "-q", "-n", "-i", interface, "-w", "-"]
        if bpf:
            argv += ["-f", bpf]
        if count:
            argv += ["-c", str(count)]
        if duration:
            argv += ["-a", f"duration:{max(1, round(duration))}"]
        self.interface = interface
        self.started = threading.Event()
        self._stderr: list = []
        self._process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         stdin=subprocess.DEVNULL)
        self._stderr_thread = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_thread.start()
        self._save = open(save, "wb") if save else None
        self.stream = self._process.stdout if self._save is None else \
            _Tee(self._process.stdout, self._save)

    def _read_stderr(self) -> None:
        for line in self._process.stderr:
            text = line.decode(errors="replace").strip()
            if text.startswith("Capturing on"):
                self.started.set()
            elif text:
                self._stderr.append(text)
        self.started.set()

    def failure(self) -> CaptureError | None:
        """Why dumpcap stopped, once it has (None when it ended normally)."""
        code = self._process.poll()
        if code in (None, 0):
            return None
        self._stderr_thread.join(timeout=5)
        said = " ".join(self._stderr) or f"dumpcap exited with status {code}"
        hint = f"; {CAPTURE_RIGHTS}" if "permission" in said.lower() else ""
        return CaptureError(f"live capture on {self.interface}: {said}{hint}")

    def stop(self) -> None:
        """End the capture (dumpcap finishes its file; what it wrote is still read)."""
        if self._process.poll() is None:
            self._process.terminate()

    def close(self) -> None:
        self.stop()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()
        self._stderr_thread.join(timeout=5)
        if self._save is not None:
            self._save.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
