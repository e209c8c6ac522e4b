"""HTTPS for tests: a certificate authority made at test time, a server certificate it signs (for
``localhost``, ``127.0.0.1`` and whatever other names a test gives), and uvicorn serving an ASGI app with it
in the test's own event loop, on a real loopback socket.

Clients trust the authority through ``Certificates.client_context()``; nothing is added to the system's
trust store, and the keys live in the test's temporary folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import socket
import ssl
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from wiremcp.transports.asgi import ASGIApp

STOP_BOUND = 5.0


@dataclass(frozen=True)
class Certificates:
    """The files of a test authority and of the server certificate it signed."""

    ca: Path
    """The authority's certificate (PEM): what clients trust."""
    certificate: Path
    """The server's certificate (PEM)."""
    key: Path
    """The server's private key (PEM, unencrypted)."""

    def client_context(self) -> ssl.SSLContext:
        """A client's TLS context that trusts this authority only."""
        return ssl.create_default_context(cafile=str(self.ca))


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_certificates(folder: Path, names: Sequence[str] = ("localhost",),
                      addresses: Sequence[str] = ("127.0.0.1", "::1")) -> Certificates:
    """A new authority and a server certificate for ``names`` and ``addresses``, written to ``folder``."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("wiremcp test authority")
    ca_certificate = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    alternatives: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    alternatives += [x509.IPAddress(ipaddress.ip_address(address)) for address in addresses]
    certificate = (
        x509.CertificateBuilder().subject_name(_name(names[0] if names else addresses[0])).issuer_name(ca_name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    out = Certificates(ca=folder / "ca.pem", certificate=folder / "server.pem", key=folder / "server-key.pem")
    out.ca.write_bytes(ca_certificate.public_bytes(serialization.Encoding.PEM))
    out.certificate.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    out.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return out


@contextlib.asynccontextmanager
async def serve_https(app: ASGIApp, certificates: Certificates) -> AsyncIterator[int]:
    """uvicorn over TLS in this event loop, on a loopback socket listening before the block starts (so it is
    reachable at once); yields the port. The app gets no lifespan events."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False, timeout_graceful_shutdown=2,
                            ssl_certfile=str(certificates.certificate), ssl_keyfile=str(certificates.key))
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        try:
            await asyncio.wait_for(serving, STOP_BOUND + 2)
        finally:
            sock.close()
