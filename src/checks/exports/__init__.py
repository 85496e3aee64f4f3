"""Exports of an assignment for the course tools that run graders elsewhere (Gradescope, nbgrader,
otter-grader): each writes what that tool takes, with the hidden suite and never the solutions or
the mutants. And one for students (`student`): the release with a wheel of checks and the light
runtime's set-up (`wheel`, `runtime`, `student_setup`), and nothing hidden at all.

May import every layer below it (sandbox, course, suites, reports, grading, notebooks); never authoring or
the CLI. `hidden` chooses the files every export ships; one module per tool builds on it; `kernel`
is what the notebook tools' grading cells call in the student's kernel.
"""
