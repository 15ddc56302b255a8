"""Who owns what: the owner view from the coordinator's answer, its cache. No I/O."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import NoOwnerError
from oncelog.projector.membership import (
    CLIENT_ID,
    MemberInfo,
    advertised_url,
    member_client_id,
    projector_of,
)
from oncelog.query.owners import Member, OwnerView, ViewCache, build_view
from oncelog.query.server import advertised_url as url_of_instance
from oncelog.settings import Settings

A = MemberInfo("p-a", "oncelog-projector@http://10.0.0.1:8765", (0, 2))
B = MemberInfo("p-b", "oncelog-projector@http://10.0.0.2:8765", (1,))
NO_API = MemberInfo("p-c", "oncelog-projector", ())


def test_the_id_and_query_url_ride_in_the_client_id_and_come_back() -> None:
    settings = Settings(http_advertised_url="http://h.example:9000", projector_id="p-1")
    assert member_client_id(settings) == "oncelog-projector/p-1@http://h.example:9000"
    assert advertised_url(member_client_id(settings)) == "http://h.example:9000"
    assert projector_of(member_client_id(settings)) == "p-1"
    no_api = member_client_id(Settings(projector_id="p-1"))
    assert no_api == f"{CLIENT_ID}/p-1"
    assert advertised_url(no_api) is None
    assert projector_of(no_api) == "p-1"


def test_an_older_members_client_id_gives_its_url_but_no_id() -> None:
    assert advertised_url("oncelog-projector@http://x:1") == "http://x:1"
    assert projector_of("oncelog-projector@http://x:1") is None
    assert projector_of(CLIENT_ID) is None


@given(
    projector_id=st.text(min_size=1, max_size=40),
    url=st.none() | st.sampled_from(["http://h:1", "https://a@q.example:9", "http://[::1]:9"]),
)
def test_any_projector_id_and_url_come_back_from_the_client_id(
    projector_id: str, url: str | None
) -> None:
    client_id = member_client_id(Settings(projector_id=projector_id, http_advertised_url=url))
    assert projector_of(client_id) == projector_id
    assert advertised_url(client_id) == url


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:4321"),
        ("::1", "http://[::1]:4321"),
        ("0.0.0.0", f"http://{socket.gethostname()}:4321"),
    ],
)
def test_an_instance_advertises_its_host_and_bound_port(host: str, url: str) -> None:
    assert url_of_instance(Settings(http_host=host), 4321) == url
    explicit = Settings(http_host=host, http_advertised_url="https://q.example")
    assert url_of_instance(explicit, 4321) == "https://q.example"


@pytest.mark.parametrize(
    "foreign",
    [
        "rdkafka",
        "other@http://x:1",
        "other/p-1@http://x:1",
        "oncelog-projector@ftp://x",
        "oncelog-projector@",
        "oncelog-projectors/p-1@http://x:1",
    ],
)
def test_a_foreign_client_id_advertises_nothing(foreign: str) -> None:
    assert advertised_url(foreign) is None
    assert projector_of(foreign) is None


def test_each_partition_has_its_members_owner_and_url() -> None:
    view = build_view([B, A, NO_API], partitions=4, stable=True, previous=None)
    assert [m.projector_id for m in view.members] == ["p-a", "p-b", "p-c"]  # id order
    assert view.owner_of(0) == view.owner_of(2) == Member("p-a", "http://10.0.0.1:8765")
    assert view.owner_of(1) == Member("p-b", "http://10.0.0.2:8765")
    assert view.owner_of(3) is None  # nobody folds it (yet)
    assert view.members[2] == Member("p-c", None)
    assert "no query API" in view.members[2].describe()


def test_a_partition_listed_twice_goes_to_the_first_member_in_id_order() -> None:
    twice = MemberInfo("p-0", "oncelog-projector@http://x:1", (1,))
    assert build_view([B, twice], 2, True, None).owner_of(1) == Member("p-0", "http://x:1")


def test_while_the_group_rebalances_the_last_stable_view_stays() -> None:
    stable = build_view([A, B], 4, stable=True, previous=None)
    # The coordinator lists no assignment while it rebalances.
    empty = [MemberInfo(m.projector_id, m.client_id, ()) for m in (A, B)]
    assert build_view(empty, 4, stable=False, previous=stable) is stable
    first = build_view(empty, 4, stable=False, previous=None)
    assert first.owners == {}
    assert not first.stable


class FakeCoordinator:
    """Answers describe calls from a list; an exception in the list is raised."""

    def __init__(self, *answers: OwnerView | Exception) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, previous: OwnerView | None) -> OwnerView:
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_cache_asks_the_coordinator_once_per_ttl() -> None:
    first, second = OwnerView(2), OwnerView(3)
    coordinator, clock = FakeCoordinator(first, second), Clock()
    cache = ViewCache(coordinator, ttl_s=1.0, clock=clock)
    assert cache.view() is first
    clock.now += 0.9
    assert cache.view() is first
    assert coordinator.calls == 1
    clock.now += 0.2
    assert cache.view() is second


def test_a_refresh_is_fresh_but_a_burst_of_refreshes_is_one_call() -> None:
    first, second = OwnerView(2), OwnerView(3)
    coordinator, clock = FakeCoordinator(first, second), Clock()
    cache = ViewCache(coordinator, ttl_s=1.0, clock=clock)
    cache.view()
    clock.now += 0.05
    assert cache.refreshed() is first  # fetched 50 ms ago
    clock.now += 0.1
    assert cache.refreshed() is second
    assert coordinator.calls == 2


def test_a_coordinator_that_does_not_answer_keeps_the_last_view() -> None:
    first = OwnerView(2)
    coordinator = FakeCoordinator(NoOwnerError("loading"), first, NoOwnerError("moved"))
    clock = Clock()
    cache = ViewCache(coordinator, ttl_s=1.0, clock=clock)
    with pytest.raises(NoOwnerError, match="loading"):
        cache.view()  # nothing known yet
    assert cache.view() is first
    clock.now += 5
    assert cache.view() is first
    assert coordinator.calls == 3
