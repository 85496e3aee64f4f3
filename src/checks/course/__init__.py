"""What a course is made of, read safely: the assignment (assignment.toml, where courses live),
a reference file's solution regions, and a student's submission (a folder, zip or notebook read
into memory under caps).

May import `checks.sandbox` only; everything above reads a course through it.
"""
