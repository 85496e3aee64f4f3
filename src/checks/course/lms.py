"""The names an LMS gives the files of a bulk download ("download all submissions"): whose each
file is, and the name the student gave it.

Canvas puts every student's files in one flat folder (or zip), each named
`<name>[_late]_<user id>_<attachment id>_<the file's own name>`, where <name> is the student's
sortable name with everything but letters and digits removed, lower case (`smithjane`), and the
whole prefix is lower case (`_late`; `_LATE` is read too). Anonymous grading leaves the name out.
A file uploaded again under the same name gets `-1` (`-2`, ...) before its extension. An online
text entry is `<name>_<user id>_text.html`.

Moodle makes a folder per student and submission plugin, `<Full Name>_<participant id>_
assignsubmission_<plugin>_/` (`file` for uploads, `onlinetext` for the online text), or, when
"download submissions in folders" is off, puts each file in one folder as
`<Full Name>_<participant id>_assignsubmission_file_<file name>`. The participant id is the one
Moodle's grading worksheet lists as "Participant <id>"; under blind marking the name is
"Participant".

This module only reads names (any name is data: it is parsed, never trusted to be well formed);
grading/batch.py decides which paths are such downloads, course/submissions.py reads them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

CANVAS, MOODLE = "Canvas", "Moodle"
MOODLE_FILES = "file"  # the plugin of uploaded files; any other (onlinetext, ...) is not graded

# an upload: both ids; an online text entry or URL: the user's id only, and a name of Canvas's own
_CANVAS_FILE = r"(?P<id>\d+)(?:_\d+_(?P<file>.+)|_(?P<entry>text\.html|link\.html))"
_CANVAS = re.compile(r"(?P<student>\w*?)(?P<late>_(?i:late))?_" + _CANVAS_FILE, re.S)
_CANVAS_ANONYMOUS = re.compile(r"(?:(?P<late>(?i:late))_)?" + _CANVAS_FILE, re.S)  # no name: anonymous grading
_MOODLE = re.compile(r"(?P<student>.+?)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)", re.S)
_COPY = re.compile(r"(?P<stem>.+?)-(?P<copy>[1-9]\d{0,3})(?P<suffix>\.[^./]*)?", re.S)  # strides-1.py


@dataclass(frozen=True)
class LmsName:
    """What an LMS's name for a file or folder says."""

    lms: str  # CANVAS or MOODLE
    student: str  # the name the LMS gives the student ("" when it gives none)
    student_id: str  # the LMS's id for the student
    file: str  # the name the student gave the file ("" for a Moodle folder)
    plugin: str = ""  # Moodle's submission plugin (file, onlinetext)
    late: bool = False  # Canvas marked it late

    @property
    def key(self) -> tuple[str, str, str]:
        """What the files of one student share."""
        return self.lms, self.student_id, self.student


def canvas_name(name: str) -> LmsName | None:
    """A Canvas bulk download's name for a file, parsed; None when it is not one."""
    if "/" in name:
        return None
    match = _CANVAS_ANONYMOUS.fullmatch(name) or _CANVAS.fullmatch(name)
    if match is None:
        return None
    student = match.groupdict().get("student") or ""
    return LmsName(CANVAS, student, match["id"], match["file"] or match["entry"], late=bool(match["late"]))


def moodle_name(name: str) -> LmsName | None:
    """Moodle's name for a student's folder (file == "") or, in a flat download, one file; None otherwise."""
    match = _MOODLE.fullmatch(name)
    if match is None or "/" in name:
        return None
    return LmsName(MOODLE, match["student"], match["id"], match["file"], plugin=match["plugin"])


def lms_name(name: str, *, folder: bool) -> LmsName | None:
    """A folder's name as Moodle's, or a file's as Canvas's or Moodle's (flat), parsed; None otherwise."""
    if folder:
        parsed = moodle_name(name)
        return parsed if parsed is not None and not parsed.file else None
    parsed = moodle_name(name)
    if parsed is not None and parsed.file:
        return parsed
    return canvas_name(name)


@dataclass(frozen=True)
class Student:
    """One student's files in a bulk download."""

    name: LmsName  # of the student's first file or folder (lms, student, student_id)
    files: tuple[tuple[str, str], ...]  # (its entry in the download, the name the student gave it), sorted
    late: bool = False
    notes: tuple[str, ...] = ()  # what the student should know about how the files were read

    @property
    def student_id(self) -> str:
        return self.name.student_id

    def own_zip(self) -> tuple[tuple[str, str], tuple[str, ...]] | None:
        """Where the student submitted one zip and no file a submission is graded on (.py, .ipynb,
        .toml): the zip's (entry, name), and the notes for the student, naming what else was there."""
        zips = [item for item in self.files if item[1].lower().endswith(".zip")]
        if len(zips) != 1 or any(name.lower().endswith((".py", ".ipynb", ".toml")) for _, name in self.files):
            return None
        others = [item[1] for item in self.files if item != zips[0]]
        note = f"{zips[0][1]} was graded; {', '.join(others)}, beside it, {'was' if len(others) == 1 else 'were'} not read"
        return zips[0], self.notes + ((note,) if others else ())


def split_download(entries: list[str]) -> list[Student] | None:
    """A bulk download's entries (relative paths, `/` between folders; caches and junk already left
    out) by student, or None unless every entry is named as one LMS names them: a flat folder of
    Canvas files, of Moodle files, or Moodle's folders with the files inside."""
    if not entries:
        return None
    parsed: list[tuple[str, LmsName]] = []
    for entry in entries:
        top, _, below = entry.partition("/")
        name = lms_name(top, folder=bool(below))
        if name is None:
            return None
        parsed.append((entry, name if not below else LmsName(name.lms, name.student, name.student_id, below,
                                                              plugin=name.plugin)))
    if len({name.lms for _, name in parsed}) != 1:
        return None
    by_student: dict[tuple[str, str, str], list[tuple[str, LmsName]]] = defaultdict(list)
    for entry, name in parsed:
        by_student[name.key].append((entry, name))
    return [_student(files) for _, files in sorted(by_student.items())]


def _student(files: list[tuple[str, LmsName]]) -> Student:
    first = files[0][1]
    notes = []
    if first.lms == MOODLE:
        plugins = sorted({name.plugin for _, name in files})
        if MOODLE_FILES in plugins and len(plugins) > 1:
            notes.append(moodle_note([plugin for plugin in plugins if plugin != MOODLE_FILES]))
            files = [(entry, name) for entry, name in files if name.plugin == MOODLE_FILES]
        chosen = {entry: name.file for entry, name in files}
    else:
        chosen, notes = _canvas_copies(files)
    return Student(first, tuple(sorted(chosen.items())), late=any(name.late for _, name in files),
                   notes=tuple(notes))


def moodle_note(plugins: list[str]) -> str:
    """What a student is told of what they submitted through Moodle's other plugins (not graded)."""
    named = [{"onlinetext": "online text"}.get(plugin, plugin) for plugin in plugins]
    return f"only the files you uploaded are graded: your {' and '.join(named)} was not read"


def _canvas_copies(files: list[tuple[str, LmsName]]) -> tuple[dict[str, str], list[str]]:
    """Each Canvas file under the name the student gave it: `strides-1.py` (Canvas's name for a
    file uploaded again) is `strides.py`; of two that would share a name, the later upload."""
    candidates: dict[str, list[tuple[int, str, str]]] = defaultdict(list)  # own name -> (copy, entry, as named)
    for entry, name in files:
        match = _COPY.fullmatch(name.file)
        own, copy = ((match["stem"] + (match["suffix"] or ""), int(match["copy"])) if match else (name.file, 0))
        candidates[own].append((copy, entry, name.file))
    chosen, notes = {}, []
    for own, versions in sorted(candidates.items()):
        versions.sort()
        copy, entry, named = versions[-1]
        chosen[entry] = own
        if len(versions) > 1:
            notes.append(f"Canvas holds {own} more than once ({', '.join(v[2] for v in versions)}): the last "
                         f"uploaded, {named}, was graded as {own}")
    return chosen, notes
