# slacknet developer and user entry points. See README.md.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# A UEC htsim checkout (github.com/ultraethernet/uet-htsim) for bench-peers' second peer; unset: skipped.
HTSIM_DIR ?=
HTSIM_FLAG := $(if $(HTSIM_DIR),--htsim $(HTSIM_DIR))
# A built ns-3.44 source tree to run as the ns-3 peer instead of the PyPI wheel (which has
# logging and asserts compiled in; bench/peers/ns3/README.md); unset: the wheel.
NS3_DIR ?=
NS3_FLAG := $(if $(NS3_DIR),--ns3-dir $(NS3_DIR))
# PGO=1: the benchmarks below that time the simulator (bench, bench-scale, bench-scale-table,
# bench-peers, bench-peers-seeds, bench-targets) build and time the profile-guided builds (see `pgo`).
PGO ?=
ifeq ($(PGO),1)
SIM        := ./target/pgo/slacknet-sim
BUILD_SIM  := $(PYTHON) bench/pgo.py binary
BUILD_EXT  := $(PY) bench/pgo.py extension
else
SIM        := ./target/release/slacknet-sim
BUILD_SIM  := cargo build --release --quiet -p slacknet-sim
BUILD_EXT  := @true
endif

.PHONY: demo install install-pgo pgo test test-rust test-python test-torch test-ray fuzz-smoke fuzz bench bench-ab bench-peers bench-peers-seeds bench-credence bench-scale bench-scale-table bench-sweep bench-targets bench-coflow bench-coflow-peer bench-udp bench-udp-lossy bench-approx bench-collective bench-sim-vs-testbed profile clean

## demo: install everything into $(VENV) and run the built-in default scenario (summary + plots)
demo: install
	$(VENV)/bin/slacknet run

## install: create $(VENV) and build/install slacknet (Rust extension included) with the test and ml extras
install: $(VENV)/bin/python
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e ".[test,ml]"

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

## pgo: a profile-guided build of slacknet-sim in target/pgo/slacknet-sim: built instrumented,
## trained on experiments/pgo/ and the papers' reduced scenarios (none that a benchmark times),
## built again with the profile; 7-11% less CPU, same results (`make bench-ab
## BUILD_A=target/release/slacknet-sim BUILD_B=target/pgo/slacknet-sim`). About 2 minutes;
## needs `rustup component add llvm-tools`. A build is kept with a digest of its inputs (sources,
## toolchain, RUSTFLAGS): on the same inputs it is reused (`bench/pgo.py binary --rebuild`).
pgo:
	$(PYTHON) bench/pgo.py binary

## install-pgo: as install, then the Python extension rebuilt profile-guided the same way
## (trained through the Python API), or copied back from target/pgo/ if built from the same
## inputs before; `make install` puts the plain build back.
install-pgo: install
	$(PY) bench/pgo.py extension

## test: the whole test suite, Rust and Python, and the fuzz smoke run (what CI runs)
test: install test-rust test-python fuzz-smoke

## test-rust: lints denied (clippy, missing docs), proto built and tested on its own (it must
## not need sim or udp), then every crate's tests
test-rust:
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	cargo test -p slacknet-proto --quiet
	cargo test --workspace --exclude slacknet-py --quiet

## test-python: the Python tests on PYTEST_WORKERS cores (pytest-xdist; each file's tests on one
## worker, so that a module's fixtures are made once), then those marked realtime (real packets
## through real sockets, timed) one at a time, with no other test competing for the cores
PYTEST_WORKERS ?= auto
test-python:
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile -m "not realtime" tests
	$(PY) -m pytest -q -m realtime tests

## test-torch: install PyTorch (the torch extra; PyPI's Linux wheel brings its CUDA libraries,
## about 5 GB, a minute or two) into $(VENV) and run slacknet.torch's tests, which `make test`
## skips while PyTorch is not installed (and runs, with the rest, once it is)
test-torch: install
	$(PIP) install --quiet -e ".[test,ml,torch]"
	$(PY) -m pytest -q tests/test_torch.py

## test-ray: install Ray (the ray extra, about 300 MB) into $(VENV) and run the sweep-on-a-cluster
## tests, whose Ray case `make test` skips while Ray is not installed (the Dask cases always run)
test-ray: install
	$(PIP) install --quiet -e ".[test,ml,ray]"
	$(PY) -m pytest -q tests/test_sweep_cluster.py

## fuzz-smoke: every libFuzzer target (fuzz/) for FUZZ_SMOKE_SECS seconds each, FUZZ_SMOKE_JOBS
## at a time (one per core), when nightly and cargo-fuzz are installed; otherwise it says so and
## passes. Either way `test-rust` replays the committed corpus and seeded mutations of it on
## stable (crates/fuzz-targets/tests/corpus.rs). New inputs go to fuzz/target/corpus/, never into
## the committed corpus; a crash fails the run (after the other targets' smokes) and leaves its
## input in fuzz/artifacts/<target>/.
FUZZ_SMOKE_SECS ?= 8
FUZZ_SMOKE_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
fuzz-smoke:
	@if [ "$(FUZZ_SMOKE_SECS)" = 0 ]; then echo "fuzz-smoke: skipped (FUZZ_SMOKE_SECS=0)"; \
	elif ! cargo +nightly fuzz --version >/dev/null 2>&1; then \
	  echo "fuzz-smoke: skipped: needs the nightly toolchain and cargo-fuzz (cargo install cargo-fuzz);" \
	    "the corpus replay in test-rust ran every target"; \
	else \
	  cd fuzz && nice cargo +nightly fuzz build && cargo +nightly fuzz list | xargs -n 1 -P $(FUZZ_SMOKE_JOBS) sh -c '\
	    t=$$0; mkdir -p target/corpus/$$t && case $$t in scenario_*) dict=-dict=scenario.dict;; *) dict=;; esac && \
	    if nice cargo +nightly fuzz run $$t target/corpus/$$t corpus/$$t -- -max_total_time=$(FUZZ_SMOKE_SECS) \
	        -timeout=30 $$dict > target/smoke-$$t.log 2>&1; then \
	      echo "fuzz-smoke: $$t: $$(grep -o "Done [0-9]* runs in [0-9]* second(s)" target/smoke-$$t.log)"; \
	    else tail -n 40 target/smoke-$$t.log; echo "fuzz-smoke: $$t FAILED (log: fuzz/target/smoke-$$t.log)"; exit 1; fi' \
	  || { echo "fuzz-smoke: FAILED (the lines above name the target)"; exit 1; }; \
	fi

## fuzz: one target for a long run, e.g. `make fuzz FUZZ_TARGET=scenario_toml FUZZ_SECS=3600`
## (new inputs in fuzz/target/corpus/<target>/; see README.md, "Fuzzing")
FUZZ_TARGET ?= scenario_toml
FUZZ_SECS ?= 600
fuzz:
	mkdir -p fuzz/target/corpus/$(FUZZ_TARGET)
	cd fuzz && nice cargo +nightly fuzz run $(FUZZ_TARGET) target/corpus/$(FUZZ_TARGET) corpus/$(FUZZ_TARGET) -- \
	  -max_total_time=$(FUZZ_SECS) -timeout=30 $(if $(filter scenario_%,$(FUZZ_TARGET)),-dict=scenario.dict)


## bench: native runs of the peer-bench S2 flow list, the 256-host comparison scenario and a
## long Poisson run (1.7 M flows, for memory per flow), and NetApprox at the paper's scale (k = 12
## fat-tree, FBHD over ATP): wall time, events/s, packet-hops/s and
## peak memory
bench:
	$(BUILD_SIM)
	$(SIM) experiments/peer_bench/s2.toml
	$(SIM) experiments/compare/ls256.toml
	$(SIM) experiments/bench/long_poisson.toml
	$(SIM) experiments/bench/netapprox_fbhd_k12.toml

## bench-peers: slacknet vs ns-3.44, and vs UEC htsim with HTSIM_DIR=<uet-htsim checkout>, on the
## same flows for the three comparison scenarios: per-class slowdowns, drops, wall time and the
## ns-3/slacknet and htsim/slacknet ratios from one run, then S1 and S2 again over ECMP hash
## seeds 1-3 in every simulator (installs ns-3 privately and builds htsim_uec once per commit,
## both under ~/.cache/slacknet; about 12 minutes in all). Without HTSIM_DIR, htsim is skipped.
## NS3_DIR=<built ns-3.44 tree> runs that as ns-3 instead of the PyPI wheel (bench/peers/ns3/README.md).
bench-peers: install
	$(BUILD_EXT)
	$(PY) bench/peers/ns3/ns3peer.py ensure $(NS3_FLAG)
	$(if $(HTSIM_DIR),$(PY) bench/peers/htsim/htsimpeer.py ensure --htsim $(HTSIM_DIR))
	$(VENV)/bin/slacknet compare experiments/compare/s1.toml $(HTSIM_FLAG) $(NS3_FLAG)
	$(VENV)/bin/slacknet compare experiments/compare/s2.toml $(HTSIM_FLAG) $(NS3_FLAG)
	$(VENV)/bin/slacknet compare experiments/compare/ls256.toml $(HTSIM_FLAG) $(NS3_FLAG)
	$(VENV)/bin/slacknet compare experiments/compare/s1.toml --hash-seeds 3 $(HTSIM_FLAG) $(NS3_FLAG)
	$(VENV)/bin/slacknet compare experiments/compare/s2.toml --hash-seeds 3 $(HTSIM_FLAG) $(NS3_FLAG)

## bench-peers-seeds: the 256-host comparison over ECMP hash seeds 1-3 in every simulator
## (htsim with HTSIM_DIR; three ns-3 runs of about 2 minutes each: kept out of bench-peers)
bench-peers-seeds: install
	$(BUILD_EXT)
	$(PY) bench/peers/ns3/ns3peer.py ensure $(NS3_FLAG)
	$(if $(HTSIM_DIR),$(PY) bench/peers/htsim/htsimpeer.py ensure --htsim $(HTSIM_DIR))
	$(VENV)/bin/slacknet compare experiments/compare/ls256.toml --hash-seeds 3 $(HTSIM_FLAG) $(NS3_FLAG)

## bench-credence: Credence's cost over DT on the 256-host evaluation scenario: the median
## wall-time ratio over 5 alternating runs each, and, if valgrind is installed, the callgrind
## instruction ratio on a 20 ms version of the scenario (a few minutes)
bench-credence: install
	cargo build --release --quiet -p slacknet-sim
	$(PY) bench/credence_overhead.py 5

## bench-scale: a 1024-host k=16 fat-tree at 100 Gb/s, web search at load 0.5, 10 ms
## (several minutes)
bench-scale:
	$(BUILD_SIM)
	$(SIM) experiments/scale/fat_tree_k16.toml

## bench-targets: issue 15's targets next to what this machine measures now, and whether each
## holds: the 256-host comparison at least 5x faster than UEC htsim (with HTSIM_DIR; else that
## line says skipped) and 150x faster than ns-3.44, measured in the same `slacknet compare
## --repeat` (each simulator TARGETS_RUNS times, alternated), and the k = 16 fat-tree under 60 s
## of CPU and 150 MB; the median of TARGETS_RUNS runs (default 3) decides (bench/targets.py).
## ns-3 takes about 60 s per ls256 run and k = 16 about 60 s per run: about 7 minutes in all
## (9-10 with PGO=1, which first builds the profile-guided binary and extension; 7 when both
## were built from the same sources before and are reused).
## TARGETS_ONLY=k16 (no ns-3 needed) or TARGETS_ONLY=ls256 runs one part; NS3_DIR as bench-peers.
TARGETS_RUNS ?= 3
TARGETS_ONLY ?=
# Checked when the makefile is read, before install, the builds and the ns-3 install (minutes)
# run only to be refused by bench/targets.py at the end.
ifneq ($(filter bench-targets,$(MAKECMDGOALS)),)
ifneq ($(filter-out k16 ls256,$(TARGETS_ONLY))$(word 2,$(TARGETS_ONLY)),)
$(error bench-targets: TARGETS_ONLY=$(TARGETS_ONLY): give k16 or ls256 (one part), or leave it unset for both)
endif
ifneq ($(if $(strip $(TARGETS_RUNS)),$(shell printf '%s\n' '$(TARGETS_RUNS)' | grep -xE '0*[1-9][0-9]*'),-),$(strip $(TARGETS_RUNS)))
$(error bench-targets: TARGETS_RUNS=$(TARGETS_RUNS): give a whole number of runs, at least 1 (default 3: the median of three))
endif
endif
bench-targets: install
	$(if $(filter ls256,$(TARGETS_ONLY)),,$(BUILD_SIM))
	$(if $(filter k16,$(TARGETS_ONLY)),,$(BUILD_EXT))
	$(if $(filter k16,$(TARGETS_ONLY)),,$(PY) bench/peers/ns3/ns3peer.py ensure $(NS3_FLAG))
	$(if $(filter k16,$(TARGETS_ONLY)),,$(if $(HTSIM_DIR),$(PY) bench/peers/htsim/htsimpeer.py ensure --htsim $(HTSIM_DIR)))
	$(PY) bench/targets.py --binary $(SIM) --runs $(TARGETS_RUNS) $(HTSIM_FLAG) $(NS3_FLAG) $(if $(TARGETS_ONLY),--only $(TARGETS_ONLY))

## bench-ab: two builds of slacknet-sim timed against each other, alternately (A, B, A, B, ...)
## so that both see the machine's same load: CPU seconds per run, min and median of each, in how
## many pairs B was faster, and whether their printouts less timings agree (exit 1 if not).
## make bench-ab BUILD_A=/tmp/sim-before [BUILD_B=target/release/slacknet-sim] [AB_SCENARIOS=...] [AB_RUNS=7]
BUILD_A ?=
BUILD_B ?= target/release/slacknet-sim
AB_SCENARIOS ?= experiments/compare/ls256.toml
AB_RUNS ?= 7
bench-ab:
	cargo build --release --quiet -p slacknet-sim
	$(PY) bench/ab.py --runs "$(AB_RUNS)" $(if $(BUILD_A),$(BUILD_A),BUILD_A-not-set) $(BUILD_B) $(AB_SCENARIOS)

## bench-scale-table: cost against size: fat-trees of 16 to 1,024 hosts at 100 Gbit/s for 1 and
## 2 ms of simulated time, wall and CPU seconds, peak memory, events/s, packet-hops/s and CPU ns
## per packet-hop, to predict a run's cost (about 3 minutes; BENCH_SCALE_ARGS="--k 4 8 --ms 5")
BENCH_SCALE_ARGS ?=
bench-scale-table:
	$(BUILD_SIM)
	$(PY) bench/scale_table.py --binary $(SIM) $(BENCH_SCALE_ARGS)

## bench-sweep: runs per hour of a sweep by one local worker, by one per core and on a Dask
## cluster of one worker per core on this machine (each run's results sent back), with the
## speed-up, the cluster's cost per run, and a check that the three tables agree (about 40 s;
## BENCH_SWEEP_ARGS="--runs 16 --ms 80", "--no-dask")
BENCH_SWEEP_ARGS ?=
bench-sweep: install
	$(PY) bench/sweep_scaling.py $(BENCH_SWEEP_ARGS)

## bench-coflow-peer: our coflow schedulers (idealised and coflowsim-compatible) against the
## reference simulator coflowsim (Java) in the same run, CPU time and ratio per scheduler, and
## whether the compatible mode's CCTs equal coflowsim's output of that run. Needs javac and a
## coflowsim checkout: make bench-coflow-peer COFLOWSIM=path [COFLOWSIM_ALGOS="PFP SEBF"]
## (coflowsim takes half a minute to ten minutes per scheduler)
COFLOWSIM ?=
COFLOWSIM_ALGOS ?=
bench-coflow-peer: install
	@if [ -z "$(COFLOWSIM)" ]; then echo "bench-coflow-peer: set COFLOWSIM to a coflowsim checkout (github.com/coflow/coflowsim)"; exit 2; fi
	$(PY) bench/coflow_peer.py $(COFLOWSIM) $(COFLOWSIM_ALGOS)

## bench-udp: the real transport's loopback goodput and CPU time per GB (bounded-loss reliable
## and at p = 0.9, an ATP job) next to kernel TCP measured in the same run, against the 11
## Gbit/s target (BENCH_UDP_MB per run, median of 3; about a minute)
BENCH_UDP_MB ?= 512
bench-udp:
	cargo run --release --quiet -p slacknet-udp --example udp_bench -- $(BENCH_UDP_MB) 3

## bench-udp-lossy: completion time of a bounded-loss transfer against kernel TCP through a
## congested 200 Mbit/s port of the namespace testbed, each with the same window law (CUBIC,
## Reno) and against the host's default, each also with its last 20 packets dropped (TCP's by
## an nft rule: needs nftables, else that case is skipped with the reason; root only; about
## two minutes; add BENCH_UDP_LOSSY_ARGS=--one-segment-per-packet for no GSO super-packets)
BENCH_UDP_LOSSY_ARGS ?=
bench-udp-lossy: install
	$(PY) bench/udp_lossy.py $(BENCH_UDP_LOSSY_ARGS)

## bench-collective: rounds of slacknet.collective's parameter-server all-reduce (4 MB gradients,
## two workers) through the namespace testbed's 200 Mbit/s port flooded with UDP, at p = 1, 0.9
## and 0.8: each round's time (median, p90, largest) against p = 1 (root only; about a minute;
## BENCH_COLLECTIVE_ARGS for --workers, --values, --rounds, --p, --flood)
BENCH_COLLECTIVE_ARGS ?=
bench-collective: install
	$(PY) bench/collective_testbed.py $(BENCH_COLLECTIVE_ARGS)

## bench-approx: slacknet.approx end to end on loopback: one table sent reliably and under error
## bounds through random datagram loss; the MSR planned, send time, records arrived, and the
## estimate's interval against the truth (BENCH_APPROX_ARGS, e.g. --records 200000 --runs 5;
## about 10 s; BENCH_APPROX_ARGS=--testbed: through the namespace testbed's congested 200
## Mbit/s port instead, root only, about 30 s)
BENCH_APPROX_ARGS ?=
bench-approx: install
	$(PY) bench/approx_loopback.py $(BENCH_APPROX_ARGS)

## bench-sim-vs-testbed: the same 8 MB transfer in the simulator and on the namespace testbed
## (root only; about 10 s)
bench-sim-vs-testbed: install
	$(PY) bench/sim_vs_testbed.py

## bench-coflow: the idealised inter-coflow model's schedulers over the whole FB2010 coflow trace
## ($(SLACKNET_COFLOW_TRACE)), wall and CPU seconds per scheduler with events and CCTs (about 80 s
## of CPU; the coflowsim-compatible mode is left out: `coflow_bench` with upper-case names)
SLACKNET_COFLOW_TRACE ?= ../shared/data/coflow/FB2010-1Hr-150-0.txt
COFLOW_SCHEDULERS ?= fair fifo scf ncf lcf sebf dclas sincronia pfp fetch:5
bench-coflow:
	cargo run --release --quiet -p slacknet-coflow --example coflow_bench -- $(SLACKNET_COFLOW_TRACE) - $(COFLOW_SCHEDULERS)

## profile: where the time goes on the 256-host scenario (perf; falls back to callgrind)
profile:
	cargo build --release --quiet -p slacknet-sim
	perf record -g -o target/perf.data ./target/release/slacknet-sim experiments/compare/ls256.toml
	perf report -i target/perf.data --no-children --percent-limit 2 --stdio | head -60

clean:
	rm -rf $(VENV) target results
