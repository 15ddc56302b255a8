"""The attributes of oncelog's spans: OpenTelemetry's semantic-convention names where one
exists (``messaging.*``), ``oncelog.*`` for the ledger's own words.

Built from a request or a decision, never from a claim token: the token is the
capability of its holder, and a span is read by everyone who reads traces. Params and
results go in only when the caller opts in (``ONCELOG_TRACE_PAYLOADS``).
"""

from __future__ import annotations

from typing import Final

from oncelog.identity import ids
from oncelog.schemas import models as m

Attributes = dict[str, str | bool | int]

MESSAGING_SYSTEM: Final = "messaging.system"
DESTINATION: Final = "messaging.destination.name"
PARTITION: Final = "messaging.destination.partition.id"
OFFSET: Final = "messaging.kafka.offset"
MESSAGE_KEY: Final = "messaging.kafka.message.key"
MESSAGE_ID: Final = "messaging.message.id"
OPERATION_TYPE: Final = "messaging.operation.type"
BATCH_COUNT: Final = "messaging.batch.message_count"
ERROR_TYPE: Final = "error.type"

KIND: Final = "oncelog.kind"
CHANNEL: Final = "oncelog.channel_id"
KEY_NAME: Final = "oncelog.key_name"
OPERATION_ID: Final = "oncelog.operation_id"
IDEMPOTENCY_KEY: Final = "oncelog.idempotency_key"
EPOCH: Final = "oncelog.epoch"
STATUS: Final = "oncelog.status"
OUTCOME: Final = "oncelog.outcome"
EFFECT: Final = "oncelog.effect"
TOOL: Final = "oncelog.tool_name"
RECONCILED: Final = "oncelog.reconciled"
PARAMS: Final = "oncelog.params"
RESULT: Final = "oncelog.result"


def of_request(request: m.Request, topic: str, *, payloads: bool, key: bool = True) -> Attributes:
    """What a request says before its decision: where it goes and what it asks (``key``:
    with a claim's idempotency key, which a caller that adds the decision's may skip)."""
    attrs: Attributes = {
        MESSAGING_SYSTEM: "kafka",
        DESTINATION: topic,
        OPERATION_TYPE: "send",
        MESSAGE_KEY: request.operation_id,
        MESSAGE_ID: request.request_id,
        KIND: request.kind.value,
        CHANNEL: request.channel_id,
        KEY_NAME: request.key_name,
        OPERATION_ID: request.operation_id,
    }
    body = request.body
    if isinstance(body, m.Claim):
        attrs[TOOL] = body.tool_name
        attrs[EFFECT] = body.effect.value
        if key:
            attrs[IDEMPOTENCY_KEY] = ids.idempotency_key(request.operation_id, body.request_hash)
        if payloads:
            attrs[PARAMS] = body.params.decode()
    elif isinstance(body, m.Complete) and payloads:
        attrs[RESULT] = body.result.decode()
    return attrs


def of_decision(decision: m.Decision, *, payloads: bool) -> Attributes:
    """What the fold decided: the outcome, the state after it, the request's position."""
    attrs: Attributes = {OUTCOME: decision.outcome.value}
    if decision.source_partition >= 0:
        attrs[PARTITION] = str(decision.source_partition)
        attrs[OFFSET] = decision.source_offset
    if decision.epoch is not None:
        attrs[EPOCH] = decision.epoch
    state = decision.state
    if state is not None:
        attrs[STATUS] = state.status.value.lower()
        attrs[EFFECT] = state.effect.value
        attrs[TOOL] = state.tool_name
        attrs[EPOCH] = state.epoch
        attrs[IDEMPOTENCY_KEY] = ids.idempotency_key(state.operation_id, state.request_hash)
    if payloads and decision.result is not None:
        attrs[RESULT] = decision.result.decode()
    return attrs
