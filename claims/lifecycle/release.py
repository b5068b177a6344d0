"""Releasing a request in the cluster: lift the portal's finalizer, delete the claim, end the
request. Idempotent: a claim already gone, or not the request's own, is left alone."""

from __future__ import annotations

import contextlib

from claims.capacity.index import index
from claims.lifecycle.apply import Retry
from claims.lifecycle.manifest import manifest
from claims.lifecycle.transitions import Move, transition
from claims.models import RESERVATION_FINALIZER, ClaimRequest
from kube.errors import Conflict, NotFound, Unavailable
from portal.cluster import connected

__all__ = ["release_request"]

State = ClaimRequest.State


def release_request(request_id: str) -> str:
    """Delete the request's claim (removing the portal's finalizer first) and end it."""
    request = ClaimRequest.objects.filter(pk=request_id).first()
    if request is None or request.state != State.RELEASING:
        return "nothing to do"
    kind, _ = manifest(request)
    try:
        with connected() as cluster:
            found = cluster.find(kind, request.name, request.namespace)
            labels = ((found or {}).get("metadata") or {}).get("labels") or {}
            if found is not None and request.made(labels):
                finalizers = found["metadata"].get("finalizers") or []
                if RESERVATION_FINALIZER in finalizers:
                    kept = [f for f in finalizers if f != RESERVATION_FINALIZER]
                    cluster.patch(
                        kind,
                        request.name,
                        [
                            {
                                "op": "test",
                                "path": "/metadata/resourceVersion",
                                "value": found["metadata"]["resourceVersion"],
                            },
                            {"op": "replace", "path": "/metadata/finalizers", "value": kept},
                        ],
                        namespace=request.namespace,
                        patch_type="json",
                    )
                with contextlib.suppress(NotFound):
                    cluster.delete(
                        kind, request.name, request.namespace, uid=found["metadata"]["uid"]
                    )
    except Conflict as error:
        raise Retry(str(error)) from error
    except Unavailable as error:
        raise Retry(str(error)) from error
    move = Move.END_LEASE if request.lease_ended else Move.END
    transition(request, move, reason=request.reason)
    index().forget(str(request.pk))
    return move.target
