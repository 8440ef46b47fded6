"""`pycdr proxy`: a GIOP-aware intercepting proxy (pycdr.proxy)."""

from __future__ import annotations

import asyncio
import re
import signal
import sys

import click

from pycdr.errors import PycdrError

from .main import EXIT_BAD_INPUT, EXIT_UNREACHABLE, EXIT_USAGE
from .options import shared
from .tls import tls_options

_HOST_PORT = re.compile(r"\[?([^\]=/@]+?)\]?:(\d{1,5})")


def _host_port(text: str, what: str) -> tuple:
    m = _HOST_PORT.fullmatch(text.strip())
    if not m or int(m.group(2)) > 65535:
        raise click.UsageError(f"bad {what} {text[:80]!r}: expected HOST:PORT")
    return m.group(1), int(m.group(2))


def _target(text: str, timeout: float, tls) -> tuple:
    """(upstream (host, port), whether it speaks TLS, the target's IOR or None): TEXT is
    an IOR, a corbaloc, a corbaname (resolved now) or HOST:PORT."""
    from pycdr.addressing.corbaloc import Corbaloc, parse_object_url
    from pycdr.codec.ior import ior_from_string
    from pycdr.giop.sysexc import SystemException
    from pycdr.orb.client import first_iiop_profile, resolve_object_url
    from pycdr.orb.tls import choose_endpoint
    head = text.split(":", 1)[0].strip().lower()
    if head == "ior":
        ior = ior_from_string(text.strip())
    elif head == "corbaname":
        ior = resolve_object_url(text.strip(), timeout=timeout, connect_timeout=timeout,
                                 tls=tls)
    elif head == "corbaloc":
        parsed = parse_object_url(text.strip())
        if not isinstance(parsed, Corbaloc) or parsed.is_rir:
            raise PycdrError("the corbaloc names no IIOP address")
        ior = parsed.to_ior()
    else:
        return _host_port(text, "target"), tls.force, None
    try:
        profile = first_iiop_profile(ior)
    except SystemException:
        raise PycdrError("the target reference has no IIOP profile") from None
    endpoint = choose_endpoint(profile, tls)
    return (endpoint.host, endpoint.port), endpoint.tls, ior


@click.command("proxy")
@click.option("--listen", required=True, metavar="HOST:PORT",
              help="Where clients connect (port 0: any free port).")
@shared("--target", required=True, more="The server the proxy relays to.")
@click.option("--route", "routes", multiple=True, metavar="HOST:PORT[=LHOST:LPORT]",
              help="Another server whose references are rewritten to come through the "
                   "proxy too: relayed from LHOST:LPORT (default: the --listen host, any "
                   "free port). Repeatable.")
@click.option("--callbacks", is_flag=True,
              help="Also rewrite the references a client passes in its requests (by "
                   "--idl), each server they name getting a listening port of its own, so "
                   "that calls back to the client come through the proxy too.")
@click.option("--rules", "rules_file", type=click.Path(exists=True, dir_okay=False),
              help="Fault rules (JSON list of {\"match\": ..., \"action\": ...}; "
                   "see docs/proxy.md).")
@click.option("--hook", "hook_file", type=click.Path(exists=True, dir_okay=False),
              help="A Python file with request(call) and/or reply(call): they may return "
                   "actions of the rules' vocabulary (see docs/proxy.md).")
@shared("--seed", more="The rules' probability and delay jitter.")
@shared("--idl", "idl_files", multiple=True,
        more="Arguments and results in the call rows, and object references in results and "
             "out parameters rewritten. Repeatable.")
@shared("--json", "json_out", more="JSON Lines: the call rows (as `pycdr monitor`'s).")
@shared("--write", "pcap_out", more="Each client connection, both ways.")
@shared("--max-message-size", type=click.IntRange(min=64), default=16 << 20,
        show_default=True, more="Larger ones are not decoded: they and the rest of their "
                                "connection are relayed byte for byte.")
@click.option("--max-connection-bytes", type=click.IntRange(min=64), default=64 << 20,
              show_default=True, help="Bytes one connection may hold (a message arriving "
                                      "and fragments of messages not yet whole).")
@click.option("--max-total-bytes", type=click.IntRange(min=64), default=256 << 20,
              show_default=True, help="Bytes all connections together may hold.")
@click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True), default=10.0,
              show_default=True, help="Seconds to wait for the upstream connection (and a "
                                      "corbaname's naming service).")
@click.option("--listen-tls-cert", "listen_cert", type=click.Path(exists=True, dir_okay=False),
              metavar="FILE",
              help="Terminate TLS on the listening ports with this certificate (PEM). The "
                   "references handed out are then TLS-only references to the proxy when "
                   "the server's were.")
@click.option("--listen-tls-key", "listen_key", type=click.Path(exists=True, dir_okay=False),
              metavar="FILE", help="Private key (PEM) of --listen-tls-cert (default: in it).")
@click.option("--listen-tls-ca", "client_ca", type=click.Path(exists=True, dir_okay=False),
              metavar="FILE",
              help="With --listen-tls-cert: clients must present a certificate signed by one "
                   "of these CA certificates (PEM).")
@shared("--quiet", more="(--json and -w still written.)")
@shared("--explain", "explain", more="Into the rows' explain column.")
@tls_options
def cmd(listen, target, routes, callbacks, rules_file, hook_file, seed, idl_files, json_out, pcap_out,
        max_message_size, max_connection_bytes, max_total_bytes, connect_timeout, listen_cert,
        listen_key, client_ca, quiet, explain, tls):
    """Relay GIOP between clients and TARGET message by message: print a line a call,
    record the calls (--json) and the traffic (-w), rewrite object references so that
    clients stay behind the proxy, and inject faults by rule (--rules).

    It prints, at start, an IOR and a corbaloc of the target object through the proxy."""
    from pycdr.addressing.corbaloc import IIOPAddress, escape_key
    from pycdr.addressing.rewrite import ReferenceRewriter, address_text
    from pycdr.calls.output import JsonLines, TextLines
    from pycdr.codec.ior import ior_to_string
    from pycdr.orb.aio import run as run_loop
    from pycdr.orb.naming import NamingError
    from pycdr.orb.client import first_iiop_profile
    from pycdr.proxy.core import ProxyCore, ProxyLimits
    from pycdr.proxy.rules import load_rules
    from pycdr.orb.tls import TLSConfigError, server_context
    from pycdr.proxy.server import Listener, Proxy

    listen_host, listen_port = _host_port(listen, "--listen")
    try:
        limits = ProxyLimits(max_message_size, max(max_connection_bytes, max_message_size + 12),
                             max(max_total_bytes, max_connection_bytes, max_message_size + 12))
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    extra = []
    for text in routes:
        upstream, sep, local = text.partition("=")
        up = _host_port(upstream, "--route server")
        lhost, lport = _host_port(local, "--route listening address") if sep else \
            (listen_host, 0)
        extra.append(Listener(lhost, lport, up))
    outputs, files = [], []

    def emit(row):
        for out in outputs:
            out.add(row)
    try:
        if (client_ca or listen_key) and not listen_cert:
            raise click.UsageError("--listen-tls-key and --listen-tls-ca go with "
                                   "--listen-tls-cert")
        server_ssl = server_context(listen_cert, listen_key, client_ca) if listen_cert \
            else None
        upstream, upstream_tls, ior = _target(target, connect_timeout, tls)
        upstream_ssl = tls.client_context() if upstream_tls or tls.force else None
        rules = load_rules(rules_file, seed) if rules_file else None
        bodies = None
        if idl_files:
            from pycdr import idl
            from pycdr.calls.bodies import CallBodies
            bodies = CallBodies([idl.load(p, register=False) for p in idl_files])
        if json_out == "-":
            outputs.append(JsonLines(sys.stdout, flush=True))
        elif json_out:
            try:
                files.append(open(json_out, "w"))
            except OSError as e:
                raise PycdrError(f"{json_out}: cannot write ({e.strerror})") from None
            outputs.append(JsonLines(files[-1], flush=True))
        if not quiet and json_out != "-":
            outputs.append(TextLines(sys.stdout, flush=True))
        pcap = None
        if pcap_out:
            from pycdr.capture.write import StreamPcapWriter
            try:
                pcap = StreamPcapWriter(pcap_out)
            except OSError as e:
                raise PycdrError(f"{pcap_out}: cannot write ({e.strerror})") from None
        hooks = None
        if hook_file:
            from pycdr.proxy.hooks import load_hooks
            hooks = load_hooks(hook_file)
        explain_row = None
        if explain:
            from .explain import explain_column
            explain_row = explain_column(idl_files)
        # (no lines and no --json: the rows go nowhere, and the counts are the tracker's)
        core = ProxyCore(rewriter=ReferenceRewriter({}), rules=rules,
                         emit=emit if outputs else None,
                         bodies=bodies, limits=limits, seed=seed, hooks=hooks,
                         explain=explain_row)
        if not quiet:
            core.notice = lambda text: click.echo(f"proxy: {text}", err=True)
    except TLSConfigError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_USAGE)
    except NamingError as e:
        from .names import naming_exit
        naming_exit(e)
    except PycdrError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except OSError as e:
        click.echo(f"error: cannot resolve the target: {e.strerror or e}", err=True)
        sys.exit(EXIT_UNREACHABLE)

    listeners = [Listener(listen_host, listen_port, upstream, tls=upstream_tls)] + extra
    for lst in extra:
        lst.tls = tls.force
    proxy = Proxy(core, listeners, pcap=pcap, connect_timeout=connect_timeout,
                  callbacks=callbacks, server_ssl=server_ssl, upstream_ssl=upstream_ssl)

    async def main():
        # (before the reference is printed: whoever reads it may stop the proxy at once)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(signum, stop.set)
            except (NotImplementedError, RuntimeError):
                pass        # no signal handlers here (not the main thread): Ctrl-C still ends it
        try:
            await proxy.start()
        except OSError as e:
            return f"cannot listen: {e.strerror or e}"
        first = listeners[0]
        for lst in listeners:
            click.echo(f"proxy: {address_text(*lst.advertised)} -> "
                       f"{address_text(*lst.upstream)}", err=True)
        if ior is not None:
            moved, _ = core.rewriter.rewrite(ior)
            key = first_iiop_profile(moved).object_key
            click.echo(ior_to_string(moved))
            version = first_iiop_profile(moved).version
            address = IIOPAddress(*first.advertised, version, tls=server_ssl is not None)
            click.echo(f"corbaloc:{address.to_url()}/"
                       f"{escape_key(key)}")
        sys.stdout.flush()
        await stop.wait()
        await proxy.close()
        return None

    try:
        failure = run_loop(main())
    finally:
        core.tracker.finish()
        for out in outputs:
            out.close()
        for f in files:
            f.close()
        if pcap is not None:
            pcap.close()
    if failure:
        click.echo(f"error: {failure}", err=True)
        sys.exit(EXIT_USAGE)            # (a --listen or --route address it cannot take)
    click.echo(core.tracker.counts.summary(), err=True)
