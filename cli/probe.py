"""`pycdr probe TARGET`: what speaks GIOP at an address, and how.

Every step uses a fresh connection and a read bounded in bytes and time, so a silent or
flooding endpoint costs at most --timeout per step.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import click

from pycdr.corbaloc import Corbaloc, Corbaname, IIOPAddress, parse_object_url
from pycdr.errors import PycdrError
from pycdr.giop.header import MsgType, parse_header
from pycdr.giop.messages import (KeyAddr, LocateRequest, LocateStatus, decode_message,
                                 encode_message)
from pycdr.giop.sysexc import SystemException
from pycdr.iiop import ORBTypeComponent
from pycdr.ior import IOR, ior_to_string, printable_key
from pycdr.orb import ORB
from pycdr.orb.client import RawConnection, first_iiop_profile, iiop_profiles

from .main import EXIT_BAD_INPUT, EXIT_UNREACHABLE, EXIT_USAGE

# Keys an IIOP scanner asks for at a bare host:port (omniORB, JacORB, TAO, ORBacus answer some).
WELL_KNOWN_KEYS = (b"NameService", b"NamingService", b"InterfaceRepository", b"RootPOA")
PROBE_VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))
MAX_READ = 64 << 10


@click.command("probe")
@click.argument("target")
@click.option("--is-a", "is_a_id", default=None, help="Repository id to ask _is_a about.")
@click.option("--timeout", default=2.0, show_default=True, help="Seconds per step.")
@click.option("--json", "as_json", is_flag=True)
def cmd(target, is_a_id, timeout, as_json):
    """Probe TARGET (IOR, corbaloc, or host:port): GIOP versions and byte orders accepted and
    how others are refused, LocateRequest results (and forwarded IORs with vendor and every
    address), _non_existent, _is_a, round-trip latency."""
    try:
        host, port, keys = _target(target)
    except (PycdrError, SystemException, ValueError) as e:   # INV_OBJREF: no IIOP profile
        click.echo(f"bad target: {e}", err=True)
        sys.exit(EXIT_USAGE)
    report = asyncio.run(_probe(host, port, keys, is_a_id, timeout))
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _print(report)
    if not report["reachable"]:
        sys.exit(EXIT_UNREACHABLE)
    sys.exit(0 if report["giop"] else EXIT_BAD_INPUT)


def _target(text: str):
    if text.split(":", 1)[0].lower() in ("ior", "corbaloc", "corbaname"):
        parsed = parse_object_url(text)
        if isinstance(parsed, Corbaname):
            parsed = parsed.corbaloc
        if isinstance(parsed, Corbaloc):
            address = next((a for a in parsed.addresses if isinstance(a, IIOPAddress)), None)
            if address is None:
                raise ValueError(f"{text!r} has no IIOP address to probe")
            return address.host, address.port, [parsed.key]
        profile = first_iiop_profile(parsed)
        return profile.host, profile.port, [profile.object_key]
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not port.isascii():
        raise ValueError(f"{text!r} is not an IOR, a corbaloc URL or host:port")
    if int(port) > 65535:
        raise ValueError(f"port {port} is above 65535")
    return host.strip("[]"), int(port), list(WELL_KNOWN_KEYS)


async def _exchange(host, port, data: bytes, timeout: float) -> dict:
    """Send ``data`` on a fresh connection; classify what comes back."""
    raw = RawConnection(None, host, port)
    try:
        await raw.open(timeout)
    except (OSError, asyncio.TimeoutError) as e:
        return {"outcome": "unreachable", "detail": str(e) or type(e).__name__}
    try:
        started = time.monotonic()
        await raw.send(data)
        read = await raw.read_messages(1, timeout=timeout, max_bytes=MAX_READ)
        elapsed = time.monotonic() - started
        closed_after = False
        if read.messages and not read.closed:
            after = await raw.read_until_closed(timeout=min(0.3, timeout), max_bytes=MAX_READ)
            closed_after = after.closed
        return _classify(read, closed_after, elapsed)
    finally:
        await raw.close()


def _classify(read, closed_after: bool, elapsed: float) -> dict:
    if read.not_giop:
        return {"outcome": "not GIOP", "bytes": read.data[:32].hex()}
    if not read.messages:
        if read.closed:
            return {"outcome": "closed"}
        return {"outcome": "silence" if not read.data else "incomplete answer"}
    raw_message = read.messages[0]
    header = parse_header(raw_message)
    out = {"outcome": MsgType(header.msg_type).name if header.msg_type in
           MsgType._value2member_map_ else f"type {header.msg_type}",
           "version": f"{header.version[0]}.{header.version[1]}",
           "little_endian": header.little, "closed_after": closed_after or read.closed,
           "latency_ms": round(elapsed * 1000, 3)}
    if header.msg_type == MsgType.LocateReply:
        try:
            reply, _ = decode_message(raw_message, lenient=True)
        except PycdrError as e:
            out["error"] = str(e)
            return out
        out["locate_status"] = LocateStatus(reply.locate_status).name \
            if reply.locate_status in LocateStatus._value2member_map_ else reply.locate_status
        if reply.forward is not None:
            out["forward"] = _ior_summary(reply.forward)
        if reply.system_exception is not None:
            out["system_exception"] = reply.system_exception.to_json()
    return out


def _ior_summary(ior: IOR) -> dict:
    profiles = []
    for decoded in iiop_profiles(ior):
        orb_type = decoded.component(ORBTypeComponent)
        profiles.append({"iiop_version": f"{decoded.version[0]}.{decoded.version[1]}",
                         "addresses": [f"{h}:{p}" for h, p in decoded.addresses],
                         "object_key": printable_key(decoded.object_key),
                         "vendor": orb_type.vendor if orb_type else None})
    return {"type_id": ior.type_id, "ior": ior_to_string(ior), "profiles": profiles}


def _locate(version, little, key, request_id=1) -> bytes:
    return encode_message(LocateRequest(version=version, little=little, request_id=request_id,
                                        target=KeyAddr(key)))


async def _probe(host, port, keys, is_a_id, timeout) -> dict:
    report = {"host": host, "port": port, "reachable": True, "giop": False, "versions": {},
              "locate": {}}
    first = await _exchange(host, port, _locate((1, 0), False, keys[0]), timeout)
    if first["outcome"] == "unreachable":
        report["reachable"] = False
        report["detail"] = first["detail"]
        return report
    report["giop"] = first["outcome"] in ("LocateReply", "MessageError", "CloseConnection")
    if not report["giop"]:
        report["first_answer"] = first
        return report
    accepted = []
    for version in PROBE_VERSIONS:
        for little in (False, True):
            name = f"{version[0]}.{version[1]} {'little' if little else 'big'}-endian"
            if version == (1, 0) and not little:
                result = first
            else:
                result = await _exchange(host, port, _locate(version, little, keys[0]), timeout)
            report["versions"][name] = result
            if result["outcome"] == "LocateReply":
                accepted.append(version)
    best = max(accepted) if accepted else (1, 0)
    report["highest_version_accepted"] = f"{best[0]}.{best[1]}" if accepted else None
    found = None
    for key in keys:
        result = await _exchange(host, port, _locate(best, False, key), timeout)
        report["locate"][printable_key(key)] = result
        if found is None and result.get("locate_status") in ("OBJECT_HERE", "OBJECT_FORWARD",
                                                             "OBJECT_FORWARD_PERM"):
            found = key
    if found is not None:
        report["object"] = await _object_checks(host, port, found, best, is_a_id, timeout)
    return report


async def _object_checks(host, port, key, version, is_a_id, timeout) -> dict:
    out = {"object_key": printable_key(key)}
    url = Corbaloc((IIOPAddress(host, port, min(version, (1, 2))),), key).to_url()
    async with ORB(timeout=timeout, connect_timeout=timeout) as orb:
        ref = await orb.string_to_object(url)
        for name, call in (("non_existent", lambda: ref.non_existent()),
                           ("is_a", (lambda: ref.is_a(is_a_id)) if is_a_id else None)):
            if call is None:
                continue
            try:
                out[name] = await call()
            except SystemException as e:
                out[name] = {"system_exception": e.to_json()}
            except PycdrError as e:
                out[name] = {"error": str(e)}
        times = []
        for _ in range(5):
            started = time.monotonic()
            try:
                await ref.locate(timeout=timeout)
            except (SystemException, PycdrError):
                break
            times.append(time.monotonic() - started)
        if times:
            out["round_trip_ms"] = {"min": round(min(times) * 1000, 3),
                                    "mean": round(sum(times) / len(times) * 1000, 3)}
    return out


def _print(report: dict) -> None:
    click.echo(f"{report['host']}:{report['port']}")
    if not report["reachable"]:
        click.echo(f"  unreachable: {report.get('detail')}")
        return
    if not report["giop"]:
        click.echo(f"  not GIOP: {report.get('first_answer')}")
        return
    click.echo("  GIOP: yes")
    for name, result in report["versions"].items():
        extra = ""
        if result["outcome"] == "MessageError":
            extra = f" (answers as {result['version']})"
        if result.get("closed_after"):
            extra += ", then closes"
        click.echo(f"  {name:<22} {result['outcome']}{extra}")
    for key, result in report["locate"].items():
        click.echo(f"  LocateRequest {key}: {result.get('locate_status', result['outcome'])}")
        forward = result.get("forward")
        if forward:
            for p in forward["profiles"]:
                click.echo(f"    -> {forward['type_id']} {', '.join(p['addresses'])} "
                           f"vendor {p['vendor']} key {p['object_key']}")
    obj = report.get("object")
    if obj:
        for name in ("non_existent", "is_a", "round_trip_ms"):
            if name in obj:
                click.echo(f"  {name}: {obj[name]}")
