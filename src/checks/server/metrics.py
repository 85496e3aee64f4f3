"""`GET /metrics` for Prometheus (prometheus-client): the queue's depth and oldest wait, grading
time and grader failures per assignment, read from the database at each scrape, so that every
server process of a course (PostgreSQL) answers the same numbers and a restart loses none.

Read by course staff only (a staff Bearer token, as Prometheus's `authorization` sends it): the
numbers name the course's assignments and how its grading goes, nothing a student needs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric, SummaryMetricFamily

from checks.server.storage import FAILED, GRADING, QUEUED, Storage

__all__ = ["CONTENT_TYPE", "CourseCollector", "exposition", "registry_for"]


class CourseCollector:
    """Every metric from one look at the database, when Prometheus scrapes."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def collect(self) -> Iterator[Metric]:
        queued, grading, oldest = self.storage.queue_state()
        depth = GaugeMetricFamily("checks_queue_depth", "Submissions waiting or being graded, by state",
                                  labels=["state"])
        depth.add_metric([QUEUED], queued)
        depth.add_metric([GRADING], grading)
        yield depth
        yield GaugeMetricFamily("checks_queue_oldest_wait_seconds", "How long the oldest queued submission has waited",
                                value=0.0 if oldest is None else max(0.0, time.time() - oldest))
        submitted = CounterMetricFamily("checks_submissions", "Submissions received, by assignment and status",
                                        labels=["assignment", "status"])
        failures = CounterMetricFamily("checks_grader_failures", "Submissions the grader itself failed on "
                                       "(never a student's score), by assignment", labels=["assignment"])
        timing = SummaryMetricFamily("checks_grading_seconds", "Time from a grader's claim to the recorded result, "
                                     "by assignment", labels=["assignment"])
        spent: dict[str, tuple[int, float]] = {}
        failed: dict[str, int] = {}
        for assignment, status, count, seconds, finished in self.storage.assignment_totals():
            submitted.add_metric([assignment, status], count)
            failed[assignment] = failed.get(assignment, 0) + (count if status == FAILED else 0)
            done, total = spent.get(assignment, (0, 0.0))
            spent[assignment] = (done + finished, total + seconds)
        for assignment, count in sorted(failed.items()):
            failures.add_metric([assignment], count)
        for assignment, (done, total) in sorted(spent.items()):
            timing.add_metric([assignment], count_value=done, sum_value=total)
        yield from (submitted, failures, timing)


def registry_for(storage: Storage) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CourseCollector(storage))  # type: ignore[arg-type]
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The text format Prometheus scrapes."""
    return generate_latest(registry)
