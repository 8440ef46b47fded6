"""A small GIOP server written without pycdr (threads, raw sockets and
``struct`` only), for testing the fuzzer against a target it did not write.

It serves one object (key ``RawEcho``): Requests of GIOP 1.0-1.2 get a
NO_EXCEPTION Reply (``_non_existent`` a boolean false, other operations an
empty body), a wrong key an OBJECT_NOT_EXIST system exception;
LocateRequests get a LocateReply; 1.1 and 1.2 fragments are reassembled;
whatever it cannot parse gets a MessageError and a close.  Requests go
through one servant lock, as a single-threaded POA serves them, while
LocateRequests are answered by the "ORB core" without it.

Planted faults (none where tests/fragile_server.py has its own):

- crash: a Request carrying a service context with id 15 aborts the
  process (SIGABRT);
- hang of Requests only: a Request whose operation name is longer than 255
  bytes or holds a byte above 0x7f takes the servant lock and never gives
  it back -- every Request after it waits for ever,
  LocateRequests are still answered;
- memory: a LocateRequest whose object key is 4096 bytes or longer is
  "cached": 40 MB kept for good, each time;
- with ``--profile-crash`` only (a second crash, of the same kind and
  symptom as the first, for the fuzzer's grouping of findings): a GIOP 1.2
  Request or LocateRequest addressed by profile (ProfileAddr) aborts the
  process.

Misbehaviours no case is to blame for, for the fuzzer's attribution tests:
``--die-after N`` aborts when the Nth connection comes in, whatever it
carries; ``--stall-after N`` stops accepting connections for
``--stall-seconds`` (once) when the Nth comes in; ``--spin-after N`` starts
a thread that loops for good (burning a core) when the Nth comes in, and
serves on; ``--no-faults`` leaves
the planted faults out (so that nothing else is to be found).

An expensive operation, for the fuzzer's CPU cost finding: with ``--burn
SECONDS``, a Request for the operation ``burn`` costs SECONDS of CPU (a
loop, under the servant lock) before anything after its operation name is
read.

Run as a script it prints a corbaloc URL and serves on 127.0.0.1 (a free
port, or --port) until its standard input closes or it is killed:

    python tests/raw_giop_server.py [--port N] [--die-after N] [--stall-after N]
                                    [--spin-after N] [--burn SECONDS]
"""

import argparse
import os
import resource
import socket
import struct
import sys
import threading
import time

OBJECT_KEY = b"RawEcho"
MAX_MESSAGE = 1 << 20
CRASH_CONTEXT_ID = 15
HANG_OPERATION_LENGTH = 255
LEAK_KEY_LENGTH = 4096
LEAK_BYTES = 40 << 20

REQUEST, REPLY, CANCEL, LOCATE_REQUEST, LOCATE_REPLY, CLOSE, MESSAGE_ERROR, FRAGMENT = range(8)
MORE_FRAGMENTS = 0x02

servant_lock = threading.Lock()
planted = [True]               # the faults below are in (--no-faults: out)
profile_crash = [False]        # --profile-crash: the second crash is in
key_cache = []                 # the planted leak
burn_seconds = [0.0]           # --burn: the CPU a Request for `burn` costs


class Malformed(Exception):
    pass


class Reader:
    """CDR reading; alignment counts from the start of the GIOP header."""

    def __init__(self, data, little, pos=12):
        self.data, self.pos = data, pos
        self.e = "<" if little else ">"

    def take(self, fmt, size):
        self.pos += (-self.pos) % size
        if self.pos + size > len(self.data):
            raise Malformed("short")
        value = struct.unpack_from(self.e + fmt, self.data, self.pos)[0]
        self.pos += size
        return value

    def octet(self):
        return self.take("B", 1)

    def short(self):
        return self.take("h", 2)

    def ulong(self):
        return self.take("I", 4)

    def octets(self):
        n = self.ulong()
        if n > len(self.data) - self.pos:
            raise Malformed("sequence beyond the message")
        value = self.data[self.pos:self.pos + n]
        self.pos += n
        return value

    def string(self):
        value = self.octets()
        if not value or value[-1] != 0:
            raise Malformed("string without NUL")
        return value[:-1]

    def contexts(self):
        ids = []
        for _ in range(self.ulong()):
            ids.append(self.ulong())
            self.octets()
        return ids


class Writer:
    def __init__(self, little):
        self.e = "<" if little else ">"
        self.buf = bytearray(12)

    def put(self, fmt, size, value):
        self.buf += bytes((-len(self.buf)) % size)
        self.buf += struct.pack(self.e + fmt, value)

    def ulong(self, v):
        self.put("I", 4, v)

    def octet(self, v):
        self.put("B", 1, v)

    def string(self, s):
        self.ulong(len(s) + 1)
        self.buf += s + b"\0"

    def message(self, version, little, msg_type):
        size = len(self.buf) - 12
        self.buf[0:12] = b"GIOP" + bytes([version[0], version[1], 1 if little else 0,
                                          msg_type]) + struct.pack(self.e + "I", size)
        return bytes(self.buf)


def message_error(version=(1, 0)):
    return b"GIOP" + bytes([1, min(version[1], 2), 0, MESSAGE_ERROR]) + bytes(4)


def read_target(r, version):
    """The object key (None for addressing by profile or reference)."""
    if version < (1, 2):
        return r.octets()
    disc = r.short()
    if disc == 0:
        return r.octets()
    if disc == 1:
        r.ulong()
        r.octets()
        if planted[0] and profile_crash[0]:
            os.abort()                   # the second planted crash
        return None
    if disc == 2:
        r.ulong()
        r.string()
        for _ in range(r.ulong()):
            r.ulong()
            r.octets()
        return None
    raise Malformed("TargetAddress discriminator")


def reply(version, little, request_id, key, operation):
    w = Writer(little)
    if version < (1, 2):
        w.ulong(0)                       # service contexts
        w.ulong(request_id)
    else:
        w.ulong(request_id)
    if key is not None and key != OBJECT_KEY:
        w.ulong(2)                       # SYSTEM_EXCEPTION
        if version >= (1, 2):
            w.ulong(0)
            w.buf += bytes((-len(w.buf)) % 8)
        w.string(b"IDL:omg.org/CORBA/OBJECT_NOT_EXIST:1.0")
        w.ulong(0)
        w.ulong(1)                       # COMPLETED_NO
    else:
        w.ulong(0)                       # NO_EXCEPTION
        if version >= (1, 2):
            w.ulong(0)
            if operation == b"_non_existent":
                w.buf += bytes((-len(w.buf)) % 8)
        if operation == b"_non_existent":
            w.octet(0)
    return w.message(version, little, REPLY)


def dispatch(operation):
    """The servant lock, taken as soon as the operation is known."""
    servant_lock.acquire()
    if planted[0] and (len(operation) > HANG_OPERATION_LENGTH or
                       any(b > 0x7F for b in operation)):
        threading.Event().wait()         # the planted hang: the lock is never released


def read_request_head(r, version):
    """(service context ids, or None when they come after the operation
    (1.2), request id, response expected, object key, operation)."""
    contexts = None
    if version < (1, 2):
        contexts = r.contexts()
        request_id = r.ulong()
        expected = r.octet() != 0
        if version == (1, 1):
            r.pos += 3
    else:
        request_id = r.ulong()
        expected = r.octet() & 1
        r.pos += 3
    key = read_target(r, version)
    return contexts, request_id, expected, key, r.string()


def handle_request(data, version, little):
    r = Reader(data, little)
    contexts, request_id, expected, key, operation = read_request_head(r, version)
    dispatch(operation)
    if operation == b"burn":
        burn(burn_seconds[0])
    try:
        if version < (1, 2):
            r.octets()                   # principal
        else:
            contexts = r.contexts()
    except (Malformed, struct.error):
        servant_lock.release()
        raise
    if planted[0] and CRASH_CONTEXT_ID in contexts:
        os.abort()                       # the planted crash
    try:
        return reply(version, little, request_id, key, operation) if expected else b""
    finally:
        servant_lock.release()


def handle_locate(data, version, little):
    r = Reader(data, little)
    request_id = r.ulong()
    key = read_target(r, version)
    if planted[0] and key is not None and len(key) >= LEAK_KEY_LENGTH:
        key_cache.append(b"\x01" * LEAK_BYTES)      # the planted leak
    w = Writer(little)
    w.ulong(request_id)
    w.ulong(1 if key is None or key == OBJECT_KEY else 0)
    return w.message(version, little, LOCATE_REPLY)


def recv_exact(sock, n):
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def serve_connection(sock):
    pending_11 = None                 # a 1.1 message waiting for its fragments
    pending_12 = {}                   # request id -> 1.2 message waiting for fragments
    try:
        while True:
            header = recv_exact(sock, 12)
            if header is None:
                return
            version = (header[4], header[5])
            if header[:4] != b"GIOP" or version not in ((1, 0), (1, 1), (1, 2)):
                sock.sendall(message_error())
                return
            little = bool(header[6] & 1)
            msg_type = header[7]
            size = struct.unpack(("<" if little else ">") + "I", header[8:12])[0]
            if size > MAX_MESSAGE:
                sock.sendall(message_error(version))
                return
            body = recv_exact(sock, size)
            if body is None:
                return
            data = header + body
            more = version >= (1, 1) and header[6] & MORE_FRAGMENTS
            try:
                if msg_type == FRAGMENT and version >= (1, 1):
                    if version == (1, 1):
                        if pending_11 is None:
                            raise Malformed("fragment without a message")
                        pending_11 += body
                        data, done = pending_11, not more
                    else:
                        rid = Reader(data, little).ulong()
                        if rid not in pending_12:
                            raise Malformed("fragment for no message")
                        pending_12[rid] += body[4:]
                        data, done = pending_12[rid], not more
                    if not done:
                        continue
                    pending_11 = None
                    pending_12.pop(rid, None) if version >= (1, 2) else None
                    data = data[:8] + struct.pack(("<" if little else ">") + "I",
                                                  len(data) - 12) + data[12:]
                    msg_type = data[7]
                elif more and msg_type in (REQUEST, REPLY):
                    if version == (1, 1):
                        pending_11 = bytearray(data)
                    else:
                        pending_12[Reader(data, little).ulong()] = bytearray(data)
                    continue
                if msg_type == REQUEST:
                    answer = handle_request(bytes(data), version, little)
                elif msg_type == LOCATE_REQUEST:
                    answer = handle_locate(bytes(data), version, little)
                elif msg_type == CANCEL:
                    answer = b""
                elif msg_type in (CLOSE, MESSAGE_ERROR):
                    return
                else:
                    raise Malformed("message type")
            except (Malformed, struct.error):
                sock.sendall(message_error(version))
                return
            if answer:
                sock.sendall(answer)
    except OSError:
        return
    finally:
        sock.close()


def spin():
    while True:
        pass


def burn(seconds):
    began = time.thread_time()
    while time.thread_time() - began < seconds:
        pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--die-after", type=int, default=0)
    ap.add_argument("--stall-after", type=int, default=0)
    ap.add_argument("--stall-seconds", type=float, default=0.3)
    ap.add_argument("--spin-after", type=int, default=0)
    ap.add_argument("--no-faults", action="store_true")
    ap.add_argument("--profile-crash", action="store_true")
    ap.add_argument("--burn", type=float, default=0.0)
    args = ap.parse_args(argv)
    # The planted crashes are os.abort(): judged by the exit, never looked at post mortem
    # (a core of this process is 130 MB in the folder the tests run in).
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    burn_seconds[0] = args.burn
    planted[0] = not args.no_faults
    profile_crash[0] = args.profile_crash
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(128)
    port = listener.getsockname()[1]
    print(f"corbaloc:iiop:1.2@127.0.0.1:{port}/{OBJECT_KEY.decode()}", flush=True)

    def watch_stdin():
        sys.stdin.read()
        os._exit(0)
    threading.Thread(target=watch_stdin, daemon=True).start()
    accepted = 0
    while True:
        conn, _ = listener.accept()
        accepted += 1
        if accepted == args.die_after:
            os.abort()
        if accepted == args.stall_after:
            time.sleep(args.stall_seconds)
        if accepted == args.spin_after:
            threading.Thread(target=spin, daemon=True).start()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=serve_connection, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
