"""`pycdr probe TARGET`: what speaks GIOP at an address, and how.

Every step uses a fresh connection and a read bounded in bytes and time, so a silent or
flooding endpoint costs at most --timeout per step.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import replace

import click

from pycdr.addressing.corbaloc import Corbaloc, Corbaname, IIOPAddress, parse_object_url
from pycdr.errors import PycdrError
from pycdr.giop.header import MsgType, parse_header
from pycdr.giop.messages import (KeyAddr, LocateRequest, LocateStatus, decode_message,
                                 encode_message)
from pycdr.giop.sysexc import SystemException
from pycdr.addressing.iiop import ORBTypeComponent
from pycdr.codec.ior import IOR, ior_to_string
from pycdr.addressing.objectkey import hex_and_text, identify, printable
from pycdr.orb import ORB
from pycdr.orb.aio import run as run_loop
from pycdr.orb.client import RawConnection, first_iiop_profile, iiop_profiles
from pycdr.orb.tls import (STEP_CLIENT_CERTIFICATE, Endpoint, TLSConfigError, TransportError,
                           choose_endpoint, plain_endpoint, session_facts, tls_endpoints)

from pycdr.orb.reachability import (TLS_EXPECTED, TLS_FAILED, Diagnosis, describe_bytes,
                                    from_answer, from_transport_error)

from .failures import stop
from .main import EXIT_BAD_INPUT, EXIT_USAGE
from .options import shared, write_json
from .reference import read_reference
from .tls import tls_options

# Keys an IIOP scanner asks for at a bare host:port (omniORB, JacORB, TAO, ORBacus answer some).
WELL_KNOWN_KEYS = (b"NameService", b"NamingService", b"InterfaceRepository", b"RootPOA")
PROBE_VERSIONS = ((1, 0), (1, 1), (1, 2), (1, 3))
MAX_READ = 64 << 10


@click.command("probe")
@click.argument("target")
@click.option("--is-a", "is_a_id", default=None, help="Repository id to ask _is_a about.")
@shared("--timeout", default=2.0, show_default=True, more="Per step.")
@shared("--json", "json_out", more="One object: the whole report.")
@tls_options
def cmd(target, is_a_id, timeout, json_out, tls):
    """Probe TARGET (IOR, corbaloc, or host:port): GIOP versions and byte orders accepted and
    how others are refused, LocateRequest results (and forwarded IORs with vendor and every
    address), _non_existent, _is_a, round-trip latency.  Over TLS (an IOR's
    TAG_SSL_SEC_TRANS/TAG_TLS_SEC_TRANS, corbaloc:ssliop:, or --tls): protocol, cipher,
    the server's certificates, whether it asks for a client certificate, and whether the
    plain port answers too.

    TARGET may also be a file holding the reference (a path or file:// URL) or '-' for
    stdin.  The exit status says why an endpoint gave no GIOP answer (pycdr --help)."""
    try:
        endpoint, other, keys = _target(read_reference(target), tls)
        if endpoint.tls:
            tls.client_context()          # the files are usable
    except TLSConfigError as e:
        click.echo(str(e), err=True)
        sys.exit(EXIT_USAGE)
    except (PycdrError, SystemException, ValueError) as e:   # INV_OBJREF: no IIOP profile
        click.echo(f"error: bad target: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    report = run_loop(_probe(endpoint, other, keys, is_a_id, timeout, tls))
    if json_out is not None:
        write_json(json_out, report, indent=2)
    else:
        _print(report)
    cause = report.get("cause")
    if cause is not None:
        sys.stdout.flush()
        stop(Diagnosis(cause["kind"], cause["message"]))
    sys.exit(0)


def _target(text: str, tls):
    """The endpoint to probe, the reference's other endpoint (its plain port when TLS is
    probed, its TLS port when plain is) or None, and the object keys to ask for."""
    if text.split(":", 1)[0].lower() in ("ior", "corbaloc", "corbaname"):
        parsed = parse_object_url(text)
        if isinstance(parsed, Corbaname):
            parsed = parsed.corbaloc
        if isinstance(parsed, Corbaloc):
            if not any(isinstance(a, IIOPAddress) for a in parsed.addresses):
                raise ValueError(f"{text!r} has no IIOP address (iiop: or ssliop:) to probe")
            parsed = parsed.to_ior()
        profile = first_iiop_profile(parsed)
        endpoint = choose_endpoint(profile, tls)
        if endpoint.tls:
            other = plain_endpoint(profile) if tls_endpoints(profile) else None
        else:
            other = next(iter(tls_endpoints(profile)), None)
        return endpoint, other, [profile.object_key]
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not port.isascii():
        raise ValueError(f"{text!r} is not an IOR, a corbaloc URL or host:port")
    if int(port) > 65535:
        raise ValueError(f"port {port} is above 65535")
    endpoint = Endpoint(host.strip("[]"), int(port), tls.force, "--tls" if tls.force else
                        "host:port")
    return endpoint, None, list(WELL_KNOWN_KEYS)


async def _exchange(endpoint: Endpoint, tls, data: bytes, timeout: float) -> dict:
    """Send ``data`` on a fresh connection; classify what comes back (the answer's own GIOP
    version and byte order as ``reply_version`` and ``reply_little_endian``)."""
    raw = RawConnection(None, endpoint.host, endpoint.port, tls=endpoint.tls,
                        tls_options=tls)
    try:
        await raw.open(timeout)
    except TransportError as e:
        return {"outcome": "unreachable", "step": e.step, "detail": e.detail,
                "diagnosis": from_transport_error(endpoint, e)}
    try:
        started = time.monotonic()
        await raw.send(data)
        read = await raw.read_messages(1, timeout=timeout, max_bytes=MAX_READ)
        elapsed = time.monotonic() - started
        closed_after = False
        if read.messages and not read.closed:
            after = await raw.read_until_closed(timeout=min(0.3, timeout), max_bytes=MAX_READ)
            closed_after = after.closed
        result = _classify(read, closed_after, elapsed)
        if result["outcome"] not in GIOP_ANSWERS:
            result["diagnosis"] = from_answer(endpoint, read.data, read.closed)
        return result
    finally:
        await raw.close()


def _classify(read, closed_after: bool, elapsed: float) -> dict:
    if read.not_giop:
        return {"outcome": "not GIOP", "bytes": read.data[:32].hex(),
                "looks_like": describe_bytes(read.data)}
    if not read.messages:
        if read.closed:
            return {"outcome": "closed"}
        return {"outcome": "silence" if not read.data else "incomplete answer"}
    raw_message = read.messages[0]
    header = parse_header(raw_message)
    out = {"outcome": MsgType(header.msg_type).name if header.msg_type in
           MsgType._value2member_map_ else f"type {header.msg_type}",
           "reply_version": f"{header.version[0]}.{header.version[1]}",
           "reply_little_endian": header.little, "closed_after": closed_after or read.closed,
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


def key_json(key: bytes) -> dict:
    """An object key as JSON: hex, with its printable text beside."""
    return {"object_key": key.hex(), "object_key_text": printable(key)}


def _ior_summary(ior: IOR) -> dict:
    profiles = []
    for decoded in iiop_profiles(ior):
        orb_type = decoded.component(ORBTypeComponent)
        info = identify(decoded.object_key, orb_type.orb_type if orb_type else None)
        # TAG_ORB_TYPE where the IOR states it, else what the object key shows.
        vendor = (orb_type.vendor or f"0x{orb_type.orb_type:08x}") if orb_type else \
            (info.vendor if info else None)
        profiles.append({"iiop_version": f"{decoded.version[0]}.{decoded.version[1]}",
                         "addresses": [f"{h}:{p}" for h, p in decoded.addresses],
                         **key_json(decoded.object_key),
                         "object_key_info": info.to_json() if info else None,
                         "object_key_layout": info.summary() if info else None,
                         "vendor": vendor})
    return {"type_id": ior.type_id, "ior": ior_to_string(ior), "profiles": profiles}


def _locate(version, little, key, request_id=1) -> bytes:
    return encode_message(LocateRequest(version=version, little=little, request_id=request_id,
                                        target=KeyAddr(key)))


GIOP_ANSWERS = ("LocateReply", "MessageError", "CloseConnection")


async def _tls_facts(endpoint: Endpoint, tls, timeout: float) -> dict:
    try:
        return await asyncio.to_thread(session_facts, endpoint, tls, timeout=timeout)
    except TransportError as e:
        return {"error": str(e), "step": e.step}


async def _probe(endpoint: Endpoint, other, keys, is_a_id, timeout, tls) -> dict:
    host, port = endpoint.host, endpoint.port
    report = {"host": host, "port": port, "transport": "TLS" if endpoint.tls else "TCP",
              "endpoint_from": endpoint.source, "reachable": True, "giop": False,
              "versions": {}, "locate": []}
    if endpoint.tls:
        report["tls"] = await _tls_facts(endpoint, tls, timeout)
        if tls.insecure:
            report["insecure"] = True
    first = await _exchange(endpoint, tls, _locate((1, 0), False, keys[0]), timeout)
    diagnosis = first.pop("diagnosis", None)
    if diagnosis is not None:
        report["cause"] = {"kind": diagnosis.kind, "message": diagnosis.message}
    if first["outcome"] == "unreachable":
        report["reachable"] = False
        report["detail"] = first["detail"]
        report["failed_step"] = first["step"]
        return report
    report["giop"] = first["outcome"] in GIOP_ANSWERS
    if other is not None:
        answer = await _exchange(other, tls, _locate((1, 0), False, keys[0]), timeout)
        answer.pop("diagnosis", None)
        report["other_port"] = {"port": other.port, "transport": "TLS" if other.tls else "TCP",
                                "answers_giop": answer["outcome"] in GIOP_ANSWERS,
                                "answer": answer}
    if not report["giop"]:
        report["first_answer"] = first
        if endpoint.tls and first["outcome"] == "closed" and not tls.cert and \
                report["tls"].get("client_certificate_requested"):
            # The TLS session was accepted, then closed unanswered: the certificate it asked
            # for was required (some servers close without the alert that says so).
            report["reachable"] = False
            report["failed_step"] = STEP_CLIENT_CERTIFICATE
            report["detail"] = ("the server asked for a client certificate and closed the "
                                "connection without one: give one with --tls-cert/--tls-key")
            report["cause"] = {"kind": TLS_FAILED, "message": f"{host}:{port}: "
                               f"{report['detail']}"}
            return report
        if not endpoint.tls:
            facts = await _tls_facts(Endpoint(host, port, True), tls, timeout)
            if "error" not in facts:
                report["speaks_tls"] = True
                report["tls"] = facts
                report["hint"] = "this port speaks TLS: probe it with --tls"
                report["cause"] = {"kind": TLS_EXPECTED,
                                   "message": f"{host}:{port} speaks TLS: connect with --tls"}
        return report
    accepted = []
    for version in PROBE_VERSIONS:
        for little in (False, True):
            name = f"{version[0]}.{version[1]} {'little' if little else 'big'}-endian"
            if version == (1, 0) and not little:
                result = first
            else:
                result = await _exchange(endpoint, tls, _locate(version, little, keys[0]),
                                         timeout)
                result.pop("diagnosis", None)
            # What was sent; the answer's own version and byte order are reply_* fields.
            report["versions"][name] = {"version": f"{version[0]}.{version[1]}",
                                        "little_endian": little, **result}
            if result["outcome"] == "LocateReply":
                accepted.append(version)
    best = max(accepted) if accepted else (1, 0)
    report["highest_version_accepted"] = f"{best[0]}.{best[1]}" if accepted else None
    found = None
    for key in keys:
        result = await _exchange(endpoint, tls, _locate(best, False, key), timeout)
        result.pop("diagnosis", None)
        report["locate"].append({**key_json(key), **result})
        if found is None and result.get("locate_status") in ("OBJECT_HERE", "OBJECT_FORWARD",
                                                             "OBJECT_FORWARD_PERM"):
            found = key
    if found is not None:
        report["object"] = await _object_checks(endpoint, found, best, is_a_id, timeout, tls)
    return report


async def _object_checks(endpoint, key, version, is_a_id, timeout, tls) -> dict:
    out = key_json(key)
    url = Corbaloc((IIOPAddress(endpoint.host, endpoint.port, min(version, (1, 2))),),
                   key).to_url()
    async with ORB(timeout=timeout, connect_timeout=timeout,
                   tls=replace(tls, force=endpoint.tls)) as orb:
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
    click.echo(f"{report['host']}:{report['port']} ({report['transport']}, "
               f"from {report['endpoint_from']})")
    if "tls" in report:
        _print_tls(report["tls"])
    if not report["reachable"]:
        click.echo(f"  unreachable: {report.get('failed_step')} failed: {report.get('detail')}")
        return
    other = report.get("other_port")
    if other:
        click.echo(f"  {other['transport']} port {other['port']} answers GIOP: "
                   f"{'yes' if other['answers_giop'] else 'no'}")
    if not report["giop"]:
        cause = report.get("cause")
        click.echo(f"  not GIOP: {cause['message'] if cause else report['first_answer']['outcome']}")
        if report.get("hint"):
            click.echo(f"  {report['hint']}")
        return
    click.echo("  GIOP: yes")
    for name, result in report["versions"].items():
        extra = ""
        if result["outcome"] == "MessageError":
            extra = f" (answers as {result['reply_version']})"
        if result.get("closed_after"):
            extra += ", then closes"
        click.echo(f"  {name:<22} {result['outcome']}{extra}")
    for result in report["locate"]:
        key = hex_and_text(bytes.fromhex(result["object_key"]))
        click.echo(f"  LocateRequest {key}: {result.get('locate_status', result['outcome'])}")
        forward = result.get("forward")
        if forward:
            for p in forward["profiles"]:
                click.echo(f"    -> {forward['type_id']} {', '.join(p['addresses'])} "
                           f"vendor {p['vendor'] or 'not stated'}")
                click.echo(f"       key {hex_and_text(bytes.fromhex(p['object_key']))}")
                if p["object_key_layout"]:
                    click.echo(f"       key layout: {p['object_key_layout']}")
    obj = report.get("object")
    if obj:
        click.echo(f"  object {hex_and_text(bytes.fromhex(obj['object_key']))}")
        for name in ("non_existent", "is_a"):
            if name in obj:
                click.echo(f"  {name}: {_answer_text(obj[name])}")
        if "round_trip_ms" in obj:
            rt = obj["round_trip_ms"]
            click.echo(f"  round trip: min {rt['min']} ms, mean {rt['mean']} ms")


def _answer_text(answer) -> str:
    """An answer of _non_existent or _is_a: true/false, or what was raised."""
    if isinstance(answer, bool):
        return "true" if answer else "false"
    if isinstance(answer, dict) and "system_exception" in answer:
        exc = answer["system_exception"]
        return f"raised {exc.get('name') or exc.get('exception_id', '?')}"
    if isinstance(answer, dict) and "error" in answer:
        return f"error: {answer['error']}"
    return str(answer)


def _print_tls(tls: dict) -> None:
    if "error" in tls:
        click.echo(f"  TLS: {tls['error']}")
        return
    asked = {True: "yes", False: "no", None: "unknown"}[tls["client_certificate_requested"]]
    click.echo(f"  TLS: {tls['protocol']} {tls['cipher']} ({tls['cipher_bits']} bits); "
               f"client certificate requested: {asked}")
    if tls["verified"] is None:
        click.echo(f"  certificate: {tls['verification']}")
    elif tls["verified"]:
        click.echo("  certificate: verified (trusted, host name matches)")
    else:
        click.echo(f"  certificate: NOT verified: {tls['verification']}")
    for i, cert in enumerate(tls["certificates"]):
        if "subject" not in cert:
            why = cert.get("note") or cert.get("error")
            click.echo(f"    [{i}] sha256 {cert['sha256']} ({why})")
            continue
        key = f"{cert['key_type']} {cert['key_size']}" + \
            (f" {cert['curve']}" if cert["curve"] else "")
        click.echo(f"    [{i}] subject {cert['subject']}")
        click.echo(f"        issuer  {cert['issuer']}")
        click.echo(f"        valid   {cert['not_before']} .. {cert['not_after']}"
                   f"{'' if cert['valid_now'] else ' (NOT valid now)'}")
        click.echo(f"        key     {key}; names {', '.join(cert['subject_alt_names']) or '-'}"
                   f"; host name matches: {'yes' if cert['host_name_matches'] else 'no'}")
