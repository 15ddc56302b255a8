"""The TLS files of the secure local broker and cluster: a private CA and one broker key.

Made once per broker folder with ``openssl`` (kept when present): ``ca.pem`` (the CA
certificate clients trust: ``ONCELOG_SSL_CA_LOCATION``), ``ca.key`` (its key, kept to
sign nothing else), ``broker.pem`` (the broker's unencrypted PKCS#8 key followed by its
certificate, for Kafka's ``ssl.keystore.type=PEM``). The broker certificate names
``127.0.0.1`` and ``localhost``, where every local node listens, so that clients keep
librdkafka's default hostname check. Keys are written mode 0600.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from oncelog.errors import BrokerError

#: Long enough for any test run or drill; the CA is made again when its folder is removed.
_DAYS = "3650"
_SUBJECT_ALT_NAMES = "subjectAltName=IP:127.0.0.1,DNS:localhost"


@dataclass(frozen=True)
class TlsFiles:
    """Where the CA certificate and the broker's key-and-certificate PEM are."""

    ca: Path
    keystore: Path

    def properties(self) -> list[str]:
        """The ``ssl.*`` lines of ``server.properties`` (inter-broker TLS trusts the CA too)."""
        return [
            "ssl.keystore.type=PEM",
            f"ssl.keystore.location={self.keystore}",
            "ssl.truststore.type=PEM",
            f"ssl.truststore.location={self.ca}",
        ]


def ensure_certs(folder: Path) -> TlsFiles:
    """The CA and broker certificate in ``folder``, made now if missing."""
    files = TlsFiles(folder / "ca.pem", folder / "broker.pem")
    if files.ca.exists() and files.keystore.exists():
        return files
    openssl = shutil.which("openssl")
    if openssl is None:
        raise BrokerError("the secure broker needs `openssl` on the PATH to make its TLS files")
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, key, csr, cert = (folder / n for n in ("ca.key", "broker.key", "broker.csr", "crt"))
    new_key = ["-newkey", "rsa:2048", "-nodes", "-keyout"]
    ca_subject = ["-days", _DAYS, "-subj", "/CN=oncelog local CA"]
    _run(openssl, "req", "-x509", *new_key, str(ca_key), "-out", str(files.ca), *ca_subject)
    broker_subject = ["-subj", "/CN=localhost", "-addext", _SUBJECT_ALT_NAMES]
    _run(openssl, "req", *new_key, str(key), "-out", str(csr), *broker_subject)
    signed_by = ["-CA", str(files.ca), "-CAkey", str(ca_key), "-CAcreateserial"]
    kept = ["-days", _DAYS, "-copy_extensions", "copy"]
    _run(openssl, "x509", "-req", "-in", str(csr), *signed_by, "-out", str(cert), *kept)
    pkcs8 = _run(openssl, "pkcs8", "-topk8", "-nocrypt", "-in", str(key))
    files.keystore.touch(mode=0o600)
    files.keystore.write_text(pkcs8 + cert.read_text())
    for leftover in (key, csr, cert, folder / "ca.srl"):
        leftover.unlink(missing_ok=True)
    ca_key.chmod(0o600)
    return files


def _run(*cmd: str) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BrokerError(
            f"`openssl {cmd[1]}` failed making the broker's TLS files:\n{done.stderr}"
        )
    return done.stdout
