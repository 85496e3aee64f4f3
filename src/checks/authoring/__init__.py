"""Tools for course authors: `checks build` (the student release from solutions/) and
`checks verify` (reference 100, stubs 0, each mutant loses its own question only).

May import every layer below it; only the top-level front ends (cli, progress) import it.
"""
