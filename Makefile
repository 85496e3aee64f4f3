# Two commands do everything from a fresh clone:  `make demo`  and  `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
# test processes (pytest-xdist): one a core; each test file runs whole in one of them
TEST_JOBS ?= auto
STAMP  := $(VENV)/.installed-$(shell cat constraints.txt pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: setup student demo test test-long test-all docs bench image image-check clean

setup: $(STAMP)

$(STAMP): constraints.txt pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[course,dev,notebooks,cluster,interop,serve,postgres,lms,lms-test]'
	rm -f $(VENV)/.installed-*
	touch $@

# A student's or self-learner's environment from this clone: `checks test`, `checks pack`, the
# client commands and the lesson notebooks' %checks (no staff extras: no server, Dask, nbgrader,
# otter or test tools), in .venv-student beside the staff .venv.
student:
	$(PYTHON) -m venv .venv-student
	.venv-student/bin/pip install --quiet --upgrade pip
	.venv-student/bin/pip install --quiet -c constraints.txt -e '.[student]'
	@echo "done: source .venv-student/bin/activate, then checks test 01_tensors"

# The main job: grade the bundled example submissions of 01_tensors (reference, stubs, students).
demo: $(STAMP)
	$(BIN)/checks grade 01_tensors examples/01_tensors --out grades/01_tensors --regrade

# The platform's tests (the slow ones are marked and left to `make test-all`), a file at a time
# on each core (TEST_JOBS=0: in this process, one after another).
test: $(STAMP)
	$(BIN)/checks build --check
	$(BIN)/mkdocs build --strict --quiet --site-dir "$$(mktemp -d)"
	$(BIN)/python -m pytest -q -m "not slow and not long" -n $(TEST_JOBS) --dist loadfile

# The long end-to-end cases: the real course tools graded beside checks on 01_tensors (nbgrader,
# otter, Gradescope's run_autograder), a Dask cluster, PostgreSQL, the browser tests: a few
# minutes; CI runs it after `make test`, `make test-all` includes it.
test-long: $(STAMP)
	$(BIN)/python -m pytest -q -m "long and not slow"

test-all: $(STAMP)
	$(BIN)/checks build --check
	$(BIN)/mkdocs build --strict --quiet --site-dir "$$(mktemp -d)"
	$(BIN)/python -m pytest -q

# The documentation site (docs/, mkdocs.yml) into site/; strict: a broken link fails the build.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python benchmarks/grade_throughput.py

# The CPU grading image (docker/cpu) on a machine with podman and no Docker daemon, such as CI's:
# installs podman, runc and mmdebstrap when missing (.ci/image.sh holds this machine's quirks).
image: $(STAMP)
	bash .ci/image.sh build cpu

# Build the image if needed, grade examples/01_tensors inside it (--network=none) and compare
# every score with the host's; fails when one differs.
image-check: $(STAMP)
	bash .ci/image.sh check

clean:
	rm -rf $(VENV) grades
