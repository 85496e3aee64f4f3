"""Course policy: when an assignment opens and is due, what lateness costs, grace days,
extensions, regrade requests, and the roster they are all about (DESIGN.md, "The course server").

Every date decision is a pure function of the policy, a submission time and a clock (dates.py,
grace.py); what staff decide (extensions, grace requests, regrade answers) is kept in append-only
records in the course folder, each entry saying who, when and why (records.py). Bad policy input is
refused when the course is loaded (config.py), naming the file and the key, before anything
graded changes.

May import `checks.config` and `checks.course` only; grading (the batch) and the exports read a
course's policy through it, and the course server calls the same functions.
"""
