"""The course server (`checks serve`): students submit over HTTP and read their feedback; staff
watch the class. The web process never runs student code: uploads are stored, queued in the
database and graded by warm pools in processes of their own (executors/serve.py), or on Dask.

One module per job: `config` (course.toml), `storage` (the database behind one interface),
`roster` (students, staff, tokens), `auth` (hashing, sessions, CSRF, login backoff),
`limits` (rate limits), `uploads` (receiving a submission safely), `queue` (the graders),
`metrics` (/metrics for Prometheus), `confinement` (whether serve may grade here),
`pages` (what every route shares: who is asking, rendering, a submission as its reader sees
it), `app`, `policy_routes` and `lti_routes` (the routes, which import `pages` and never each
other's helpers), `client` (the student's side: login, submit, fetch).

May import every layer below it; the top layer. Needs the optional `serve` extra (starlette,
uvicorn, python-multipart, itsdangerous, argon2-cffi, SQLAlchemy, prometheus-client) except `client`, which needs
only httpx, so that it works from the light student install.
"""
