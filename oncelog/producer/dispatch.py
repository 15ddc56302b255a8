"""Send a request and wait for its decision, bounded, re-sending the same request id.

A re-send is safe by construction: the fold never lets one request id take
effect twice, so a retry gets the first copy's answer back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Final

from confluent_kafka import Message

from oncelog.errors import (
    CodecError,
    InvalidArgumentError,
    KafkaOperationError,
    LedgerTimeoutError,
    NoProjectorError,
    NotAuthorizedError,
)
from oncelog.identity import validation
from oncelog.identity.partitioner import cached_partition_for
from oncelog.kafka.lanes import Lanes
from oncelog.kafka.reader import read_to_end
from oncelog.producer.abandoned import AbandonedClaims, release_for, what_happens_next
from oncelog.producer.clock import WALL_CLOCK, Clock
from oncelog.producer.listener import DecisionListener
from oncelog.producer.own_writes import OwnWrites
from oncelog.producer.resend_queue import ResendQueue
from oncelog.producer.stuck_client import unstuck
from oncelog.schemas.codec import decode_request, decode_snapshot, encode_request
from oncelog.schemas.models import Decision, ExecutionSnapshot, Kind, Request
from oncelog.settings import Settings
from oncelog.tracing import propagation
from oncelog.tracing.propagation import Headers

#: How long a request waits for other calls' requests to share its produce request, while
#: other calls of the client wait (a call alone leaves at once): see oncelog.kafka.lanes.
BATCH_LINGER_MS: Final = 2.0

MAX_CALL_TIMEOUT_S: Final = 300.0
"""The longest a call may keep re-sending one request: the fold's retry memory
(``oncelog.referee.fold.RETRY_MEMORY_MS``) covers it plus a delivery timeout."""


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long a client waits: for one whole call, for a decision before re-sending, and
    for the broker's first answer.

    Give one to a client (``LedgerClient(timeouts=Timeouts(total_s=5))``, or
    ``oncelog.connect(timeouts=...)``); every call of that client is bounded by it.

    Attributes:
        total_s: The longest one call (claim, complete, heartbeat, ...) may take, its
            re-sends included (each of the three is in (0, :data:`MAX_CALL_TIMEOUT_S`]).
            When it runs out, the call raises :class:`~oncelog.errors.LedgerTimeoutError`
            (code ``timeout``), or :class:`~oncelog.errors.NoProjectorError` (code
            ``no_projector``) when the broker acknowledged the request but no decision
            at all arrived meanwhile.
        resend_after_s: How long a call waits for its decision before it sends the same
            request again. A re-send carries the same request id, so the ledger takes it
            once; it covers a request lost with a broker or a projector that restarted.
        connect_s: The longest connecting (the client's ``open``, or its first call)
            waits for the broker's first answer (default: the ``connect_timeout_s`` setting,
            ``ONCELOG_CONNECT_TIMEOUT_S``, 10 s); a broker that does not answer by then
            raises :class:`~oncelog.errors.BrokerUnreachableError`
            (``broker_unreachable``), naming the address tried.

    Raises:
        InvalidArgumentError: a bound out of range, when built.
    """

    total_s: float = 30.0
    resend_after_s: float = 5.0
    connect_s: float = 10.0

    def __post_init__(self) -> None:
        # Each bound is a number of (0, 300] seconds: the ledger remembers a retried
        # request for a bounded time, and a longer wait is a hang.
        for name in ("total_s", "resend_after_s", "connect_s"):
            value = validation.validate_number(name, getattr(self, name), 0, MAX_CALL_TIMEOUT_S)
            if value == 0:
                raise InvalidArgumentError(f"{name} must be positive, got {value}")


class Dispatcher:
    """The client's Kafka transport: a producer for requests, a listener for decisions.

    With ``settle_abandoned`` (the SDK's clients), a claim whose call gave up is kept,
    and the next claim of its operation settles it first (:mod:`oncelog.producer.abandoned`).
    Off for a transport that sends many callers' claims (the HTTP write API): one
    caller's abandoned grant is not another's to release.
    """

    def __init__(
        self,
        settings: Settings,
        bootstrap: str,
        timeouts: Timeouts,
        *,
        reply_partition: int | None = None,
        settle_abandoned: bool = False,
    ) -> None:
        kafka = settings.kafka_config(bootstrap)
        self._topic = settings.requests_topic
        self._kafka = kafka
        self._executions_topic = settings.executions_topic
        # A failure reaches _on_failed, which fails the call at once on an ACL denial (a
        # request id is in the record).
        self._sender = Lanes(kafka, BATCH_LINGER_MS, on_error=self._on_failed)
        pinned = settings.reply_partition if reply_partition is None else reply_partition
        self._listener = DecisionListener(
            kafka,
            settings.decisions_topic,
            reply_partition=pinned,
            requests_topic=self._topic,
            connect_timeout_s=timeouts.connect_s,
        )
        self._listener_topic = settings.decisions_topic
        self._partitions = 0  # of the requests topic, read at start
        self.timeouts = timeouts
        self._resends: ResendQueue | None = None  # of the loop that called last
        self._abandoned = AbandonedClaims() if settle_abandoned else None
        self._own = OwnWrites()

    @property
    def clock(self) -> Clock:
        """Kafka's log time is the broker's clock; the local wall clock stands in for it."""
        return WALL_CLOCK

    @property
    def reply_partition(self) -> int:
        """The partition of the decisions topic this client listens on (named in each request)."""
        return self._listener.reply_partition

    def start(self) -> None:
        """Connect: choose the reply partition, listen on it, read the partition count."""
        self._listener.start()
        self._partitions = self._listener.request_partitions

    @property
    def decisions_received(self) -> int:
        """Decision records read so far: this client's own, and any others' on its partition."""
        return self._listener.received

    def close(self) -> None:
        """Stop listening and flush the producer."""
        self._listener.close()
        self._sender.close()

    def channel_snapshots(self, channel_id: str) -> list[ExecutionSnapshot]:
        """Every snapshot of ``channel_id`` on its partition of the executions topic, read to
        the end (a compacted topic: the newest version of each operation, and maybe older),
        and on until the states this client's own calls changed there are published."""
        partition = cached_partition_for(channel_id, self._partitions)
        own = self._own.newest(partition)
        reached = -1
        found = []
        records = read_to_end(
            self._kafka, self._executions_topic, partition, until=lambda: reached >= own
        )
        for msg in records:
            try:
                snapshot = decode_snapshot(msg.value() or b"")
            except CodecError:  # only the projector writes there: skip a foreign record
                continue
            reached = max(reached, snapshot.source_offset)
            if snapshot.state.channel_id == channel_id:
                found.append(snapshot)
        return found

    def _send(self, request: Request, headers: Headers | None = None) -> None:
        partition = cached_partition_for(request.channel_id, self._partitions)
        # Every request names where this client listens: its decision is written there.
        routed = request._replace(reply_partition=self._listener.reply_partition)
        value = encode_request(routed)
        # Alone: no other call of this client waits, so nothing would share its request.
        alone = self._listener.waiting <= 1
        key = request.operation_id.encode()
        self._sender.lane(alone=alone).send_nowait(self._topic, partition, key, value, headers)

    def send_acknowledged(self, request: Request, timeout_s: float) -> None:
        """Send once, without waiting for the decision: return once the broker has it."""
        self._send(request, propagation.current_headers())
        self._sender.flush(timeout_s)

    def timeout_error(self, request: Request, seen: int) -> LedgerTimeoutError:
        """The error of ``request``'s call, out of time; ``seen``: decisions read at its start.

        It also mends a stuck producer or reader (:func:`.stuck_client.unstuck`): every later
        call would time out too.
        """
        unstuck(self._sender, self._listener)
        error = timeout_error(
            request,
            self.timeouts.total_s,
            acknowledged=self._sender.acknowledged(),
            decisions_moved=self.decisions_received != seen,
            requests_topic=self._topic,
            reply_at=f"{self._listener_topic}[{self.reply_partition}]",
        )
        if self._abandoned is not None and request.kind is Kind.CLAIM:
            error.message = f"{error.message}. Meanwhile, {what_happens_next(request)}"
            error.args = (error.message,)
        return error

    def _gave_up(self, request: Request, error: BaseException) -> None:
        """``request``'s call ends without its decision: keep a claim to settle later."""
        if self._abandoned is None or request.kind is not Kind.CLAIM:
            return
        if isinstance(error, NotAuthorizedError):  # denied: it never reached the log
            return
        self._abandoned.add(request)
        if not isinstance(error, LedgerTimeoutError):  # whose message says it already
            error.add_note(f"oncelog: {what_happens_next(request)}")

    def _to_settle(self, request: Request) -> list[Request]:
        return [] if self._abandoned is None else self._abandoned.take(request)

    def _keep(self, requests: list[Request]) -> None:
        """Keep again the abandoned claims a failed settlement did not reach."""
        if self._abandoned is not None:
            for r in requests:
                self._abandoned.add(r)

    def _on_failed(self, msg: Message, error: KafkaOperationError) -> None:
        # A transient failure is re-sent by the call until its deadline; a denial is final.
        if isinstance(error, NotAuthorizedError):
            with contextlib.suppress(CodecError):
                self._listener.settle(decode_request(msg.value() or b"").request_id, error)

    def call(self, request: Request) -> Decision:
        """Blocking: send, wait for the decision, re-send on silence.

        A claim first settles this client's abandoned claims of its operation.
        """
        deadline = time.monotonic() + self.timeouts.total_s
        pending = self._to_settle(request)
        while pending:
            try:
                self._settle(pending[0], deadline)
            except BaseException:
                self._keep(pending[1:])
                raise
            pending = pending[1:]
        return self._call(request, deadline)

    def _settle(self, abandoned: Request, deadline: float) -> None:
        """Re-send ``abandoned``; release the grant it won, if it still holds."""
        release = release_for(abandoned, self._call(abandoned, deadline))
        if release is not None:
            try:
                self._call(release, deadline)
            except BaseException:
                self._keep([abandoned])  # its grant still holds: release it next time
                raise

    def _call(self, request: Request, deadline: float) -> Decision:
        answer = self._listener.expect(request.request_id)
        seen = self.decisions_received
        # The caller's trace context (None when tracing is off), the same on every re-send.
        headers = propagation.current_headers()
        first = True
        try:
            while True:
                left = deadline - time.monotonic()
                wait = _send_again(self, request, left, seen, headers, first=first)
                first = False
                try:
                    return self._traced(request, answer.result(timeout=wait), headers)
                except FutureTimeout:
                    continue
        except BaseException as exc:
            self._gave_up(request, exc)
            raise
        finally:
            self._listener.forget(request.request_id)

    def _traced(self, request: Request, decision: Decision, headers: Headers | None) -> Decision:
        """Note the decision (:class:`OwnWrites`); tracing on, link the span that folded it."""
        self._own.saw(decision)
        if headers is not None:
            propagation.link_current(self._listener.take_trace(request.request_id), "fold")
        return decision

    async def acall(self, request: Request, headers: Headers | None = None) -> Decision:
        """Async: the same protocol as :meth:`call`, without blocking the loop.

        The request carries the current span's context or, when no span is current here,
        ``headers``: the write API's caller's (an instrumented server's span is a child of
        it, so its context wins).

        The wait is one await on a loop future that the listener settles; the
        first re-send is queued with every other call's (:class:`ResendQueue`),
        later ones re-arm a timer of the call's own; the answer cancels either.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeouts.total_s
        pending = self._to_settle(request)
        while pending:
            try:
                await self._asettle(pending[0], deadline)
            except BaseException:
                self._keep(pending[1:])
                raise
            pending = pending[1:]
        return await self._acall(request, headers, deadline)

    async def _asettle(self, abandoned: Request, deadline: float) -> None:
        """Async :meth:`_settle`."""
        release = release_for(abandoned, await self._acall(abandoned, None, deadline))
        if release is not None:
            try:
                await self._acall(release, None, deadline)
            except BaseException:
                self._keep([abandoned])
                raise

    async def _acall(self, request: Request, headers: Headers | None, deadline: float) -> Decision:
        loop = asyncio.get_running_loop()
        answer = self._listener.expect_async(request.request_id, loop)
        resends = self._resends
        if resends is None or resends.loop is not loop:
            resends = self._resends = ResendQueue(loop)
        carried = propagation.current_headers() or headers
        resend = _Resender(self, request, answer, carried, deadline)
        try:
            resend.start(resends)
            return self._traced(request, await answer, carried)
        except BaseException as exc:
            self._gave_up(request, exc)
            raise
        finally:
            resend.cancel()
            self._listener.forget(request.request_id)


class _Resender:
    """The re-send timer of one async call; it also fails the call at its deadline."""

    __slots__ = (
        "_answer",
        "_deadline",
        "_dispatcher",
        "_handle",
        "_headers",
        "_loop",
        "_queue",
        "_request",
        "_seen",
    )

    def __init__(
        self,
        dispatcher: Dispatcher,
        request: Request,
        answer: asyncio.Future[Decision],
        headers: Headers | None,
        deadline: float,
    ) -> None:
        self._dispatcher, self._loop = dispatcher, answer.get_loop()
        # What is sent again until its decision is read, and where that decision goes.
        self._request, self._headers, self._answer = request, headers, answer
        self._deadline = deadline  # on the loop's clock
        self._seen = dispatcher.decisions_received
        self._handle: asyncio.TimerHandle | None = None
        self._queue: ResendQueue | None = None

    def start(self, queue: ResendQueue) -> None:
        """The first send; its re-send waits in ``queue`` (or on a timer, if refused)."""
        wait = self._attempt(first=True)
        if wait is not None:
            if queue.add(self, wait):
                self._queue = queue
            else:
                self._handle = self._loop.call_later(wait, self)

    def __call__(self) -> None:
        """Send again and re-arm, or fail the call once its deadline has passed."""
        wait = self._attempt()
        if wait is not None:
            self._handle = self._loop.call_later(wait, self)

    def _attempt(self, *, first: bool = False) -> float | None:
        """Send; how long to wait for the answer before the next attempt, or None when
        the call is over (answered, or failed here at its deadline or on a denial)."""
        if self._answer.done():
            return None
        try:
            left = self._deadline - self._loop.time()
            return _send_again(
                self._dispatcher, self._request, left, self._seen, self._headers, first=first
            )
        except (LedgerTimeoutError, NotAuthorizedError) as exc:
            self._answer.set_exception(exc)
            return None

    def cancel(self) -> None:
        """Stop re-sending: the call has its answer (or gave up)."""
        if self._queue is not None:
            self._queue.discard(self)
        if self._handle is not None:
            self._handle.cancel()


def _send_again(
    dispatcher: Dispatcher,
    request: Request,
    left_s: float,
    seen: int,
    headers: Headers | None,
    *,
    first: bool = False,
) -> float:
    """One attempt of a call (blocking or async): send, and return how long to wait for
    the answer before the next attempt; the timeout error once no time is left.

    ``seen`` is the count of decisions the client had read when the call began. The
    ``first`` attempt is sent whatever is left: a call that times out has always sent
    its request, so its outcome is one of the two a caller must already handle.
    """
    if left_s <= 0 and not first:
        raise dispatcher.timeout_error(request, seen)
    _try_send(dispatcher, request, headers)
    return max(0.0, min(left_s, dispatcher.timeouts.resend_after_s))


def _try_send(dispatcher: Dispatcher, request: Request, headers: Headers | None) -> None:
    # A send that cannot even be queued (or a pending delivery error) is retried
    # by the caller's loop until its deadline; the same request id keeps it safe.
    # An ACL denial is final: it fails the call at once instead of timing out.
    try:
        dispatcher._send(request, headers)
    except NotAuthorizedError:
        raise
    except KafkaOperationError:
        return


def timeout_error(
    request: Request,
    total_s: float,
    *,
    acknowledged: bool,
    decisions_moved: bool,
    requests_topic: str,
    reply_at: str,
) -> LedgerTimeoutError:
    """The error of a call that got no decision within ``total_s``.

    When the broker acknowledged the request and not one decision arrived at
    ``reply_at`` (the client's reply partition) during the call, nothing folds the
    requests topic: :class:`NoProjectorError`, naming ``oncelog serve``. Otherwise
    (the broker did not take the request, or decisions flowed but not this one) a
    plain :class:`LedgerTimeoutError`.
    """
    what = (
        f"no decision for {request.kind.value} request {request.request_id} "
        f"(operation {request.operation_id}) within {total_s}s"
    )
    if acknowledged and not decisions_moved:
        return NoProjectorError(
            f"{what}: the broker acknowledged the request on {requests_topic}, but no "
            f"decision at all arrived on {reply_at} meanwhile, so no projector seems to fold "
            f"{requests_topic}: start one with `oncelog serve` (same ONCELOG_TOPIC_PREFIX and "
            "broker), or check that it is not far behind (`oncelog_consumer_lag` on its /metrics)"
        )
    return LedgerTimeoutError(what)
