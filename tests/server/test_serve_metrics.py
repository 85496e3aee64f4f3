"""`GET /metrics` for Prometheus (issue 44): the queue's depth and oldest wait, grading time and
grader failures per assignment, for course staff only; read from the database, on SQLite and on
PostgreSQL, and parsed with prometheus-client's own parser as Prometheus would read it.
"""

from __future__ import annotations

import pytest

from serving import REFERENCE, add_staff, course_folder, folder_zip, import_roster, start_server, submit, wait_graded

pytest.importorskip("starlette")
parser = pytest.importorskip("prometheus_client.parser")


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.long)])
def served(request, tmp_path):
    extra = ""
    if request.param == "postgresql":
        extra = f'storage = "{request.getfixturevalue("postgres_cluster").create("metrics")}"\n'
    folder = course_folder(tmp_path, extra=extra)
    tokens = import_roster(folder)
    staff = add_staff(folder, "tina", "ta")
    server = start_server(folder)
    yield server, tokens, staff
    server.kill(15)


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in parser.text_string_to_metric_families(text) for sample in family.samples}


def test_metrics_tell_staff_the_queue_grading_time_and_failures(served):
    server, tokens, staff = served
    with server.client() as anyone:
        assert anyone.get("/metrics").status_code == 401
    with server.client(tokens["s001"]) as student:
        assert student.get("/metrics").status_code == 403
        graded = wait_graded(student, submit(student, folder_zip(REFERENCE)).json()["id"])
        assert graded["status"] == "done", graded
    with server.client(staff) as prometheus:
        reply = prometheus.get("/metrics")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/plain")
    samples = _samples(reply.text)
    assert samples[("checks_queue_depth", (("state", "queued"),))] == 0
    assert samples[("checks_queue_depth", (("state", "grading"),))] == 0
    assert samples[("checks_queue_oldest_wait_seconds", ())] == 0
    assert samples[("checks_submissions_total", (("assignment", "01_tensors"), ("status", "done")))] == 1
    assert samples[("checks_grader_failures_total", (("assignment", "01_tensors"),))] == 0
    assert samples[("checks_grading_seconds_count", (("assignment", "01_tensors"),))] == 1
    assert samples[("checks_grading_seconds_sum", (("assignment", "01_tensors"),))] > 0
