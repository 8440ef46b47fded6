"""`pycdr ior`: what is in an IOR, corbaloc or corbaname (catior and more)."""

from __future__ import annotations

import sys

import click

from pycdr import codesets
from pycdr.addressing.corbaloc import Corbaloc, Corbaname, IIOPAddress, parse_object_url
from pycdr.errors import PycdrError
from pycdr.addressing.iiop import AlternateIIOPAddress, CodeSetsComponent, CSISecMechList, IIOPProfile, InvocationPolicyComponent, JavaCodebase, MultipleComponentsProfile, OmniORBUnixTransport, ORBTypeComponent, OTSPolicyComponent, PoliciesComponent, SSLSecTrans, TaggedComponent, TLSSecTrans, component_name, decode_profile, profile_endpoints, profile_name
from pycdr.codec.ior import IOR, printable_key
from pycdr.addressing.objectkey import identify, printable

from .main import EXIT_BAD_INPUT
from .options import shared, write_json
from .reference import read_reference


def describe_component(c) -> list[str]:
    if isinstance(c, ORBTypeComponent):
        return [f"TAG_ORB_TYPE {c.vendor or '(unknown)'} (0x{c.orb_type:08x} "
                f"\"{printable_key(c.orb_type.to_bytes(4, 'big'))}\")"]
    if isinstance(c, CodeSetsComponent):
        n = codesets.name
        return ["TAG_CODE_SETS char native code set:       " + n(c.char_native),
                "              char conversion code sets:  "
                + ", ".join(n(x) for x in c.char_conversion),
                "              wchar native code set:      " + n(c.wchar_native),
                "              wchar conversion code sets: "
                + ", ".join(n(x) for x in c.wchar_conversion)]
    if isinstance(c, AlternateIIOPAddress):
        return [f"TAG_ALTERNATE_IIOP_ADDRESS {c.host} {c.port}"]
    if isinstance(c, SSLSecTrans):
        return [f"TAG_SSL_SEC_TRANS port = {c.port} supports 0x{c.target_supports:x} "
                f"requires 0x{c.target_requires:x}"]
    if isinstance(c, TLSSecTrans):
        return [f"TAG_TLS_SEC_TRANS supports 0x{c.target_supports:x} requires "
                f"0x{c.target_requires:x} addresses "
                + ", ".join(f"{h}:{p}" for h, p in c.addresses)]
    if isinstance(c, CSISecMechList):
        lines = [f"TAG_CSI_SEC_MECH_LIST stateful={c.stateful}, "
                 f"{len(c.mechanisms)} mechanism(s)"]
        for m in c.mechanisms:
            lines.append(f"  requires 0x{m.target_requires:x}; transport: "
                         + "; ".join(describe_component(m.transport_mech)))
        return lines
    if isinstance(c, PoliciesComponent):
        return ["TAG_POLICIES " + ", ".join(f"type {t} ({len(v)} bytes)" for t, v in c.policies)]
    if isinstance(c, JavaCodebase):
        return [f"TAG_JAVA_CODEBASE {c.codebase}"]
    if isinstance(c, (OTSPolicyComponent, InvocationPolicyComponent)):
        return [f"{component_name(c.tag)} {c.value_name} ({c.value})"]
    if isinstance(c, OmniORBUnixTransport):
        return [f"TAG_OMNIORB_UNIX_TRANS host {c.host} socket {c.filename}"]
    if isinstance(c, TaggedComponent):
        text = f' "{printable(c.data)}"' if c.data else ""
        return [f"{component_name(c.tag)} {c.data.hex() or '(no data)'}{text}"]
    # Other typed components: their decoded fields.
    fields = c.fields_json()
    return [f"{component_name(c.tag)} " + ", ".join(f"{k} {v}" for k, v in fields.items())]


def orb_type_of(profile) -> int | None:
    c = next((c for c in getattr(profile, "components", ())
              if isinstance(c, ORBTypeComponent)), None)
    return None if c is None else c.orb_type


def key_info(profile):
    """What the object key of an IIOP profile tells (None for other profiles)."""
    if not isinstance(profile, IIOPProfile):
        return None
    return identify(profile.object_key, orb_type_of(profile))


def decode_profiles(ior: IOR, warnings: list) -> list:
    """Each profile decoded once (leniently), so that each warning is recorded once."""
    return [decode_profile(tp, lenient=True, warnings=warnings) for tp in ior.profiles]


def describe_ior(ior: IOR, profiles: list) -> list[str]:
    if ior.is_nil:
        return ["IOR is a nil object reference."]
    lines = [f'Type ID: "{ior.type_id}"', "Profiles:"]
    for i, p in enumerate(profiles, 1):
        if isinstance(p, IIOPProfile):
            lines.append(f'{i}. IIOP {p.version[0]}.{p.version[1]} {p.host} {p.port} '
                         f'"{printable_key(p.object_key)}"')
            lines.append(f"      object key (hex): {p.object_key.hex()}")
            info = key_info(p)
            if info is not None:
                lines.append(f"      object key: {info.summary()}")
            components = p.components
        elif isinstance(p, MultipleComponentsProfile):
            lines.append(f"{i}. Multiple Component Profile")
            components = p.components
        else:
            lines.append(f"{i}. {profile_name(p.tag)} (tag 0x{p.tag:x}): {p.data.hex()}")
            components = ()
        for c in components:
            lines += ["      " + line for line in describe_component(c)]
    lines.append("Addresses: " + (", ".join(str(e) for e in profile_endpoints(profiles))
                                  or "none"))
    lines.append("ORB: " + (", ".join(f"{v} ({how})" for v, how in orb_vendors(profiles))
                            or "not stated"))
    return lines


def orb_vendors(profiles) -> list:
    """[(vendor, how it is known)]: from TAG_ORB_TYPE, else from the object keys."""
    stated = {c.vendor or f"0x{c.orb_type:08x}" for p in profiles
              for c in getattr(p, "components", ()) if isinstance(c, ORBTypeComponent)}
    if stated:
        return [(v, "TAG_ORB_TYPE") for v in sorted(stated)]
    from_keys = {info.vendor for info in map(key_info, profiles) if info is not None}
    return [(v, "object key") for v in sorted(from_keys)]


def ior_json(ior: IOR, profiles: list) -> dict:
    out = []
    for p in profiles:
        if isinstance(p, (IIOPProfile, MultipleComponentsProfile)):
            out.append(p.to_json())
            if isinstance(p, IIOPProfile):
                info = key_info(p)
                out[-1]["object_key_info"] = None if info is None else info.to_json()
        else:
            out.append({"tag": p.tag, "name": profile_name(p.tag), "data": p.data.hex()})
    return {"kind": "IOR", "type_id": ior.type_id, "nil": ior.is_nil, "profiles": out,
            "addresses": [e.to_json() for e in profile_endpoints(profiles)],
            "orb": [{"vendor": v, "from": how} for v, how in orb_vendors(profiles)]}


def corbaloc_json(loc: Corbaloc) -> dict:
    return {"addresses": [
        {"protocol": "iiop", "host": a.host, "port": a.port,
         "version": f"{a.version[0]}.{a.version[1]}"} if isinstance(a, IIOPAddress)
        else {"protocol": a.to_url().split(":", 1)[0], "address": a.to_url()}
        for a in loc.addresses], "key": loc.key.hex(), "key_text": printable_key(loc.key)}


def describe_corbaloc(loc: Corbaloc) -> list[str]:
    lines = []
    for a in loc.addresses:
        if isinstance(a, IIOPAddress):
            lines.append(f"  IIOP {a.version[0]}.{a.version[1]} {a.host} {a.port}")
        else:
            lines.append(f"  {a.to_url()}")
    lines.append(f'Key: "{printable_key(loc.key)}" (hex {loc.key.hex()})' if loc.key
                 else "Key: (none: the empty object key)")
    return lines


@click.command("ior")
@click.argument("reference", required=False, metavar="[REFERENCE]")
@shared("--json", "json_out", more="One object: type id, profiles, components, addresses.")
def cmd(reference, json_out):
    """Show what an IOR:, corbaloc: or corbaname: reference holds.  REFERENCE is the
    reference, a file holding it (a path or file:// URL; wrapped lines are joined) or '-'
    for stdin (also when omitted)."""
    reference = read_reference("-" if reference is None else reference)
    as_json = json_out is not None
    warnings: list = []
    try:
        obj = parse_object_url(reference)
        if isinstance(obj, IOR):
            profiles = decode_profiles(obj, warnings)
            out = ior_json(obj, profiles) if as_json else describe_ior(obj, profiles)
        elif isinstance(obj, Corbaloc):
            out = {"kind": "corbaloc", **corbaloc_json(obj)} if as_json else \
                ["corbaloc, addresses:"] + describe_corbaloc(obj)
        else:
            assert isinstance(obj, Corbaname)
            out = {"kind": "corbaname", **corbaloc_json(obj.corbaloc),
                   "name": [{"id": i, "kind": k} for i, k in obj.name]} if as_json else \
                ["corbaname, naming service at:"] + describe_corbaloc(obj.corbaloc) + \
                ["Name: " + ("/".join(f"{i}.{k}" if k else i for i, k in obj.name)
                             or "(the naming context itself)")]
    except PycdrError as e:
        click.echo(f"error: {type(e).__name__}: {e}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if as_json:
        out["warnings"] = [w.to_json() for w in warnings]
        write_json(json_out, out, indent=2)
    else:
        out += [f"{w.severity}: [{w.code}] {w}" for w in warnings]
        click.echo("\n".join(out))
