"""The course a Dask worker grades with, shipped from the driver's course folder.

Workers need no checkout of the course and no shared file system: the driver packs the
assignment's hidden suite, reference and release (a few hundred kB) into one bundle, named by
its content, that every worker unpacks once. Student submissions are never part of it.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

from checks.course.assignment import Assignment
from checks.course.submissions import SKIPPED_DIRS


@dataclass(frozen=True)
class CourseBundle:
    assignment: str
    digest: str  # "<assignment>-<sha256 of data>": a changed suite is another bundle
    data: bytes  # a tar of autograder/<name>, solutions/<name>, assignments/<name>
    device: str = "auto"  # the driver's --device, for the workers' pools
    public: bool = False  # grade with the assignment's public suite (the course server's public checks)

    def unpack(self, folder: Path) -> Path:
        """Write the bundle under `folder`, which then holds a course with this one assignment."""
        folder.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(self.data)) as archive:
            archive.extractall(folder, filter="data")
        return folder


def bundle_course(assignment: Assignment, device: str = "auto", public: bool = False) -> CourseBundle:
    """The assignment's hidden suite, reference and release, from the driver's course folder;
    `device`: where the workers' pools run device checks; `public`: whether they grade with the
    release's public suite instead of the hidden one."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for folder, arcname in ((assignment.autograder_dir, f"autograder/{assignment.name}"),
                                (assignment.solution_dir, f"solutions/{assignment.name}"),
                                (assignment.release_dir, f"assignments/{assignment.name}")):
            if folder.is_dir():
                archive.add(folder, arcname, filter=_reproducible)
    data = buffer.getvalue()
    return CourseBundle(assignment.name, f"{assignment.name}-{hashlib.sha256(data).hexdigest()[:16]}", data, device,
                        public)


def _reproducible(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Leave caches out, and times and owners, so the same course gives the same digest."""
    if any(part in SKIPPED_DIRS for part in Path(info.name).parts):
        return None
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info
