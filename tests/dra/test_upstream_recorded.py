"""Kubernetes' own allocator's answers, replayed without Go.

``upstream_answers.jsonl.gz`` holds seeded random cases (``scripts/upstream_differential.py
--seed 1203 --record``) with the answer upstream 1.34.9 or 1.36.3 gave in three runs out of
three (cases whose answer changed between runs, or that panicked, are left out). Each must get
the same status here and, for 1.36 when allocated, the same devices for the same requests in
the same order. docs/allocator.md says how the harness is built and what the live runs measure.
"""

import gzip
import json
from pathlib import Path

import pytest

from dra.allocator import run_case

RECORDED = Path(__file__).with_name("upstream_answers.jsonl.gz")


def _recorded():
    with gzip.open(RECORDED, "rt") as lines:
        return [json.loads(line) for line in lines]


ANSWERS = _recorded()


def test_the_recording_covers_both_versions_and_every_outcome():
    versions = {item["case"]["kubernetesVersion"] for item in ANSWERS}
    statuses = {item["status"] for item in ANSWERS}
    assert versions == {"1.34", "1.36"}
    assert statuses == {"allocated", "unsatisfiable", "error"}
    assert len(ANSWERS) >= 250


@pytest.mark.parametrize("recorded", ANSWERS, ids=[item["case"]["name"] for item in ANSWERS])
def test_the_answer_is_upstreams(recorded):
    output = run_case(recorded["case"])
    assert output["status"] == recorded["status"], output.get("error")
    # 1.34 visits pools in map order and keeps its slices in list order, where the project
    # keeps 1.36's name order: its devices may differ there (the live harness pins them).
    if recorded["status"] == "allocated" and recorded["case"]["kubernetesVersion"] != "1.34":
        devices = [
            [
                [item["request"], item["pool"], item["device"]]
                for item in allocation["devices"]["results"]
            ]
            for allocation in output["allocations"]
        ]
        assert devices == recorded["devices"]
