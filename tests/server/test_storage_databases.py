"""The course server's storage on both of its databases, SQLite and a real PostgreSQL: the schema
migrated from the first one, the queue's claims (each submission to exactly one grader, leases that
run out and are renewed, a late result refused), the rate-limit buckets shared by every process,
and the errors for a wrong URL or a database that cannot be reached.
"""

from __future__ import annotations

import itertools
import threading
import time

import pytest

pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

from alembic.autogenerate import compare_metadata  # noqa: E402
from alembic.runtime.migration import MigrationContext  # noqa: E402
from sqlalchemy import inspect, text  # noqa: E402

from checks.server import migrations  # noqa: E402
from checks.server.database import DatabaseError, connect  # noqa: E402
from checks.server.storage import DONE, GRADING, Storage, metadata  # noqa: E402

_names = itertools.count()


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path):
    """An empty database of each kind."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'checks.sqlite'}"
    cluster = request.getfixturevalue("postgres_cluster")
    return cluster.create(f"t{next(_names)}_{time.time_ns() % 10**6}")


def queue(storage: Storage, n: int) -> list[str]:
    return [storage.add_submission(f"s{i % 7:03}", "01_tensors", f"uploads/{i}.zip", "0" * 64, 10, ["strides.py"]).id
            for i in range(n)]


def test_the_schema_is_migrated_from_the_first_one_and_keeps_the_data(url):
    engine = connect(url)
    assert migrations.current(engine) is None
    migrations.upgrade(engine, migrations.FIRST)  # the schema the first release made
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO users (id, name, email, role, token_id, token_hash, created) "
                          "VALUES ('s001', 'Ada', 'ada@x', 'student', 'abc', 'hash', 1.0)"))
        conn.execute(text("INSERT INTO submissions (id, user_id, assignment, created, status, path, sha256, size, "
                          "files, attempts, result) VALUES ('sub1', 's001', '01_tensors', 2.0, 'done', 'u/1.zip', "
                          "'00', 3, '[]', 1, '{\"score\": 7}'), ('sub2', 's001', '01_tensors', 3.0, 'queued', "
                          "'u/2.zip', '00', 3, '[]', 0, NULL)"))
    assert not inspect(engine).has_table("gradings")
    storage = Storage(url)  # opening it upgrades it to head
    assert migrations.current(storage.engine) == migrations.head() != migrations.FIRST
    assert storage.user("s001").name == "Ada"
    assert storage.submission("sub1").result == {"score": 7}
    claimed = storage.claim("w", ["01_tensors"], 60)
    assert claimed.id == "sub2" and claimed.claim
    assert storage.complete("sub2", "w", result={"score": 1}, error=None, claim=claimed.claim)
    assert storage.gradings() == [("sub2", "w", DONE)]
    migrations.downgrade(storage.engine, migrations.FIRST)  # and back, the data still there
    assert not inspect(storage.engine).has_table("gradings")
    migrations.upgrade(storage.engine)
    assert storage.submission("sub2").result == {"score": 1}
    storage.close()
    engine.dispose()


def test_a_database_made_before_migrations_is_adopted(url):
    """The first release made its tables with create_all and no alembic_version: stamped as the
    first revision, then upgraded."""
    engine = connect(url)
    migrations.upgrade(engine, migrations.FIRST)
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE alembic_version"))
    assert migrations.current(engine) == migrations.FIRST
    storage = Storage(url)
    assert migrations.current(storage.engine) == migrations.head()
    storage.close()
    engine.dispose()


def test_the_tables_in_storage_are_what_the_migrations_make(url):
    storage = Storage(url)
    with storage.engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), metadata)
    assert differences == []
    storage.close()


def test_each_submission_goes_to_exactly_one_grader(url):
    """Graders in separate engines (as separate processes would be) claim at once: none is handed out twice."""
    storages = [Storage(url) for _ in range(4)]
    ids = queue(storages[0], 60)
    claimed: list[str] = []
    lock = threading.Lock()

    def grader(storage: Storage, name: str) -> None:
        while (row := storage.claim(name, ["01_tensors"], 60)) is not None:
            with lock:
                claimed.append(row.id)
            assert storage.complete(row.id, name, result={"by": name}, error=None, claim=row.claim)

    threads = [threading.Thread(target=grader, args=(storages[i % 4], f"g{i}")) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == sorted(ids)  # every one, once
    recorded = storages[0].gradings()
    assert sorted(r[0] for r in recorded) == sorted(ids)
    assert all(storages[0].submission(i).status == DONE for i in ids)
    for storage in storages:
        storage.close()


def test_a_lease_that_runs_out_is_taken_over_and_the_late_result_refused(url):
    storage = Storage(url)
    (submission,) = queue(storage, 1)
    first = storage.claim("a", ["01_tensors"], 0.3)
    assert storage.claim("b", ["01_tensors"], 60) is None  # held
    assert storage.renew(submission, first.claim, 0.3)  # the holder renews while it grades
    time.sleep(0.4)
    second = storage.claim("b", ["01_tensors"], 60)  # ran out: another grader takes it
    assert second is not None and second.id == submission and second.attempts == 2
    assert not storage.renew(submission, first.claim, 60)  # the first learns it lost it
    assert not storage.complete(submission, "a", result={"late": True}, error=None, claim=first.claim)
    assert storage.complete(submission, "b", result={"score": 1}, error=None, claim=second.claim)
    assert storage.submission(submission).result == {"score": 1}
    assert storage.gradings(submission) == [(submission, "b", DONE)]
    storage.close()


def test_the_same_grader_cannot_record_under_a_claim_it_lost(url):
    """A slot whose lease ran out and that claimed the same submission again holds a new claim: the old one's result is refused."""
    storage = Storage(url)
    (submission,) = queue(storage, 1)
    first = storage.claim("slot", ["01_tensors"], 0.05)
    time.sleep(0.1)
    second = storage.claim("slot", ["01_tensors"], 60)
    assert second.claim != first.claim and second.status == GRADING
    assert not storage.complete(submission, "slot", result={"late": True}, error=None, claim=first.claim)
    assert storage.complete(submission, "slot", result={"score": 1}, error=None, claim=second.claim)
    storage.close()


def test_submissions_waiting_for_their_public_checks_are_claimed_before_hidden_suites(url):
    """Under a burst a student first gets what they may see: a submission whose public checks ran
    goes back to the queue (not counted as a try) behind every one still waiting for its public
    checks, then is claimed in its turn; a grader with no public checks takes them in order."""
    storage = Storage(url)
    first, second, third = queue(storage, 3)
    claimed = storage.claim("slot", ["01_tensors"], 60, public=["01_tensors"])
    assert claimed.id == first and storage.public_waiting(["01_tensors"])
    assert storage.record_public(first, "slot", claimed.claim, result={"score": 1}, error=None)
    assert not storage.defer(first, "other", claimed.claim)  # only its holder gives it back
    assert storage.defer(first, "slot", claimed.claim)
    assert storage.claim("dask", ["01_tensors"], 60).id == first  # no public checks: the oldest
    assert storage.defer(first, "dask", None)
    assert [storage.claim(f"slot{i}", ["01_tensors"], 60, public=["01_tensors"]).id for i in range(2)] == [second, third]
    assert not storage.public_waiting(["01_tensors"])  # both are claimed now
    again = storage.claim("slot", ["01_tensors"], 60, public=["01_tensors"])
    assert again.id == first and again.attempts == 1 and again.public_result == {"score": 1}
    assert not storage.public_waiting(["another"])
    storage.close()


def test_every_process_draws_on_one_rate_bucket(url):
    storages = [Storage(url) for _ in range(3)]
    waits: list[float] = []
    lock = threading.Lock()

    def take(storage: Storage) -> None:
        wait = storage.take_token("s001:01_tensors", 5, 600)
        with lock:
            waits.append(wait)

    threads = [threading.Thread(target=take, args=(storages[i % 3],)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(1 for wait in waits if wait == 0) == 5
    for _ in range(3):
        storages[1].count_login_failure("account:s001")
    storages[2].count_login_failure("account:s001")
    assert storages[0].login_failures("account:s001")[0] == 4
    for storage in storages:
        storage.close()


@pytest.mark.parametrize("bad, said", [
    ("mysql://root:hunter2@127.0.0.1/course", "is for mysql"),
    ("not a url", "cannot be read"),
    ("sqlite://", "names no file"),
    ("postgresql://checks@127.0.0.1:5432", "names no database"),
])
def test_a_wrong_database_url_is_named(bad, said):
    with pytest.raises(DatabaseError, match=said) as refused:
        Storage(bad)
    assert "hunter2" not in str(refused.value)


def test_a_database_that_cannot_be_reached_says_so():
    pytest.importorskip("psycopg")
    from serving import free_port

    url = f"postgresql://checks:secret@127.0.0.1:{free_port()}/course"
    with pytest.raises(DatabaseError, match=r"cannot reach the database at postgresql\+psycopg://checks:\*\*\*@127"):
        Storage(url)


def test_checks_db_upgrade_and_current_on_a_course(tmp_path):
    from serving import checks, course_folder

    folder = course_folder(tmp_path)
    assert "revision none (empty); behind" in checks("db", "current", str(folder)).stdout
    assert "upgraded from empty to schema revision" in checks("db", "upgrade", str(folder)).stdout
    assert f"already at schema revision {migrations.head()}" in checks("db", "upgrade", str(folder)).stdout
    wrong = checks("db", "current", str(folder), "--database", "mysql://root:hunter2@127.0.0.1/course")
    assert wrong.returncode != 0 and "mysql://root:***@127.0.0.1/course is for mysql" in wrong.stdout + wrong.stderr
