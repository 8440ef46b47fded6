"""Certificates the TLS tests make for themselves (Python's `cryptography`): a CA, a server
certificate for 127.0.0.1/localhost signed by it, a client certificate, and the bad cases
(another CA's, an expired one, one for another host)."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Issued:
    cert: Path
    key: Path


@dataclass
class Certificates:
    ca: Path                  # the CA that signed server, client, expired, wrong_host
    server: Issued            # 127.0.0.1 and localhost, RSA 2048
    client: Issued            # a client certificate (EC P-256)
    other_ca: Path            # a CA nobody here trusts ...
    untrusted_server: Issued  # ... and a server certificate it signed
    untrusted_client: Issued  # ... and a client certificate it signed
    expired: Issued           # signed by ca, valid until yesterday
    wrong_host: Issued        # signed by ca, for www.example.com only


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "pycdr tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(path: Path, key) -> Path:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return path


def _write_cert(path: Path, cert) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _ca(folder: Path, name: str):
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name(name)).issuer_name(_name(name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                         False), critical=True)
            .sign(key, hashes.SHA256()))
    return _write_cert(folder / f"{name}.pem", cert), cert, key


def _issue(folder: Path, name: str, ca_cert, ca_key, *, hosts=(), client=False, key=None,
           days=(-1, 30)) -> Issued:
    key = key or ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(name))
               .issuer_name(ca_cert.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now + datetime.timedelta(days=days[0] - 1))
               .not_valid_after(now + datetime.timedelta(days=days[1]))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage(
                   [ExtendedKeyUsageOID.CLIENT_AUTH if client else
                    ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
    if hosts:
        names = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return Issued(_write_cert(folder / f"{name}.pem", cert),
                  _write_key(folder / f"{name}.key", key))


def make_certificates(folder: Path) -> Certificates:
    folder.mkdir(parents=True, exist_ok=True)
    ca_path, ca_cert, ca_key = _ca(folder, "test-ca")
    other_path, other_cert, other_key = _ca(folder, "other-ca")
    local = ("127.0.0.1", "localhost")
    return Certificates(
        ca=ca_path,
        server=_issue(folder, "server", ca_cert, ca_key, hosts=local,
                      key=rsa.generate_private_key(65537, 2048)),
        client=_issue(folder, "client", ca_cert, ca_key, client=True),
        other_ca=other_path,
        untrusted_server=_issue(folder, "untrusted-server", other_cert, other_key, hosts=local),
        untrusted_client=_issue(folder, "untrusted-client", other_cert, other_key,
                                client=True),
        expired=_issue(folder, "expired", ca_cert, ca_key, hosts=local, days=(-10, -1)),
        wrong_host=_issue(folder, "wrong-host", ca_cert, ca_key, hosts=("www.example.com",)))
