# Two commands do all the set-up on a fresh machine with only Python and pip:
#   make train   -- create .venv if needed, train on configs/default.yaml, then evaluate
#   make test    -- create .venv if needed, run the test suite and the framework tests (nox)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# torch 2.13.0 is the release this project is developed on; any torch>=2.2 works.
TORCH_SPEC ?= torch==2.13.0

.PHONY: venv test test-fast test-frameworks train bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[test]"
	touch $@

# The C kernel (spades_env/_native/, built by setup.py into spades_env/_kernel.*.so) is built by
# `pip install -e .`; an edit of it is rebuilt here before the tests (a kernel built from other
# sources than the package's is refused, not run: spades_env/native.py).
$(VENV)/.kernel: $(VENV)/.installed setup.py $(wildcard spades_env/_native/*.c spades_env/_native/*.h)
	$(PY) -m pip install -q --no-deps -e .
	touch $@

venv: $(VENV)/.kernel

# Peer engines for the side-by-side benchmarks (OpenSpiel); not needed by the tests.
bench: $(VENV)/.kernel
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) benchmarks/bench_engine.py
	$(PY) benchmarks/bench_env.py
	$(PY) benchmarks/bench_vector.py --kernel-threads 1 2

# The main suite, then the framework sessions (noxfile.py: sb3, tianshou, rllib, core, and wheel
# and sdist, the built package tested in a fresh environment without a compiler; each in its own
# environment under .nox/, torch $(TORCH_SPEC) installed first) in two parallel lanes, rllib, core
# then wheel, and sb3, tianshou then sdist (tests_frameworks/run_lanes.py; one thread each).
test: $(VENV)/.kernel
	$(PY) -m pytest -q -n 2 tests
	TORCH_SPEC="$(TORCH_SPEC)" $(PY) tests_frameworks/run_lanes.py

# The edit-test loop: the main suite without the tests marked slow (CONTRIBUTING.md).
test-fast: $(VENV)/.kernel
	$(PY) -m pytest -q -n 2 -m "not slow" tests

# The framework sessions alone, one after another (one session: .venv/bin/nox -s sb3).
test-frameworks: $(VENV)/.kernel
	TORCH_SPEC="$(TORCH_SPEC)" $(VENV)/bin/nox

# Trains on configs/default.yaml, then evaluates that run's final checkpoint (whatever name the run
# took: a second `make train` trains into checkpoints/default-2/ and evaluates that) in the arena:
# 200 full games (100 duplicate pairs) against each bot.
train: $(VENV)/.kernel
	$(VENV)/bin/spades train --config configs/default.yaml --vs easy medium --games 200

clean:
	rm -rf $(VENV) runs .nox build dist wheelhouse spades_env/_kernel.*
