"""Recording loopback traffic with Wireshark's dumpcap, as a user records the traffic
they later replay (needs dumpcap and capture rights: root or CAP_NET_RAW).

    with record_loopback(path, port):
        ...traffic to 127.0.0.1:port...
    # path is a pcapng file of it
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time

CAN_RECORD = shutil.which("dumpcap") is not None and os.geteuid() == 0
WHY_NOT = "recording needs Wireshark's dumpcap and capture rights (root)"


@contextlib.contextmanager
def record_loopback(path, port, *, timeout=30):
    # A 64 MB kernel buffer (-B): a fast client on loopback outruns the default 2 MB, and the
    # capture then misses packets (seen at 50,000 calls/s).
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    probe_port = probe.getsockname()[1]
    proc = subprocess.Popen(["dumpcap", "-n", "-B", "64", "-i", "lo", "-f",
                             f"tcp port {port} or udp port {probe_port}", "-w", path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + timeout
        seen = []
        for line in proc.stderr:      # dumpcap says so as it starts
            seen.append(line)
            if line.startswith("Capturing on"):
                break
            if time.monotonic() > deadline:
                break
        else:
            raise RuntimeError(f"dumpcap did not start: {''.join(seen)}")
        _wait_until_capturing(path, probe, deadline)
        yield
        time.sleep(0.5)                # the last packets reach the file
    finally:
        probe.close()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_until_capturing(path, probe, deadline) -> None:
    """dumpcap says "Capturing on" about a quarter of a second before it captures (a
    client that connected at once was missed whole: seen in a clean-clone run).  UDP
    datagrams to ``probe``'s port, which the filter takes and the GIOP readers skip, go
    until the file grows past its header: dumpcap wrote packets, so it captures."""
    address = probe.getsockname()
    header = None
    while time.monotonic() < deadline:
        probe.sendto(b"pycdr recording probe", address)
        time.sleep(0.02)
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if header is None and size:
            header = size
        elif header is not None and size > header:
            return
    raise RuntimeError("dumpcap captured nothing of its probes")
