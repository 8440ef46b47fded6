"""A small GIOP server (raw sockets and struct, no pycdr) with one planted
defect of the kind a fuzzer sees only in a target's output, for the
fuzzer's tests.  It answers every LocateRequest OBJECT_HERE and every Request
that expects a response with an empty NO_EXCEPTION Reply; a Request whose
bytes hold PLANT does, by --plant:

- stack-overflow: prints what a JVM prints when a StackOverflowError kills
  a thread (`Exception in thread "..." java.lang.StackOverflowError` and its
  stack), then answers;
- negative-array: prints a NegativeArraySizeException with another stack;
- mixed: each of MIXED's words in the Request's bytes prints its stack
  (NegativeArraySizeExceptions at two places, a StackOverflowError), then
  it answers;
- callback: (any Request, PLANT or not) connects to every address a
  ``corbaloc:iiop:``, ``corbaloc::`` or ``http://`` URL in its bytes names,
  sending a GET of the URL's path or a GIOP LocateRequest for its object key
  -- a call-out, as an ORB that fetches a class or calls a CodeBase makes;
- none: no defect at all.

Run as a script it prints a corbaloc URL and serves on 127.0.0.1 (a free
port) until killed:

    python tests/defect_server.py --plant stack-overflow
"""

from __future__ import annotations

import argparse
import re
import socket
import struct
import sys
import threading

PLANT = b"plant"
OBJECT_KEY = b"Defect"
STACKS = {
    "stack-overflow": ['Exception in thread "RequestReader-2" java.lang.StackOverflowError',
                       "\tat org.example.cdr.ValueReader.readValue(ValueReader.java:211)",
                       "\tat org.example.cdr.ValueReader.readIndirection(ValueReader.java:187)",
                       "\tat org.example.cdr.ValueReader.readValue(ValueReader.java:230)"],
    "negative-array": ["SEVERE: unexpected error on a connection",
                       "java.lang.NegativeArraySizeException: -16",
                       "\tat org.example.cdr.InputStream.read_octet_array(InputStream.java:402)",
                       "\tat org.example.giop.RequestHeader.read(RequestHeader.java:88)"],
    "negative-array-header": ["SEVERE: unexpected error on a connection",
                              "java.lang.NegativeArraySizeException: -4",
                              "\tat org.example.giop.RequestHeader.readContexts(RequestHeader.java:120)",
                              "\tat org.example.giop.RequestHeader.read(RequestHeader.java:91)"],
}
# --plant mixed: the word in a Request's bytes -> the stack it prints.
MIXED = {b"plant": "negative-array", b"header": "negative-array-header",
         b"overflow": "stack-overflow"}


def _ulong(data: bytes, offset: int, little: bool) -> int:
    return struct.unpack_from("<I" if little else ">I", data, offset)[0]


def _request_head(body: bytes, version: tuple, little: bool) -> tuple:
    """(request id, whether a response is expected) of a Request body (its
    service contexts come first before GIOP 1.2)."""
    if version >= (1, 2):
        return _ulong(body, 0, little), body[4] & 1
    offset = 4
    for _ in range(_ulong(body, 0, little)):
        offset = ((offset + 3) & ~3) + 4                 # context id
        offset = (offset + 3) & ~3
        offset += 4 + _ulong(body, offset, little)       # context data
    offset = (offset + 3) & ~3
    return _ulong(body, offset, little), body[offset + 4] & 1


def _reply(version: tuple, little: bool, kind: int, request_id: int) -> bytes:
    e = "<" if little else ">"
    if kind == 3:                                        # LocateReply: OBJECT_HERE
        body = struct.pack(e + "II", request_id, 1)
    elif version >= (1, 2):
        body = struct.pack(e + "III", request_id, 0, 0)
    else:
        body = struct.pack(e + "III", 0, request_id, 0)
    header = b"GIOP" + bytes([version[0], version[1], int(little), 4 if kind == 3 else 1])
    return header + struct.pack(e + "I", len(body)) + body


CALLBACK_URL = re.compile(rb"(corbaloc:(?:iiop)?:(?:1\.\d@)?|http://)"
                          rb"([\w.]+):(\d+)/([\w.-]*)")


def _plant(defect: str) -> None:
    if defect in STACKS:
        print("\n".join(STACKS[defect]), flush=True)


def _call_out(body: bytes) -> None:
    """Connect to what each URL in ``body`` names (see --plant callback)."""
    for scheme, host, port, path in CALLBACK_URL.findall(body):
        if scheme == b"http://":
            data = b"GET /" + path + b" HTTP/1.0\r\n\r\n"
        else:
            locate = struct.pack(">II", 1, 0) + struct.pack(">I", len(path)) + path
            data = b"GIOP\x01\x02\x00\x03" + struct.pack(">I", len(locate)) + locate
        try:
            with socket.create_connection((host.decode(), int(port)), timeout=1) as out:
                out.sendall(data)
        except (OSError, ValueError):
            pass


def _serve(conn: socket.socket, defect: str) -> None:
    buffer = b""
    with conn:
        while True:
            try:
                chunk = conn.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while len(buffer) >= 12:
                if buffer[:4] != b"GIOP":
                    return
                little = bool(buffer[6] & 1)
                size = _ulong(buffer, 8, little)
                if size > 1 << 20:
                    return
                if len(buffer) < 12 + size:
                    break
                message, buffer = buffer[:12 + size], buffer[12 + size:]
                version, kind, body = (message[4], message[5]), message[7], message[12:]
                try:
                    if kind == 0:
                        if defect == "callback":
                            _call_out(body)
                        if PLANT in body:
                            _plant(defect)
                        if defect == "mixed":
                            for word, stack in MIXED.items():
                                if word in body:
                                    _plant(stack)
                        request_id, expects = _request_head(body, version, little)
                        if expects:
                            conn.sendall(_reply(version, little, 1, request_id))
                    elif kind == 3:
                        conn.sendall(_reply(version, little, 3, _ulong(body, 0, little)))
                    elif kind == 5:
                        return
                except (struct.error, IndexError, OSError):
                    return


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plant", choices=sorted(STACKS) + ["callback", "mixed", "none"], required=True)
    args = ap.parse_args(argv)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(f"corbaloc:iiop:1.2@127.0.0.1:{listener.getsockname()[1]}/"
          f"{OBJECT_KEY.decode()}", flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve, args=(conn, args.plant), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
