"""The write API of one process (``serve``, or a gateway worker), with the Kafka transport
it sends on."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from oncelog.errors import ConfigError
from oncelog.gateway.idempotency import KeyMemory
from oncelog.gateway.routes import WriteApi
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.schemas.models import ApproverKey
from oncelog.settings import Settings


@dataclass
class OpenWriteApi:
    """The routes and the transport they send on; close it after the API has stopped."""

    api: WriteApi
    transport: Dispatcher

    def close(self) -> None:
        """Flush and disconnect the transport."""
        self.transport.close()


def open_write_api(
    settings: Settings, bootstrap: str, *, keys: KeyMemory | None = None
) -> OpenWriteApi | None:
    """The write API when ``ONCELOG_HTTP_WRITE_TOKEN`` is set (None: the routes are off),
    connected to ``bootstrap`` like any SDK client (its own reply partition); ``keys``:
    the idempotency keys' memory (None: this process's own)."""
    token = settings.http_write_token
    if token is None:
        return None
    read = settings.http_token
    if read is not None and hmac.compare_digest(
        read.get_secret_value().encode(), token.get_secret_value().encode()
    ):
        raise ConfigError(
            "ONCELOG_HTTP_WRITE_TOKEN equals ONCELOG_HTTP_TOKEN: give the write API a token "
            "of its own, so that a reader cannot write"
        )
    transport = Dispatcher(settings, bootstrap, Timeouts(connect_s=settings.connect_timeout_s))
    transport.start()
    approvers = tuple(ApproverKey(*a) for a in settings.approver_list())
    memory = KeyMemory() if keys is None else keys
    api = WriteApi(transport, token, memory, settings.http_claim_key, approvers)
    return OpenWriteApi(api, transport)
