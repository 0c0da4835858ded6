"""Certificates for the tests' own HTTPS servers, made at run time with ``cryptography`` (which
mitmproxy depends on): nothing secret is committed."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from pathlib import Path


def self_signed(folder: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` (a host name, or an IP address written as one) and
    its key, written as PEM files ``folder/<name>.pem`` and ``folder/<name>.key``; returns their
    paths. An EC P-256 key; valid from a day ago to two days ahead; a CA (basic constraints), so
    a client can trust it alone as its ``cafile``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    try:
        alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        alt = x509.DNSName(name)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / f"{name}.pem", folder / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def server_context(name: str = "127.0.0.1") -> ssl.SSLContext:
    """A server ``ssl.SSLContext`` with a :func:`self_signed` certificate for ``name`` made now."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as tmp:
        context.load_cert_chain(*self_signed(Path(tmp), name))
    return context
