"""What a course is made of, read safely: the assignment (assignment.toml, where courses live)
and a student's submission (a folder or zip read into memory under caps).

May import `checks.sandbox` only; everything above reads a course through it.
"""
