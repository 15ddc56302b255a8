"""What a projector tells its consumer group about itself: its query URL, in ``client.id``.

The group coordinator already knows every member's static id (``group.instance.id``
= ``ONCELOG_PROJECTOR_ID``) and its assignment; carrying the query URL in the
consumer's ``client.id`` puts all three in one authoritative answer
(``describe_consumer_groups``), with no topic of its own to create, check or
compact, and no record that outlives its member.
"""

from __future__ import annotations

from typing import Final

from oncelog.settings import Settings

CLIENT_ID: Final = "oncelog-projector"
"""The ``client.id`` of a projector without a query API (``serve --no-http``)."""

_URL_MARK: Final = "@"


def member_client_id(settings: Settings) -> str:
    """``oncelog-projector@<advertised URL>``, or ``oncelog-projector`` without one."""
    url = settings.http_advertised_url
    return CLIENT_ID if url is None else f"{CLIENT_ID}{_URL_MARK}{url}"


def advertised_url(client_id: str) -> str | None:
    """The query URL in a member's ``client.id`` (None: no API, or not a projector)."""
    head, mark, url = client_id.partition(_URL_MARK)
    if head != CLIENT_ID or not mark or not url.startswith(("http://", "https://")):
        return None
    return url
