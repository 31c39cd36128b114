"""Replay protection: each webhook delivery (GitHub, Slack) is processed once.

A delivery id is claimed in the metadata database before the delivery is acted on, so
every replica of ``codeask serve`` sees the same claims.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from indexer.db import write_session
from indexer.jobs import WebhookDelivery, utcnow

# GitHub lets an admin redeliver a delivery of the last three days; keep claims longer.
DELIVERY_RETENTION = timedelta(days=7)


def claim_delivery(
    engine: Engine, delivery_id: str, event: str, keep: timedelta = DELIVERY_RETENTION
) -> bool:
    """Record a delivery id; False when it was seen before (GitHub redelivers on timeouts).

    Claims of the same ``event`` older than ``keep`` are dropped first, so the table holds
    at most ``keep``'s worth of deliveries of each kind (a repeat after that is new again).
    """
    try:
        with write_session(engine) as s:
            s.exec(
                delete(WebhookDelivery).where(
                    col(WebhookDelivery.event) == event,
                    col(WebhookDelivery.received_at) < utcnow() - keep,
                )
            )
            s.add(WebhookDelivery(delivery_id=delivery_id[:100], event=event))
            s.commit()
    except IntegrityError:
        return False
    return True


def forget_delivery(engine: Engine, delivery_id: str) -> None:
    """Undo ``claim_delivery`` after a failure, so GitHub's redelivery is processed."""
    with write_session(engine) as s:
        row = s.get(WebhookDelivery, delivery_id[:100])
        if row is not None:
            s.delete(row)
            s.commit()
