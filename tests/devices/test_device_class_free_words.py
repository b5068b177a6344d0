"""The device class pages say what "Free" means, and where free partitions do not all fit
together they say so and point to the fragmentation advisor (issue 22, item 5)."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def summary(client, name: str) -> str:
    html = client.get(f"/device-classes/{name}/").content.decode()
    found = re.search(r'data-testid="matching-devices".*?</section>', html, re.S)
    assert found is not None
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found[0]))


def test_free_partitions_of_one_gpu_are_said_not_to_all_fit_together(
    client_as, bob, mirrored_cluster
):
    text = summary(client_as(bob), "mig.nvidia.com")
    assert "(150 free)" in text
    assert "each of those is free on its own, but not all fit at once" in text
    assert "Fragmentation page says how many of each profile fit together" in text


def test_whole_gpus_with_counters_of_their_own_are_not(client_as, bob, mirrored_cluster):
    # The A100s consume counters, but each GPU its own set: all free ones fit together.
    assert "not all fit at once" not in summary(client_as(bob), "gpu.nvidia.com")
    assert "not all fit at once" not in summary(client_as(bob), "gpu.example.com")


def test_the_list_says_free_is_the_state_every_page_counts(client_as, bob, mirrored_cluster):
    html = client_as(bob).get("/device-classes/").content.decode()
    note = html[html.index('data-testid="membership-note"') :].split("</p>")[0]
    assert '"Free" counts those no claim holds' not in note
    assert "a claim for exactly that device would get it now" in note
    assert 'href="/fragmentation/"' in note
