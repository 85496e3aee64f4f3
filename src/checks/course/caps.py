"""How much of one submission the grader looks at: every cap, in one place.

A submission is untrusted input of any size and shape (DESIGN.md, "The trust boundary"): each cap
bounds what it can cost (time, memory, reads), and is checked before anything is unpacked or
read in full, so that it costs only that submission. Over a cap, a file is skipped with a warning
(it costs the questions that use it), or the submission is refused (scored 0, with the reason in
its feedback): never the batch. course/submissions.py applies them; the batch's fingerprint of a
submission (grading/batch.py) reads no more than they allow either.
"""

from __future__ import annotations

MIB = 2**20

# what is read into memory: a named file over MAX_FILE_BYTES costs the questions that use it; extra
# modules past the totals are skipped
MAX_FILES = 200  # named files included
MAX_TOTAL_BYTES = 20 * MIB
MAX_FILE_BYTES = 5 * MIB
MAX_NOTEBOOK_BYTES = MAX_TOTAL_BYTES  # one notebook: it carries its outputs (plots), so more than a file
MAX_NOTEBOOKS_BYTES = 2 * MAX_NOTEBOOK_BYTES  # every notebook looked into, together
MAX_NOTEBOOK_CELLS = 5_000  # counted before nbformat validates them (seconds per thousands of cells)

# the shape of a folder or zip, checked while it is listed (a zip: from its directory, before any
# member is inflated); over either, the submission is refused
MAX_ENTRIES = 10_000  # files and folders listed (caches and environments, never entered, do not count)
MAX_DEPTH = 32  # folders nested in one another

# a file whose name is longer than a file system takes is skipped with a warning: the sandbox
# could not write it
MAX_NAME_BYTES = 255  # one file or folder name (NAME_MAX)
MAX_PATH_BYTES = 1024  # the path inside the submission

# a zip bomb is refused from its directory: more than MAX_UNPACKED_BYTES in all, or more than
# MAX_RATIO_BYTES at a compression ratio above MAX_RATIO (text compresses about 5:1, zeros 1000:1:
# a student's 30 MB file of zeros, never read, is junk to skip rather than a bomb)
MAX_UNPACKED_BYTES = 1024 * MIB
MAX_RATIO_BYTES = 256 * MIB
MAX_RATIO = 100
MAX_ZIP_DIRECTORY_BYTES = 8 * MIB  # what opening a zip reads and parses: about 50,000 entries

# an LMS's bulk download (course/lms.py) holds a whole class: it may list more entries than one
# submission, and each student's files in it are held to the caps above, alone; a zip a student
# uploaded, inside a bulk download zip, is read into memory up to this size
MAX_BULK_ENTRIES = 50_000
MAX_NESTED_ZIP_BYTES = 64 * MIB

# the batch's fingerprint of a submission (has it changed since it was graded?) hashes the content
# of this much, and the names and sizes of the rest
MAX_FINGERPRINT_BYTES = 64 * MIB
