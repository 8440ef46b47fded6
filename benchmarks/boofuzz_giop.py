"""A boofuzz (0.4.2) block model of GIOP messages to one object, and the session that fuzzes
them: the baseline bench_fuzz_baselines.py runs beside `pycdr fuzz`.

The model is what a boofuzz user writing for GIOP would write from the specification: the
12-byte header (magic, version, flags, message type, a size field over the body), then, big
endian, a GIOP 1.2 Request of echo_string, echo_long and echo_octets (KeyAddr target, the
operation name, no service contexts, the argument aligned to 8), a GIOP 1.0 Request of
echo_string (service contexts, object key, operation, principal), a GIOP 1.2 LocateRequest
and a GIOP 1.2 CancelRequest.  Every field is fuzzable, lengths are boofuzz size fields over
their blocks; each case is sent on a connection of its own.

    python benchmarks/boofuzz_giop.py HOST PORT OBJECT_KEY_HEX [--seconds S] [--db FILE]

Runs until boofuzz has sent all its cases or ``--seconds`` passed (then it is stopped).
"""

import argparse
import os
import sys
import threading


def _pad(offset: int, alignment: int) -> bytes:
    return b"\x00" * (-offset % alignment)


def _header(name: str, minor: int, message_type: int) -> None:
    from boofuzz import s_byte, s_size, s_static
    s_static(b"GIOP", name="magic")
    s_byte(1, name="major")
    s_byte(minor, name="minor")
    s_byte(0, name="flags")                      # big endian, no more fragments
    s_byte(message_type, name="type", fuzzable=False)
    s_size("body", length=4, endian=">", name="size")


def _counted(name: str, data: bytes, *, text: bool) -> int:
    """A CDR string (with its NUL) or octet sequence: a size field over its block; returns
    the default value's length on the wire."""
    from boofuzz import s_block, s_bytes, s_size, s_static, s_string
    s_size(f"{name}_data", length=4, endian=">", name=f"{name}_length")
    with s_block(f"{name}_data"):
        if text:
            s_string(data.decode(), name=f"{name}_text", max_len=4096)
            s_static(b"\x00", name=f"{name}_nul")
        else:
            s_bytes(data, name=f"{name}_bytes", max_len=4096)
    return 4 + len(data) + (1 if text else 0)


def _request_1_2(key: bytes, operation: str, argument) -> None:
    """argument: (kind, default) with kind 'string', 'long' or 'octets'."""
    from boofuzz import s_block, s_byte, s_bytes, s_dword, s_initialize, s_static, s_word
    name = f"request_1_2_{operation}"
    s_initialize(name)
    _header(name, 2, 0)
    with s_block("body"):
        at = 12
        s_dword(1, endian=">", name="request_id")
        s_byte(3, name="response_flags")
        s_bytes(b"\x00\x00\x00", name="reserved", size=3)
        s_word(0, endian=">", name="disposition")        # KeyAddr
        s_static(b"\x00\x00")
        at += 12
        at += _counted("key", key, text=False)
        s_static(_pad(at, 4))
        at += len(_pad(at, 4))
        at += _counted("operation", operation.encode(), text=True)
        s_static(_pad(at, 4))
        at += len(_pad(at, 4))
        s_dword(0, endian=">", name="service_contexts")
        at += 4
        s_static(_pad(at, 8))                            # a 1.2 body starts on 8
        kind, default = argument
        if kind == "long":
            s_dword(default, endian=">", name="value")
        else:
            _counted("value", default, text=kind == "string")


def _request_1_0(key: bytes) -> None:
    from boofuzz import s_block, s_byte, s_dword, s_initialize, s_static
    name = "request_1_0_echo_string"
    s_initialize(name)
    _header(name, 0, 0)
    with s_block("body"):
        at = 12
        s_dword(0, endian=">", name="service_contexts")
        s_dword(2, endian=">", name="request_id")
        s_byte(1, name="response_expected")
        s_static(b"\x00\x00\x00")
        at += 12
        at += _counted("key", key, text=False)
        s_static(_pad(at, 4))
        at += len(_pad(at, 4))
        at += _counted("operation", b"echo_string", text=True)
        s_static(_pad(at, 4))
        at += len(_pad(at, 4))
        _counted("principal", b"", text=False)
        _counted("value", b"boofuzz", text=True)


def _locate_request(key: bytes) -> None:
    from boofuzz import s_block, s_dword, s_initialize, s_static, s_word
    name = "locate_request_1_2"
    s_initialize(name)
    _header(name, 2, 3)
    with s_block("body"):
        s_dword(3, endian=">", name="request_id")
        s_word(0, endian=">", name="disposition")
        s_static(b"\x00\x00")
        _counted("key", key, text=False)


def _cancel_request() -> None:
    from boofuzz import s_block, s_dword, s_initialize
    name = "cancel_request_1_2"
    s_initialize(name)
    _header(name, 2, 2)
    with s_block("body"):
        s_dword(1, endian=">", name="request_id")


def build_model(key: bytes) -> list:
    """The message models' names (boofuzz keeps the models themselves)."""
    _request_1_2(key, "echo_string", ("string", b"boofuzz"))
    _request_1_2(key, "echo_long", ("long", 7))
    _request_1_2(key, "echo_octets", ("octets", b"\x00\x01\x02\x03"))
    _request_1_0(key)
    _locate_request(key)
    _cancel_request()
    return ["request_1_2_echo_string", "request_1_2_echo_long", "request_1_2_echo_octets",
            "request_1_0_echo_string", "locate_request_1_2", "cancel_request_1_2"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("host")
    parser.add_argument("port", type=int)
    parser.add_argument("key", help="the object key, in hex")
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--db", default=None,
                        help="boofuzz's case database (default: boofuzz's, under "
                             "./boofuzz-results)")
    args = parser.parse_args(argv)
    from boofuzz import Session, Target, TCPSocketConnection, s_get
    names = build_model(bytes.fromhex(args.key))
    session = Session(target=Target(connection=TCPSocketConnection(args.host, args.port,
                                                                    recv_timeout=0.2)),
                      web_port=None, fuzz_loggers=[], db_filename=args.db,
                      sleep_time=0, restart_sleep_time=0,
                      ignore_connection_reset=True, ignore_connection_aborted=True,
                      ignore_connection_issues_when_sending_fuzz_data=True,
                      keep_web_open=False)
    for name in names:
        session.connect(s_get(name))
    if args.seconds is not None:
        # boofuzz has no time limit of its own: end the process when the time is up.
        timer = threading.Timer(args.seconds, lambda: os._exit(0))
        timer.daemon = True
        timer.start()
    session.fuzz()
    print(f"boofuzz sent all {session.total_mutant_index} cases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
