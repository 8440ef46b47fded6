"""The command line over TLS: `pycdr serve --tls` as a process; `probe`, `call` and
`conformance` against it with the shared options (--tls, --tls-ca, --tls-cert/--tls-key,
--insecure), their TLS facts and their failures by step and exit status (6: TLS)."""

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from click.testing import CliRunner

pytest.importorskip("cryptography")

from orb_echo_values import ECHO_ALL_IDL  # noqa: E402
from pycdr_serve import PYCDR, said, start_server, stop_server  # noqa: E402
from pycdr.cli.main import EXIT_TLS, main  # noqa: E402
from pycdr.addressing.csiv2 import CSISecMechList  # noqa: E402
from pycdr.addressing.iiop import SSLSecTrans, decode_profile, make_ior  # noqa: E402
from pycdr.codec.ior import ior_from_string, ior_to_string  # noqa: E402
from tls_certs import make_certificates  # noqa: E402


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certificates(tmp_path_factory.mktemp("certs"))


def serve(certs, *extra):
    """`pycdr serve --tls` with ``extra`` options: (process, its output lines)."""
    process = start_server(
        PYCDR + ["serve", "--idl", ECHO_ALL_IDL, "--interface", "EchoAll::Echo",
                 "--tls-cert", str(certs.server.cert), "--tls-key", str(certs.server.key),
                 *extra])
    lines = [process.stdout.readline().strip(), process.stdout.readline().strip()]
    if "--also-plain" in extra:
        lines.append(process.stdout.readline().strip())
    assert lines[0].startswith("IOR:"), said(process) if process.poll() else lines
    return process, lines


@pytest.fixture(scope="module")
def tls_only(certs):
    process, lines = serve(certs, "--tls-ca", str(certs.ca))
    yield lines
    stop_server(process)


@pytest.fixture(scope="module")
def both_ports(certs):
    process, lines = serve(certs, "--also-plain")
    yield lines
    stop_server(process)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def client_cert(certs):
    return ["--tls-ca", certs.ca, "--tls-cert", certs.client.cert, "--tls-key", certs.client.key]


def test_serve_tls_only_publishes_port_0_and_ssliop(tls_only):
    ior, url = tls_only
    profile = decode_profile(ior_from_string(ior).profiles[0])
    assert profile.port == 0
    tls_port = profile.component(SSLSecTrans).port
    assert url == f"corbaloc:ssliop:1.2@127.0.0.1:{tls_port}/Echo"
    mech = profile.component(CSISecMechList).mechanisms[0]
    assert mech.transport_mech.addresses == (("127.0.0.1", tls_port),)
    result = invoke("ior", ior)
    assert "TAG_SSL_SEC_TRANS" in result.output and "TAG_CSI_SEC_MECH_LIST" in result.output


def test_call_over_tls_and_its_failures(certs, tls_only):
    ior, url = tls_only
    for target in (ior, url):
        result = invoke("call", target, "echo_long", "41", "--idl", ECHO_ALL_IDL,
                        *client_cert(certs))
        assert result.exit_code == 0, result.output + result.stderr
        assert json.loads(result.stdout) == 41
    # no client certificate: the server's certificate_required alert names the step
    result = invoke("call", ior, "echo_long", "1", "--idl", ECHO_ALL_IDL, "--tls-ca", certs.ca)
    assert result.exit_code == EXIT_TLS
    assert "client certificate to 127.0.0.1" in result.stderr and \
        "requires a client certificate" in result.stderr
    # the system's CAs do not know the test CA
    result = invoke("call", ior, "echo_long", "1", "--idl", ECHO_ALL_IDL,
                    "--tls-cert", certs.client.cert, "--tls-key", certs.client.key)
    assert result.exit_code == EXIT_TLS
    assert "server certificate to 127.0.0.1" in result.stderr and \
        "not trusted: self-signed certificate in certificate chain" in result.stderr
    # --insecure works, and says so
    result = invoke("call", ior, "echo_long", "2", "--idl", ECHO_ALL_IDL, "--insecure",
                    "--tls-cert", certs.client.cert, "--tls-key", certs.client.key)
    assert result.exit_code == 0 and json.loads(result.stdout) == 2
    assert "--insecure" in result.stderr and "NOT verified" in result.stderr
    # --tls-key without --tls-cert is a usage error
    result = invoke("call", ior, "echo_long", "2", "--idl", ECHO_ALL_IDL,
                    "--tls-key", certs.client.key)
    assert result.exit_code == 2
    # the old spellings still work, and say what to write instead
    result = invoke("call", ior, "echo_long", "3", "--idl", ECHO_ALL_IDL, "--cacert", certs.ca,
                    "--cert", certs.client.cert, "--key", certs.client.key)
    assert result.exit_code == 0 and json.loads(result.stdout) == 3
    assert "--cacert is deprecated: use --tls-ca" in result.stderr


def test_probe_reports_tls_facts(certs, tls_only):
    ior, url = tls_only
    result = invoke("probe", ior, "--json", "--timeout", 10, *client_cert(certs))
    assert result.exit_code == 0, result.output + result.stderr
    report = json.loads(result.stdout)
    assert report["transport"] == "TLS" and report["endpoint_from"] == "TAG_SSL_SEC_TRANS"
    tls = report["tls"]
    assert tls["protocol"].startswith("TLSv1.") and tls["cipher"] and tls["cipher_bits"] >= 128
    assert tls["client_certificate_requested"] is True and tls["verified"] is True
    leaf = tls["certificates"][0]
    assert leaf["subject"] == "CN=server,O=pycdr tests"
    assert leaf["issuer"] == "CN=test-ca,O=pycdr tests"
    assert (leaf["key_type"], leaf["key_size"]) == ("RSA", 2048)
    assert leaf["host_name_matches"] and leaf["valid_now"]
    assert report["giop"] and report["locate"][0]["locate_status"] == "OBJECT_HERE"
    assert "other_port" not in report          # TLS only: no plain port to try
    # without the client certificate, the step that failed is named
    result = invoke("probe", ior, "--json", "--timeout", 10, "--tls-ca", certs.ca)
    assert result.exit_code == EXIT_TLS
    report = json.loads(result.stdout)
    assert report["failed_step"] == "client certificate"
    # text output
    result = invoke("probe", url, "--timeout", 10, *client_cert(certs))
    assert result.exit_code == 0
    assert "TLSv1." in result.output and "client certificate requested: yes" in result.output
    assert "RSA 2048" in result.output and "host name matches: yes" in result.output


def test_probe_both_ports_and_plain_probe_of_the_tls_port(certs, both_ports):
    ior, plain_url, tls_url = both_ports
    result = invoke("probe", ior, "--json", "--timeout", 10, "--tls-ca", certs.ca)
    assert result.exit_code == 0, result.output + result.stderr
    report = json.loads(result.stdout)
    assert report["transport"] == "TLS" and report["tls"]["client_certificate_requested"] is False
    assert report["other_port"]["transport"] == "TCP" and report["other_port"]["answers_giop"]
    # the plain URL: probed plain, and the IOR's TLS port is not in a corbaloc:iiop URL
    tls_port = tls_url.rsplit(":", 1)[1].split("/")[0]
    result = invoke("probe", f"127.0.0.1:{tls_port}", "--json", "--timeout", 10)
    assert result.exit_code == EXIT_TLS and "connect with --tls" in result.stderr
    report = json.loads(result.stdout)
    assert report["speaks_tls"] is True and "--tls" in report["hint"]
    result = invoke("probe", f"127.0.0.1:{tls_port}", "--tls", "--json", "--timeout", 10,
                    "--tls-ca", certs.ca)
    assert result.exit_code == 0 and json.loads(result.stdout)["giop"]


def test_conformance_over_tls(certs, both_ports):
    ior, plain_url, tls_url = both_ports
    result = invoke("conformance", tls_url, "--group", "locate", "--group", "request",
                    "--tls-ca", certs.ca)
    assert result.exit_code == 0, result.output + result.stderr
    assert "over TLS to 127.0.0.1" in result.output
    assert "total" in result.output
    result = invoke("conformance", tls_url, "--group", "locate")
    assert result.exit_code == EXIT_TLS and "not trusted" in result.stderr


def test_fuzz_over_tls(certs, both_ports, tmp_path):
    ior, plain_url, tls_url = both_ports
    result = invoke("fuzz", ior, "--tls-ca", certs.ca, "--max-cases", 150, "--seed", 3,
                    "--json", "--out", tmp_path / "findings")
    assert result.exit_code == 0, result.output + result.stderr
    summary = json.loads(result.stdout)
    assert summary["cases"] == 150 and not summary["target_dead"]
    assert summary["probes"] > 0 and summary["findings"] == []
    result = invoke("fuzz", ior, "--max-cases", 5, "--json", "--out", tmp_path / "findings")
    assert result.exit_code == EXIT_TLS and "server certificate" in result.stderr


def test_pytest_plugin_over_tls(certs, both_ports, tmp_path):
    """`pytest --pyargs pycdr.conformance --target ... --target-cacert CA`: the cases go over
    TLS (without the CA they fail: the certificate is not trusted)."""
    ior, plain_url, tls_url = both_ports
    argv = [sys.executable, "-m", "pytest", "--pyargs", "pycdr.conformance", "-q",
            "-p", "no:cacheprovider", "-k", "locate.existing", "--target", tls_url]
    trusted = subprocess.run(argv + ["--target-cacert", str(certs.ca)], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
    assert trusted.returncode == 0, trusted.stdout[-3000:]
    assert "6 passed" in trusted.stdout
    untrusted = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert untrusted.returncode == 1 and "6 failed" in untrusted.stdout


def _only_tls_sec_trans(ior: str, bare: bool) -> tuple:
    """The serve IOR with its TLS port only in a TLS_SEC_TRANS: the CSIv2 mechanism list
    alone (``bare`` False) or a TAG_TLS_SEC_TRANS component alone; and that port."""
    parsed = ior_from_string(ior)
    profile = decode_profile(parsed.profiles[0])
    mechs = profile.component(CSISecMechList)
    trans = mechs.mechanisms[0].transport_mech
    kept = (trans,) if bare else (mechs,)
    others = tuple(c for c in profile.components
                   if not isinstance(c, (SSLSecTrans, CSISecMechList)))
    only = replace(profile, components=others + kept)
    return ior_to_string(make_ior(parsed.type_id, [only])), trans.addresses[0][1]


@pytest.mark.parametrize("bare", [False, True], ids=["in-mechanism-list", "bare-component"])
def test_probe_and_call_use_the_tls_sec_trans_port(certs, tls_only, bare):
    """An IOR whose only TLS address is a TLS_SEC_TRANS (IIOP port 0, no TAG_SSL_SEC_TRANS,
    as WebLogic, WebSphere and WildFly publish): probe and call reach the TLS port there."""
    ior, tls_port = _only_tls_sec_trans(tls_only[0], bare)
    assert "TAG_SSL_SEC_TRANS" not in invoke("ior", ior).output
    result = invoke("probe", ior, "--json", "--timeout", 10, *client_cert(certs))
    assert result.exit_code == 0, result.output + result.stderr
    report = json.loads(result.stdout)
    assert (report["transport"], report["port"]) == ("TLS", tls_port)
    assert report["endpoint_from"] == ("TAG_TLS_SEC_TRANS" if bare else
                                       "CSIv2 TAG_TLS_SEC_TRANS")
    assert report["giop"] and report["locate"][0]["locate_status"] == "OBJECT_HERE"
    # what the reference asks of a client: TLS and (--require-client-cert) a certificate
    [requirement] = report["client_requirements"]
    assert (requirement["tls"], requirement["client_certificate"]) == ("required", "required")
    result = invoke("probe", ior, "--timeout", 10, *client_cert(certs))
    assert "client requirements (" in result.output and \
        "TLS required; client certificate required" in result.output
    result = invoke("call", ior, "echo_long", "43", "--idl", ECHO_ALL_IDL, *client_cert(certs))
    assert result.exit_code == 0, result.output + result.stderr
    assert json.loads(result.stdout) == 43
