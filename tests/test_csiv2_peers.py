"""CSIv2 mechanism lists made by real ORBs: the OpenJDK ORB (WildFly's) and JacORB publish
TAG_CSI_SEC_MECH_LIST from an IORInterceptor, as application servers do, the structures
encoded by the ORB's own CSIIOP helpers and CDR Codec and the OIDs by the JDK's
org.ietf.jgss.Oid (tests/peers/jacorb/src/pycdrpeers/CsiIorPublisher.java); pycdr decodes
them field by field, finds the TLS port in them, and says what they require of a client.
JacORB also writes one all by itself, for a POA with its SAS policy (JacorbSasIor.java).

(The GlassFish ORB keeps its CSIIOP classes in its own package, com.sun.corba.ee.org.omg.CSIIOP,
not in org.omg.CSIIOP, so the program compiled against the OMG API does not run on it.)
"""

import json

import pytest
from click.testing import CliRunner

from peers.jacorb import JACORB
from peers.jdk_orbs import OPENJDK_ORB
from peers.process import LOOPBACK, free_port, run_client_process
from pycdr.addressing.csiv2 import ASContextSec, CSISecMechList, NullTag, SASContextSec, ServiceConfiguration, TLSSecTrans
from pycdr.addressing.iiop import IIOPProfile, decode_profile
from pycdr.cli.main import main
from pycdr.codec.ior import ior_from_string
from pycdr.orb.tls import choose_endpoint

GSSUP_DER = bytes.fromhex("0606678102010101")                 # 2.23.130.1.1.1
EXPORT_NAME_DER = bytes.fromhex("06062b0601050604")           # 1.3.6.1.5.6.4
SCOPED_USERNAME_DER = bytes.fromhex("0606678102010201")       # 2.23.130.1.2.1
REALM = "example.com"
REALM_NAME = b"\x04\x01\x00\x08" + GSSUP_DER + len(REALM).to_bytes(4, "big") + REALM.encode()


@pytest.fixture(scope="module", params=[OPENJDK_ORB, JACORB], ids=lambda orb: orb.name)
def published(request):
    """(IOR text, TLS port) from CsiIorPublisher on one ORB."""
    orb = request.param
    tls_port = free_port()
    properties = {**orb.properties, **orb.listen_properties(LOOPBACK, free_port())}
    argv = orb.java_command("pycdrpeers.CsiIorPublisher") + [LOOPBACK, str(tls_port), REALM] + \
        [f"{name}={value}" for name, value in properties.items()]
    lines = run_client_process(f"{orb.name}-csiv2", argv, timeout=60)
    [ior] = [line for line in lines if line.startswith("IOR:")]
    return ior, tls_port


def test_mechanism_list_field_by_field(published):
    ior, tls_port = published
    profiles = [decode_profile(p) for p in ior_from_string(ior).profiles]
    iiop = next(p for p in profiles if isinstance(p, IIOPProfile))
    mechs = iiop.component(CSISecMechList)
    assert mechs is not None and mechs.stateful is False
    over_tls, plain = mechs.mechanisms
    assert over_tls.target_requires == 0x46        # Integrity, Confidentiality, TrustInClient
    assert over_tls.transport_mech == TLSSecTrans(0x66, 0x46, ((LOOPBACK, tls_port),))
    assert over_tls.as_context == ASContextSec(0x40, 0x40, GSSUP_DER, REALM_NAME)
    assert over_tls.sas_context == SASContextSec(
        0x400, 0, (ServiceConfiguration(0x4F4D1, REALM_NAME),),
        (EXPORT_NAME_DER, SCOPED_USERNAME_DER), 0x7)
    assert plain.target_requires == 0 and plain.transport_mech == NullTag()
    assert plain.as_context == ASContextSec(0x40, 0, GSSUP_DER, REALM_NAME)
    assert plain.sas_context == SASContextSec()
    # a client finds the TLS port in the mechanism list
    endpoint = choose_endpoint(iiop)
    assert (endpoint.port, endpoint.tls, endpoint.source) == \
        (tls_port, True, "CSIv2 TAG_TLS_SEC_TRANS")


def test_ior_command_on_them(published):
    ior, tls_port = published
    r = CliRunner().invoke(main, ["ior", ior])
    assert r.exit_code == 0, r.output
    assert "warning" not in r.output
    assert f"CSIv2 mechanism 1 over {LOOPBACK}:{tls_port}: TLS required; client certificate " \
        f'required; username/password required (realm "{REALM}"); identity assertion ' \
        "supported (ITTAnonymous, ITTPrincipalName, ITTX509CertChain)" in r.output
    assert "CSIv2 mechanism 2 with no transport security: TLS not supported; client " \
        "certificate not supported; username/password supported" in r.output
    j = json.loads(CliRunner().invoke(main, ["ior", "--json", ior]).output)
    assert {"host": LOOPBACK, "port": tls_port, "transport": "tls"} in j["addresses"]
    first = j["client_requirements"][0]
    assert first["client_authentication_mech"] == {"oid": "2.23.130.1.1.1", "name": "GSSUP"}


def test_jacorb_own_mechanism_list():
    """JacORB's SASComponentInterceptor, for a POA whose SAS policy supports and requires
    EstablishTrustInClient: one stateful mechanism, no transport security (TAG_NULL_TAG, no
    data), GSSUP username/password required, no attribute layer."""
    properties = {**JACORB.properties, **JACORB.listen_properties(LOOPBACK, free_port()),
                  "org.omg.PortableInterceptor.ORBInitializerClass."
                  "org.jacorb.security.sas.SASInitializer": "",
                  "jacorb.security.sas.contextClass": "org.jacorb.security.sas.GssUpContext",
                  "jacorb.security.sas.stateful": "true"}
    argv = JACORB.java_command("pycdrpeers.JacorbSasIor") + ["64", "64"] + \
        [f"{name}={value}" for name, value in properties.items()]
    lines = run_client_process("JacORB-sas", argv, timeout=60)
    [ior] = [line for line in lines if line.startswith("IOR:")]
    profile = decode_profile(ior_from_string(ior).profiles[0])
    mechs = profile.component(CSISecMechList)
    assert mechs.stateful is True
    [mech] = mechs.mechanisms
    assert mech.target_requires == 0x40 and mech.transport_mech == NullTag()
    assert mech.as_context == ASContextSec(0x40, 0x40, GSSUP_DER, b"")
    assert mech.sas_context == SASContextSec()
    r = CliRunner().invoke(main, ["ior", ior])
    assert r.exit_code == 0 and "warning" not in r.output, r.output
    assert "CSIv2 mechanism 1 with no transport security: TLS not supported; client " \
        "certificate not supported; username/password required; identity assertion not " \
        "supported" in r.output
