"""JacORB 3.9 with JSSE (its sun_jsse socket factories): the properties and Java key stores
(JKS, made with the JDK's keytool from the tests' PEM files) for a TLS server or client."""

import os
import shutil
import subprocess

from .process import PeerNotInstalled

PASSWORD = "pycdrtest"
_FACTORIES = {
    "jacorb.security.support_ssl": "on",
    "jacorb.ssl.socket_factory": "org.jacorb.security.ssl.sun_jsse.SSLSocketFactory",
    "jacorb.ssl.server_socket_factory": "org.jacorb.security.ssl.sun_jsse.SSLServerSocketFactory",
}


def _keytool(*args):
    keytool = shutil.which("keytool")
    if keytool is None:
        raise PeerNotInstalled("keytool (the JDK) is missing: run .ci/install-peers.sh")
    done = subprocess.run([keytool, *args], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"keytool {' '.join(args)}: {done.stdout}{done.stderr}")


def server_key_store(folder, cert, key):
    """A JKS key store holding the server's key and certificate.  (JacORB 3.9's JSSE factory
    finds no key in a PKCS12 store given as such: the handshake fails with no cipher suite
    in common; converted to JKS it works.)"""
    p12 = os.path.join(folder, "server.p12")
    jks = os.path.join(folder, "server.jks")
    done = subprocess.run(["openssl", "pkcs12", "-export", "-in", str(cert), "-inkey", str(key),
                           "-name", "server", "-out", p12, "-passout", f"pass:{PASSWORD}"],
                          capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    _keytool("-importkeystore", "-noprompt", "-srckeystore", p12, "-srcstoretype", "PKCS12",
             "-srcstorepass", PASSWORD, "-destkeystore", jks, "-deststoretype", "JKS",
             "-deststorepass", PASSWORD, "-destkeypass", PASSWORD)
    return jks


def trust_store(folder, ca):
    """A JKS store holding ``ca`` as a trusted certificate."""
    jks = os.path.join(folder, "trust.jks")
    _keytool("-importcert", "-noprompt", "-alias", "ca", "-file", str(ca), "-keystore", jks,
             "-storetype", "JKS", "-storepass", PASSWORD)
    return jks


def server_properties(key_store, ssl_port):
    """TLS on ``ssl_port`` beside the plain OAPort; no client authentication (supported
    options EstablishTrustInTarget only: JacORB asks for a client certificate when its
    supported options include EstablishTrustInClient)."""
    return {**_FACTORIES, "jacorb.security.keystore": key_store,
            "jacorb.security.keystore_password": PASSWORD,
            "jacorb.security.ssl.server.supported_options": "20",
            "jacorb.security.ssl.server.required_options": "0",
            "OASSLPort": str(ssl_port)}


def client_properties(trust):
    """A client that requires TLS (EstablishTrustInTarget) and trusts the certificates in
    ``trust`` (JacORB's client factory insists on a key store: the trust store serves)."""
    return {**_FACTORIES, "jacorb.security.keystore": trust,
            "jacorb.security.keystore_password": PASSWORD,
            "jacorb.security.jsse.trustees_from_ks": "on",
            "jacorb.security.ssl.client.supported_options": "20",
            "jacorb.security.ssl.client.required_options": "20"}
