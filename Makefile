# mpcc — the two entry points of the README:
#   make reproduce   set everything up, reproduce Peng et al. (Tables III–V, Fig. 3), ≈ 14 min on a fresh clone; FULL=1: paper lengths
#   make test        set everything up, run the test suites (Rust; Python host-only in parallel, then kernel
#                    tests serially under /tmp/mpcc-bench.lock)
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
OUT    ?= results

.PHONY: setup setup-parts system test test-long reproduce bench clean linkem kernels bpf-prebuilt check-algorithm

PREBUILT = python/mpcc/kernel/objects/index.json

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip==25.3

# the pinned Python dependencies (pyproject.toml: the package's and the test extra's), without
# byte-compiling them at install (Python compiles what it imports, on first use)
$(VENV)/.deps: $(BIN)/python pyproject.toml scripts/requirements.py
	$(BIN)/python scripts/requirements.py > $(VENV)/requirements.txt
	$(BIN)/pip install -q --no-compile -r $(VENV)/requirements.txt
	touch $@

# the build backend (maturin, pinned in pyproject.toml), in the venv: no isolated build environment
$(VENV)/.maturin: $(BIN)/python pyproject.toml scripts/requirements.py
	$(BIN)/pip install -q --no-compile $$($(BIN)/python scripts/requirements.py --build)
	touch $@

# the package itself (editable) and its Rust core, built by maturin while the dependencies above
# install, in its own cargo target directory so that it builds at the same time as linkem
$(VENV)/.installed: $(VENV)/.maturin Cargo.toml Cargo.lock $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null)
	PATH="$(abspath $(BIN)):$$PATH" CARGO_TARGET_DIR=target/py $(BIN)/pip install -q --no-compile --no-build-isolation --no-deps -e .
	touch $@

system:
	bash scripts/setup-system.sh

# the parts run side by side (3 jobs; cargo and clang use both cores, pip mostly waits on the
# network and the disk): linkem, the dependencies, the Rust core, and the BPF objects once clang
# and the dependencies are there
setup:
	@$(MAKE) --no-print-directory -j3 setup-parts

setup-parts: linkem system $(VENV)/.installed $(VENV)/.deps $(PREBUILT)

# the CO-RE objects the package ships (python/mpcc/kernel/objects/, gitignored): every
# algorithm's defaults and the common parameter sets, so that `mpcc kernel load` needs no clang.
# Rebuilt when a BPF source or the build script changes (the loader also checks each object's
# source digest and compiles a stale one itself)
$(PREBUILT): $(VENV)/.deps scripts/build_bpf_prebuilt.py $(wildcard bpf/*.bpf.c bpf/include/*.h bpf/compat/*.h) | system
	PYTHONPATH=python $(BIN)/python scripts/build_bpf_prebuilt.py

bpf-prebuilt:
	PYTHONPATH=python $(BIN)/python scripts/build_bpf_prebuilt.py

# the testbed's link emulator (crates/linkem), used by `mpcc testbed`
linkem:
	cargo build -q --release -p linkem

# the Rust tests in the dev profile: integer overflow is checked (release wraps silently), and
# it compiles in a third of release's time; then the host-only tests in parallel (pytest-xdist,
# TEST_JOBS workers; auto: one per core), then the
# tests marked kernel (root, namespaces, BPF struct_ops, real traffic) one at a time under the lock
# the project's kernel measurements share. pytest's exit 5 (no test collected: a phase can be
# empty, e.g. -m kernel on a checkout without kernel tests) is not a failure
TEST_JOBS ?= auto
BENCH_LOCK ?= /tmp/mpcc-bench.lock
test: setup
	cargo test --workspace --lib --tests
	$(BIN)/python -m pytest -n $(TEST_JOBS) -m "not kernel" || [ $$? -eq 5 ]
	flock $(BENCH_LOCK) $(BIN)/python -m pytest -m "kernel and not long" --durations=15 || [ $$? -eq 5 ]

# the long kernel measurements (paper claims judged over many runs; bench/tests/RESULTS.md records
# them), one at a time under the lock; `make test` runs their short versions
test-long: setup
	flock $(BENCH_LOCK) $(BIN)/python -m pytest -m "kernel and long" --durations=15 || [ $$? -eq 5 ]

reproduce: setup
	$(BIN)/mpcc reproduce peng2016 --engine all $(if $(FULL),--full) --out $(OUT)/peng2016

bench: setup
	$(BIN)/python bench/run.py

# every BPF program on Debian's 6.1 and 6.12 LTS kernels (qemu) and the running kernel (root):
# `mpcc lab kernels`; writes bench/kernel/kernels.json and the table in docs/kernel.md. Kernel
# packages: build/kernels/. KERNELS=6.12-rt,6.1-cloud,… picks others: Debian's rt and cloud
# flavours, or package names; ALGOS="balia olia(per_ack=1)" only those (no space inside a parenthesis)
kernels: setup
	bash scripts/setup-system.sh qemu-system-x86
	$(BIN)/mpcc lab kernels $(if $(KERNELS),--kernels $(KERNELS)) $(foreach a,$(ALGOS),'$(a)')

# every check a new algorithm must pass (docs/algorithms.md, "Adding an algorithm"), one line each;
# the kernel check needs root (it takes the bench lock), GUESTS=1 adds the 6.1 / 6.12 guests
check-algorithm: setup
	$(BIN)/python scripts/check_algorithm.py $(ALGO)

clean:
	rm -rf $(VENV) target $(OUT)
