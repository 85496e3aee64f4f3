"""Late uploads on the course server (issue 34): the course policy decides, from the server's own
receipt time, what lateness costs; the page says how many grace days are left; in `request` mode a
late upload that would spend one is refused until it says whether to (the page's choice, `checks
submit --use-grace-day`), and the answer is recorded as the student's grace request. A real `checks
serve` on 127.0.0.1, real HTTP.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone

import pytest

from serving import (REFERENCE, REPO, checks, course_folder, folder_zip, import_roster, signed_in, start_server,
                     submit)

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")


def test_a_late_upload_asks_before_it_spends_a_grace_day_and_is_charged_by_the_policy(tmp_path):
    due = (datetime.now(timezone.utc) - timedelta(hours=1)).replace(microsecond=0)  # a day late, not two
    folder = course_folder(tmp_path, extra='roster = "roster.csv"\n[grace]\ndays = 2\nmode = "request"\n',
                           policy=f'due = "{due.isoformat()}"\n[policy.late]\nkind = "per_day"\npercent = 10\n')
    tokens = import_roster(folder)
    server = start_server(folder)
    try:
        page, _ = signed_in(server, "s001", tokens["s001"])
        home = page.get("/").text
        assert "Grace days left: <strong>2</strong>" in home and "An upload now is 1 day late" in home
        assert 'name="grace" value="use"' in home  # the page asks

        with server.client(tokens["s001"]) as http:
            asked = submit(http, folder_zip(REFERENCE))
            assert asked.status_code == 409 and "2 grace days left" in asked.json()["error"]
            assert http.get("/api/submissions").json() == []  # nothing stored, no try spent
            used = http.post("/api/assignments/01_tensors/submissions", data={"grace": "use"},
                             files={"files": ("01_tensors.zip", folder_zip(REFERENCE), "application/zip")})
            assert used.status_code == 202, used.text
            late = used.json()["late"]
            assert late["on_time"] and late["grace_days"] == 1 and late["penalty_percent"] == 0, late
        requests = [json.loads(line) for line in (folder / "records" / "grace-requests.jsonl").read_text().splitlines()]
        assert requests[-1]["student"] == "s001" and requests[-1]["days"] == 1 and requests[-1]["confirmed_with_left"] == 2
        assert "Grace days left: <strong>1</strong>" in page.get("/").text

        env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
        assert checks("login", server.url, input=tokens["s002"] + "\n", env=env).returncode == 0
        copy = tmp_path / "01_tensors"
        shutil.copytree(REPO / "assignments" / "01_tensors", copy)
        done = checks("submit", "--no-wait", cwd=copy, env=env)
        assert done.returncode == 1 and "--use-grace-day" in done.stdout and "2 grace days left" in done.stdout
        done = checks("submit", "--no-wait", "--no-grace-day", cwd=copy, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        with server.client(tokens["s002"]) as http:
            (row,) = http.get("/api/submissions").json()
        assert row["late"]["penalty_percent"] == 10 and row["late"]["grace_days"] == 0 and not row["late"]["on_time"]
        s002, _ = signed_in(server, "s002", tokens["s002"])
        assert "10.0 % of the score earned is taken" in s002.get(row["url"]).text
    finally:
        server.kill(15)
