"""The job run states this package acts on are every state EMR Serverless has, each in one set."""

from __future__ import annotations

import botocore.session

from kinesis_batch.serverless.states import ACTIVE, CANCELLING, ENDED, RUNNING, SUCCESS, WAITING


def test_every_state_of_the_service_is_either_active_or_ended_never_both() -> None:
    model = botocore.session.get_session().get_service_model("emr-serverless")
    states = set(model.shape_for("JobRunState").enum)
    assert states == ACTIVE | ENDED, f"unknown to this package: {states - ACTIVE - ENDED}"
    assert set() == ACTIVE & ENDED
    assert {RUNNING, CANCELLING} <= ACTIVE and SUCCESS in ENDED and WAITING <= ACTIVE
    assert "QUEUED" in WAITING, "EMR 7.3.0's applications queue job runs"
