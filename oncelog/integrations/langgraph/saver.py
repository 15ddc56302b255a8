"""``OncelogSaver``: LangGraph's checkpoints on the ledger's log (docs/langgraph.md).

Writes go to ``<prefix>.checkpoints`` (one partition per thread, as the thread's tool
executions); ``oncelog serve`` folds them into DuckDB and answers the reads, from any
instance. Deleting is tombstones: compaction removes the records, the fold the rows,
and the thread's executions on the requests topic stay (the audit log is never
touched). One class has both sides: its async methods
(:class:`~oncelog.integrations.langgraph.async_side.AsyncSide`) run the blocking ones on a
worker thread.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import random
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from oncelog.errors import ConfigError, InvalidArgumentError
from oncelog.integrations.langgraph import wire
from oncelog.integrations.langgraph.async_side import AsyncSide
from oncelog.integrations.langgraph.recent import RecentPuts
from oncelog.integrations.langgraph.transport import CheckpointReader, CheckpointWriter, Tombstone
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas import read_api
from oncelog.schemas.checkpoint_answers import CheckpointItem, CheckpointPart
from oncelog.schemas.models import CheckpointKind, CheckpointRecord
from oncelog.settings import Settings

_Items = list[CheckpointItem]  # the class's own `list` method shadows the builtin in it
_Parts = list[CheckpointPart]
_Item = CheckpointItem

#: Rows asked for per page (the server caps it at its ``max_rows``).
PAGE: int = 500


class LedgerFork(Protocol):
    """Forks the ledger run of one thread into another (``copy_thread`` calls it after
    copying the checkpoints), so that the copy's tool calls replay the source's effects.
    The SDK's ``LedgerClient.fork_channel`` is wired here (docs/langgraph.md)."""

    def __call__(self, source_thread_id: str, target_thread_id: str) -> None: ...


def fork_ledger_runs(client: SyncLedgerClient) -> LedgerFork:
    """The ``fork`` hook for runs whose channel is their thread id (``LedgerRun(client,
    None)``, the LangGraph adapter's default): ``copy_thread`` then forks the source
    thread's ledger run into the target's (:meth:`SyncLedgerClient.fork_channel`), so the
    copy's tool calls replay the effects the source completed instead of running again."""

    def fork(source_thread_id: str, target_thread_id: str) -> None:
        client.fork_channel(source_thread_id, target_thread_id)

    return fork


class OncelogSaver(AsyncSide):
    """A LangGraph checkpointer whose checkpoints and pending writes are on the log.

    ``settings`` name the broker (``bootstrap_servers`` must be set: see
    :func:`oncelog.connection.with_bootstrap`) and the topics' prefix; ``query_url`` is
    any ``oncelog serve`` of the group (default: ``http://<http_host>:<http_port>``),
    reached with ``settings.http_token``. ``timeout_s`` bounds each write's
    acknowledgement and each read. ``fork`` is the hook ``copy_thread`` calls to fork
    the thread's ledger run (None: checkpoints only).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        query_url: str | None = None,
        serde: SerializerProtocol | None = None,
        timeout_s: float = 30.0,
        fork: LedgerFork | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if not settings.bootstrap_servers:
            raise ConfigError(
                "OncelogSaver needs settings.bootstrap_servers: set ONCELOG_BOOTSTRAP_SERVERS, "
                "or pass oncelog.connection.with_bootstrap(settings) (finds the local broker)"
            )
        kafka = settings.kafka_config(settings.bootstrap_servers)
        self._writer = CheckpointWriter(kafka, settings.checkpoints_topic, timeout_s)
        url = query_url or f"http://{settings.http_host}:{settings.http_port}"
        self._reader = CheckpointReader(url, settings.http_token, timeout_s)
        self.fork = fork
        self._recent = RecentPuts()

    # --- reads -----------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the thread's latest in its namespace."""
        conf = config["configurable"]
        thread = str(conf["thread_id"])
        ns, checkpoint_id = conf.get("checkpoint_ns", ""), get_checkpoint_id(config)
        mine = self._recent_item(thread, ns, checkpoint_id)
        if mine is not None:
            return wire.as_tuple(self.serde, mine)
        params = {"ns": ns, "checkpoint_id": checkpoint_id}
        items = self._checkpoints(thread, params, limit=1)
        return None if not items else wire.as_tuple(self.serde, items[0])

    def _recent_item(self, thread: str, ns: str, checkpoint_id: str | None) -> _Item | None:
        """The checkpoint from this saver's own memory, while nobody else wrote the thread's
        partition since its last write (one watermark round trip, no hop to serve)."""
        if self._recent.item(thread, ns, checkpoint_id) is None:
            return None
        if not self._recent.alone(self._writer, thread):
            return None
        return self._recent.item(thread, ns, checkpoint_id)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of one thread (and namespace, when ``config`` names
        one), or of every thread (``config`` None), matching ``filter`` on metadata."""
        conf = {} if config is None else config["configurable"]
        thread = None if config is None else str(conf["thread_id"])
        params = {
            "ns": conf.get("checkpoint_ns"),
            "checkpoint_id": None if config is None else get_checkpoint_id(config),
            "before": None if before is None else get_checkpoint_id(before),
            "filter": wire.filter_param(filter),
        }
        for item in self._checkpoints(thread, params, limit=limit):
            yield wire.as_tuple(self.serde, item)

    def _checkpoints(
        self, thread: str | None, params: dict[str, Any], *, limit: int | None
    ) -> _Items:
        """Every page of a checkpoint listing, up to ``limit`` items."""
        path = (
            read_api.CHECKPOINTS
            if thread is None
            else read_api.path(read_api.THREAD_CHECKPOINTS, channel_id=thread)
        )
        if thread is None:
            params.pop("checkpoint_id", None)  # the every-thread route has no such filter
        items: _Items = []
        cursor: str | None = None
        while limit is None or len(items) < limit:
            want = PAGE if limit is None else min(PAGE, limit - len(items))
            page = self._reader.get(
                path,
                {**params, "limit": want, "cursor": cursor, "after": self._writer.after(thread)},
            )
            got = [CheckpointItem.model_validate(i) for i in page["items"]]
            items += got
            if not page["truncated"] or not got:
                break
            last = got[-1]
            cursor = _json([last.checkpoint_id, last.thread_id, last.checkpoint_ns])
        return items

    def checkpoint_heads(self, thread_id: str, after_id: str | None) -> dict[str, str | None]:
        """The thread's root-namespace checkpoints above ``after_id`` (every one: None), each
        with its parent's id: one small read, without the checkpoints' data (what the
        LangGraph adapter's branch tree needs, :mod:`oncelog.integrations.branches`)."""
        mine = self._recent.heads_after(thread_id, after_id)
        if mine is not None and self._recent.alone(self._writer, thread_id):
            return mine
        found: dict[str, str | None] = {}
        path = read_api.path(read_api.THREAD_HEADS, channel_id=thread_id)
        while True:
            query = {"after_id": after_id, "limit": PAGE, "after": self._writer.after(thread_id)}
            page = self._reader.get(path, query)
            found.update((h["checkpoint_id"], h["parent_checkpoint_id"]) for h in page["items"])
            if not page["truncated"] or not page["items"]:
                return found
            after_id = page["items"][-1]["checkpoint_id"]

    def _parts(self, path: str, params: dict[str, Any], thread: str | None) -> _Parts:
        """Every page of a parts listing."""
        parts: _Parts = []
        start_after: str | None = None
        while True:
            query = {**params, "limit": PAGE, "start_after": start_after}
            page = self._reader.get(path, {**query, "after": self._writer.after(thread)})
            got = [CheckpointPart.model_validate(i) for i in page["items"]]
            parts += got
            if not page["truncated"] or not got:
                return parts
            start_after = _json([got[-1].record_key, got[-1].part])

    def _thread_parts(self, thread_id: str, *, data: bool = False) -> _Parts:
        return self._parts(
            read_api.path(read_api.THREAD_PARTS, channel_id=thread_id),
            {"data": str(data).lower()},
            thread_id,
        )

    # --- writes ----------------------------------------------------------------------

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Write a checkpoint and its new channel values; return once all are acknowledged."""
        conf = config["configurable"]
        meta = get_checkpoint_metadata(config, metadata)
        records = wire.put_records(self.serde, config, checkpoint, meta, new_versions)
        thread = str(conf["thread_id"])
        self._remember(thread, records, self._writer.put(thread, records))
        self._recent.put(self._writer.partition_of(thread), records)
        return {
            "configurable": {
                "thread_id": conf["thread_id"],
                "checkpoint_ns": conf.get("checkpoint_ns", ""),
                "checkpoint_id": checkpoint["id"],
            }
        }

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Write a task's pending writes on the checkpoint ``config`` names. A write sent
        again (same task and index) replaces the first: the log keeps one per key."""
        records = wire.write_records(self.serde, config, writes, task_id, task_path)
        thread = str(config["configurable"]["thread_id"])
        if self._remember(thread, records, self._writer.put(thread, records)):
            self._recent.put_writes(records)

    def _remember(self, thread: str, records: Sequence[object], offsets: Sequence[int]) -> bool:
        """Note where own records landed; False when another writer's came between."""
        return not records or self._recent.acknowledged(self._writer.partition_of(thread), offsets)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints and writes (tombstones; its executions stay)."""
        self._delete({thread_id: self._thread_parts(thread_id)})

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs made, and the writes pending on them."""
        if not run_ids:
            return
        found = self._parts(read_api.RUN_PARTS, {"run_id": list(run_ids)}, None)
        by_thread: dict[str, _Parts] = {}
        for part in found:
            by_thread.setdefault(part.thread_id, []).append(part)
        self._delete(by_thread)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's latest checkpoint, its writes and the
        channel values it names; ``delete``: delete the threads. Ancestors are not kept:
        a graph with a ``DeltaChannel`` needs its ancestors, do not prune it so."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidArgumentError(f"unknown prune strategy {strategy!r}: keep_latest|delete")
        for thread_id in thread_ids:
            parts = self._thread_parts(thread_id)
            if strategy == "keep_latest":
                parts = _older_than_latest(parts)
            self._delete({thread_id: parts})

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of the source thread to the target (each copied
        part names the source in ``copied_from``), then fork its ledger run
        (:meth:`fork_ledger_run`)."""
        parts = self._thread_parts(source_thread_id, data=True)
        records = [_copied(p, target_thread_id) for p in parts]
        self._recent.forget_thread(target_thread_id)
        if records:
            self._remember(target_thread_id, records, self._writer.put(target_thread_id, records))
        self.fork_ledger_run(source_thread_id, target_thread_id)

    def fork_ledger_run(self, source_thread_id: str, target_thread_id: str) -> None:
        """The hook where the ledger run forks with the thread (``fork``; none: nothing)."""
        if self.fork is not None:
            self.fork(source_thread_id, target_thread_id)

    def _delete(self, by_thread: dict[str, _Parts]) -> None:
        for thread_id, parts in by_thread.items():
            tombstones: builtins.list[Tombstone] = [(p.record_key, p.part) for p in parts]
            self._recent.forget_thread(thread_id)
            if tombstones:
                offsets = self._writer.delete(thread_id, tombstones)
                self._remember(thread_id, tombstones, offsets)

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Versions as text that sorts in order (as LangGraph's own savers make them)."""
        number = 0 if current is None else int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    def close(self) -> None:
        """Flush what is queued and close the producer and the HTTP client."""
        self._writer.close()
        self._reader.close()

    def __enter__(self) -> OncelogSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _older_than_latest(parts: list[CheckpointPart]) -> _Parts:
    """The parts ``keep_latest`` deletes: all but each namespace's latest checkpoint, the
    writes pending on it and the channel values it names."""
    latest: dict[str, CheckpointPart] = {}
    for p in parts:
        if p.kind == CheckpointKind.CHECKPOINT.value and p.part == 0:
            held = latest.get(p.checkpoint_ns)
            if held is None or p.checkpoint_id > held.checkpoint_id:
                latest[p.checkpoint_ns] = p
    kept_ids = {(ns, p.checkpoint_id) for ns, p in latest.items()}
    kept_blobs = {
        (ns, channel, version)
        for ns, p in latest.items()
        for channel, version in json.loads(p.channel_versions_json or "{}").items()
    }

    def kept(p: CheckpointPart) -> bool:
        if p.kind == CheckpointKind.BLOB.value:
            return (p.checkpoint_ns, p.channel, p.version) in kept_blobs
        return (p.checkpoint_ns, p.checkpoint_id) in kept_ids

    return [p for p in parts if not kept(p)]


_RECORD_FIELDS = tuple(f.name for f in dataclasses.fields(CheckpointRecord))


def _copied(p: CheckpointPart, thread_id: str) -> CheckpointRecord:
    """The record of a stored part, on another thread, naming the thread it was copied from:
    every other field of the record as stored (the part has them all:
    :func:`oncelog.schemas.layout.check_part`)."""
    assert p.data is not None, "copied parts are read with their data"
    fields = {name: getattr(p, name) for name in _RECORD_FIELDS}
    changed = {"kind": CheckpointKind(p.kind), "thread_id": thread_id, "copied_from": p.thread_id}
    return CheckpointRecord(**{**fields, **changed})


__all__ = ["PAGE", "LedgerFork", "OncelogSaver"]
