"""The mirror's metrics: each watch batch's commit time, and events per kind, on ``/metrics``."""

from __future__ import annotations

import threading
import time

import pytest

from kube.kinds import Kind
from mirror.reflector import Reflector
from tests.prometheus import sample

BATCH = "dra_portal_mirror_batch_duration_seconds_count"
EVENTS = "dra_portal_mirror_events_total"


@pytest.mark.django_db
def test_each_watch_batch_is_timed_and_its_events_counted(client, cluster):
    reflector = Reflector(Kind.RESOURCE_SLICES, cluster, watch_seconds=1)
    reflector.relist()
    batches = sample(client, BATCH, kind="resourceslices")
    events = sample(client, EVENTS, kind="resourceslices")
    victim = cluster.list_page(Kind.RESOURCE_SLICES, limit=1)["items"][0]

    def change() -> None:
        time.sleep(0.3)
        victim["metadata"]["labels"] = {"edited": "yes"}
        cluster.replace(Kind.RESOURCE_SLICES, victim)
        cluster.delete(Kind.RESOURCE_SLICES, victim["metadata"]["name"])

    worker = threading.Thread(target=change)
    worker.start()
    reflector.run(seconds=2)
    worker.join()

    assert sample(client, EVENTS, kind="resourceslices") == events + 2
    assert sample(client, BATCH, kind="resourceslices") >= batches + 1
    assert sample(client, BATCH, kind="nodes") == 0
