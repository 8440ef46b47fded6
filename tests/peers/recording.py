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
import subprocess
import time

CAN_RECORD = shutil.which("dumpcap") is not None and os.geteuid() == 0
WHY_NOT = "recording needs Wireshark's dumpcap and capture rights (root)"


@contextlib.contextmanager
def record_loopback(path, port, *, timeout=30):
    # A 64 MB kernel buffer (-B): a fast client on loopback outruns the default 2 MB, and the
    # capture then misses packets (seen at 50,000 calls/s).
    proc = subprocess.Popen(["dumpcap", "-n", "-B", "64", "-i", "lo", "-f", f"tcp port {port}",
                             "-w", path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + timeout
        seen = []
        for line in proc.stderr:      # dumpcap says so once it captures
            seen.append(line)
            if line.startswith("Capturing on"):
                break
            if time.monotonic() > deadline:
                break
        else:
            raise RuntimeError(f"dumpcap did not start: {''.join(seen)}")
        yield
        time.sleep(0.5)                # the last packets reach the file
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
