"""Code similarity across a class (`checks similarity`): fingerprints of each submission's Python
code that survive renaming, reformatting, comments and reordering (winnowing), every pair scored
with the starter code and the class's common idioms left out, and a ranked CSV and a page with the
matched regions side by side. Evidence for a person, never a verdict; it runs no student code.

May import every layer below it (sandbox, course, suites, reports, grading: submissions are found
and named as `checks grade` finds them); never executors, notebooks, exports, authoring or the CLI.
"""
