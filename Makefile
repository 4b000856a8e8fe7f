# slacknet developer and user entry points. See README.md.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: demo install test test-rust test-python bench clean

## demo: install everything into $(VENV) and run the built-in default scenario (summary + plots)
demo: install
	$(VENV)/bin/slacknet run

## install: create $(VENV) and build/install slacknet (Rust extension included) with test extras
install: $(VENV)/bin/python
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[test]"

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

## test: the whole test suite, Rust and Python (what CI runs)
test: install test-rust test-python

test-rust:
	cargo test --workspace --exclude slacknet-py --quiet

test-python:
	$(PY) -m pytest -q tests

## bench: replay the peer-bench S2 flow list natively and print wall time, events/s,
## packet-hops/s and peak memory
bench:
	cargo build --release --quiet -p slacknet-sim
	./target/release/slacknet-sim experiments/peer_bench/s2.toml

clean:
	rm -rf $(VENV) target results
