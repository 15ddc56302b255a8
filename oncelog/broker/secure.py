"""The opt-in secure mode of the embedded broker and cluster: SCRAM users over TLS.

``oncelog broker start --secure`` runs the broker listener as ``SASL_SSL`` with
``SCRAM-SHA-512``, the way a production cluster is run: TLS with a CA made for the
folder (:mod:`oncelog.broker.certs`), the users below created when the KRaft storage
is formatted (``kafka-storage format --add-scram``), and ``StandardAuthorizer`` with
``allow.everyone.if.no.acl.found=false``: a principal may do only what an ACL grants
(``oncelog topics acl --apply``).

Passwords are drawn when the storage is formatted (or taken from
``ONCELOG_BROKER_PASSWORDS``) and kept, mode 0600, in ``<broker dir>/credentials.json``;
a restart keeps them, as SCRAM credentials live in the cluster's metadata.
``server.properties`` holds the admin's (the inter-broker login) and gets the same mode.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from pydantic import SecretStr

from oncelog.broker.certs import TlsFiles
from oncelog.errors import BrokerError
from oncelog.settings import Settings

#: The broker's own inter-broker principal and the super user of every admin command.
ADMIN = "admin"
#: The ledger's roles; ``oncelog topics acl`` grants each one what it needs.
PRINCIPALS = ("worker", "projector", "auditor")
USERS = (ADMIN, *PRINCIPALS)
MECHANISM = "SCRAM-SHA-512"
PROTOCOL = "SASL_SSL"
CREDENTIALS_FILE = "credentials.json"

_UNSAFE = frozenset(',]" \t\n')
_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 0600), even if it existed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(text)


def new_credentials(settings: Settings) -> dict[str, SecretStr]:
    """One password per user: from ``ONCELOG_BROKER_PASSWORDS`` or freshly generated."""
    unknown = set(settings.broker_passwords) - set(USERS)
    if unknown:
        raise BrokerError(f"ONCELOG_BROKER_PASSWORDS names unknown users {sorted(unknown)}")
    unsafe = [
        u for u, pw in settings.broker_passwords.items() if _UNSAFE & set(pw.get_secret_value())
    ]
    if unsafe:
        # The storage tool reads them inside `[name=...,password=...]`.
        raise BrokerError(f'ONCELOG_BROKER_PASSWORDS of {sorted(unsafe)}: no , ] " or spaces')
    return {
        user: settings.broker_passwords.get(user) or SecretStr(secrets.token_urlsafe(24))
        for user in USERS
    }


def save_credentials(broker_dir: Path, credentials: dict[str, SecretStr]) -> Path:
    """Store the passwords in the broker's folder, mode 0600; return the file."""
    path = broker_dir / CREDENTIALS_FILE
    plain = {user: secret.get_secret_value() for user, secret in credentials.items()}
    write_private(path, json.dumps(plain, indent=2) + "\n")
    return path


def load_credentials(broker_dir: Path) -> dict[str, SecretStr]:
    """The passwords of the secure broker last started in ``broker_dir``."""
    path = broker_dir / CREDENTIALS_FILE
    if not path.exists():
        raise BrokerError(f"no {path}: start the broker with `oncelog broker start --secure`")
    return {user: SecretStr(pw) for user, pw in json.loads(path.read_text()).items()}


def scram_arguments(credentials: dict[str, SecretStr]) -> list[str]:
    """The ``kafka-storage format`` options that create every user's SCRAM credentials."""
    args: list[str] = []
    for user, password in credentials.items():
        args += ["--add-scram", f"{MECHANISM}=[name={user},password={password.get_secret_value()}]"]
    return args


def secure_properties(credentials: dict[str, SecretStr], tls: TlsFiles) -> list[str]:
    """The SASL_SSL listener, the inter-broker login, TLS files and authorizer lines of
    ``server.properties``."""
    admin_pw = credentials[ADMIN].get_secret_value()
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{ADMIN}" password="{admin_pw}";'
    )
    return [
        f"sasl.enabled.mechanisms={MECHANISM}",
        f"sasl.mechanism.inter.broker.protocol={MECHANISM}",
        f"listener.name.{PROTOCOL.lower()}.{MECHANISM.lower()}.sasl.jaas.config={jaas}",
        *tls.properties(),
        f"authorizer.class.name={_AUTHORIZER}",
        # The broker itself is admin on the SASL listener; the controller listener stays
        # PLAINTEXT on loopback, where the nodes reach the controllers as ANONYMOUS.
        # No SASL connection can ever authenticate as ANONYMOUS.
        f"super.users=User:{ADMIN};User:ANONYMOUS",
        "allow.everyone.if.no.acl.found=false",
    ]


def client_settings(
    settings: Settings, user: str, password: SecretStr, ca: Path | None = None
) -> Settings:
    """``settings`` with the SCRAM login of ``user`` over TLS trusting ``ca``."""
    return settings.model_copy(
        update={
            "security_protocol": PROTOCOL,
            "sasl_mechanism": MECHANISM,
            "sasl_username": user,
            "sasl_password": password,
            "ssl_ca_location": None if ca is None else str(ca),
        }
    )
