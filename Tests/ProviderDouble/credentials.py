"""Throw-away credentials for the provider double: a CA, a loopback server certificate signed by
it, an APNs `.p8` signing key and an FCM service-account JSON.

Everything lives in the state directory. Files that already exist there are reused (so a demo can
restart the double without re-configuring Herald), unless `fresh=True`. The service-account JSON is
rewritten at every start because its `token_uri` names the double's port.
"""
from __future__ import annotations

import datetime as _dt
import ipaddress
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT = "ca.pem"
CA_KEY = "ca-key.pem"
SERVER_CERT = "server.pem"
SERVER_KEY = "server-key.pem"
SERVICE_ACCOUNT = "service-account.json"
FCM_KEY = "fcm-key.pem"  # the service account's key, kept apart so it survives a port change
VAPID_KEY = "vapid-key.pem"  # the application server key Herald signs VAPID tokens with (HERALD_VAPID_KEY_PATH)


@dataclass
class Credentials:
    """Paths and public keys the double verifies against."""

    ca_file: Path
    server_cert: Path
    server_key: Path
    apns_key_path: Path
    apns_public_key: ec.EllipticCurvePublicKey
    service_account_path: Path
    service_account: dict
    fcm_public_key: rsa.RSAPublicKey
    vapid_key_path: Path
    vapid_public_key: bytes  # 65 bytes uncompressed: the applicationServerKey Herald must sign with


def _write_private(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _write_public(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _pkcs8(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _load_key(path: Path):
    return serialization.load_pem_private_key(path.read_bytes(), password=None)


def _make_ca(state: Path):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Herald tests"),
        x509.NameAttribute(NameOID.COMMON_NAME, "Herald provider double throw-away CA"),
    ])
    now = _dt.datetime.now(_dt.timezone.utc)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(days=1))
        .not_valid_after(now + _dt.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(key, hashes.SHA256())
    )
    _write_private(state / CA_KEY, _pkcs8(key))
    _write_public(state / CA_CERT, cert.public_bytes(serialization.Encoding.PEM))
    return key, cert


def _make_server_cert(state: Path, ca_key, ca_cert) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = _dt.datetime.now(_dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(days=1))
        .not_valid_after(now + _dt.timedelta(days=825))
        .add_extension(
            x509.SubjectAlternativeName([
                x509.DNSName("localhost"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                x509.IPAddress(ipaddress.ip_address("::1")),
            ]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=False,
                crl_sign=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_private(state / SERVER_KEY, _pkcs8(key))
    _write_public(state / SERVER_CERT, cert.public_bytes(serialization.Encoding.PEM))


def apns_key_file(key_id: str) -> str:
    """Apple's download name for a key: `AuthKey_<KEYID>.p8`."""
    return f"AuthKey_{key_id}.p8"


def prepare(
    state: Path,
    *,
    token_uri: str,
    key_id: str,
    project_id: str,
    client_email: str,
    fresh: bool = False,
) -> Credentials:
    """Creates (or reuses) every credential file in `state` and returns what the double needs.

    - Parameters:
      - state: the state directory; created if missing.
      - token_uri: the double's own OAuth token URL, written into the service account.
      - key_id: the APNs key ID; names the `.p8` file.
      - fresh: regenerate everything even if files exist.
    """
    state.mkdir(parents=True, exist_ok=True)
    ca_cert_path, ca_key_path = state / CA_CERT, state / CA_KEY
    if fresh or not (ca_cert_path.exists() and ca_key_path.exists()):
        ca_key, ca_cert = _make_ca(state)
        _make_server_cert(state, ca_key, ca_cert)
    elif not ((state / SERVER_CERT).exists() and (state / SERVER_KEY).exists()):
        ca_key = _load_key(ca_key_path)
        ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
        _make_server_cert(state, ca_key, ca_cert)

    apns_path = state / apns_key_file(key_id)
    if fresh or not apns_path.exists():
        _write_private(apns_path, _pkcs8(ec.generate_private_key(ec.SECP256R1())))
    apns_key = _load_key(apns_path)
    if not isinstance(apns_key, ec.EllipticCurvePrivateKey) or apns_key.curve.name != "secp256r1":
        raise SystemExit(f"{apns_path}: not an EC P-256 key")

    fcm_key_path = state / FCM_KEY
    if fresh or not fcm_key_path.exists():
        _write_private(fcm_key_path, _pkcs8(rsa.generate_private_key(65537, 2048)))
    fcm_key = _load_key(fcm_key_path)

    sa_path = state / SERVICE_ACCOUNT
    old = {}
    if not fresh and sa_path.exists():
        try:
            old = json.loads(sa_path.read_text())
        except ValueError:
            old = {}
    key_pem = _pkcs8(fcm_key).decode()
    same_key = old.get("private_key") == key_pem
    private_key_id = old.get("private_key_id") if same_key else None
    client_id = old.get("client_id") if same_key else None
    account = {
        "type": "service_account",
        "project_id": project_id,
        "private_key_id": private_key_id or secrets.token_hex(20),
        "private_key": key_pem,
        "client_email": client_email,
        "client_id": client_id or str(100000000000000000000 + secrets.randbelow(10**20)),
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
        "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
        "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/"
        + client_email.replace("@", "%40"),
        "universe_domain": "googleapis.com",
    }
    _write_private(sa_path, (json.dumps(account, indent=2) + "\n").encode())

    vapid_path = state / VAPID_KEY
    if fresh or not vapid_path.exists():
        _write_private(vapid_path, _pkcs8(ec.generate_private_key(ec.SECP256R1())))
    vapid_key = _load_key(vapid_path)

    return Credentials(
        vapid_key_path=vapid_path,
        vapid_public_key=vapid_key.public_key().public_bytes(serialization.Encoding.X962,
                                                             serialization.PublicFormat.UncompressedPoint),
        ca_file=ca_cert_path,
        server_cert=state / SERVER_CERT,
        server_key=state / SERVER_KEY,
        apns_key_path=apns_path,
        apns_public_key=apns_key.public_key(),
        service_account_path=sa_path,
        service_account=account,
        fcm_public_key=fcm_key.public_key(),
    )
