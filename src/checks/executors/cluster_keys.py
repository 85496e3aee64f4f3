"""Keys for the grading cluster's mutual TLS: `python -m checks.executors.cluster_keys FOLDER
[--owner UID]` writes ca.pem, cert.pem and key.pem there, once (an existing key is kept).

Every member (scheduler, workers, the `checks` processes that send work) proves itself with
the same self-signed certificate, which is also the only CA the cluster trusts, as distributed's
`Security.temporary()` does in memory. The key is 0600 and owned by `--owner` (the uid the
scheduler and the servers run as; root workers read it anyway): a sandbox's uid cannot read it,
so student code graded at the fork level cannot join the cluster (posture.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def write_keys(folder: Path, owner: int | None = None) -> bool:
    """Write the cluster's CA, certificate and key under `folder`; False when a key is there already."""
    from distributed.security import Security

    folder.mkdir(parents=True, exist_ok=True)
    key = folder / "key.pem"
    if key.exists():
        return False
    made = Security.temporary()
    for name, text, mode in (("ca.pem", made.tls_ca_file, 0o644), ("cert.pem", made.tls_worker_cert, 0o644),
                             ("key.pem", made.tls_worker_key, 0o600)):
        path = folder / name
        temp = folder / f".{name}.tmp"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
        if owner is not None:
            os.chown(temp, owner, -1)
        os.chmod(temp, mode)
        os.replace(temp, path)
    return True


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m checks.executors.cluster_keys")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--owner", type=int, default=None, help="the uid that owns the key (default: this one)")
    options = parser.parse_args(argv)
    made = write_keys(options.folder, options.owner)
    print(f"{'wrote' if made else 'kept'} the cluster's TLS keys in {options.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
