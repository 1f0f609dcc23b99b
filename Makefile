# mpcc — the two entry points of the README:
#   make reproduce   set everything up, reproduce Peng et al. (Tables III–V, Fig. 3), ≈ 10 min; FULL=1: paper lengths
#   make test        set everything up, run the test suites (Python, Rust, BPF host tests)
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
OUT    ?= results

.PHONY: setup system test reproduce bench clean linkem kernels bpf-prebuilt

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip==25.3

$(VENV)/.installed: $(BIN)/python pyproject.toml Cargo.toml $(shell find crates -name '*.rs' -o -name Cargo.toml 2>/dev/null)
	$(BIN)/pip install -q -e '.[test]'
	touch $@

system:
	bash scripts/setup-system.sh

setup: system $(VENV)/.installed linkem bpf-prebuilt

# the CO-RE objects the package ships (python/mpcc/testbed/bpf_prebuilt/, gitignored): every
# algorithm's defaults and the common parameter sets, so that `mpcc kernel load` needs no clang
bpf-prebuilt: $(VENV)/.installed
	$(BIN)/python scripts/build_bpf_prebuilt.py

# the testbed's link emulator (crates/linkem), used by `mpcc testbed`
linkem:
	cargo build -q --release -p linkem

test: setup
	cargo test --workspace --release --lib --tests
	$(BIN)/python -m pytest

reproduce: setup
	$(BIN)/mpcc reproduce peng2016 --engine all $(if $(FULL),--full) --out $(OUT)/peng2016

bench: setup
	$(BIN)/python bench/run.py

# every BPF program on Debian's 6.1 and 6.12 LTS kernels (qemu) and the running kernel (root);
# writes bench/kernel/kernels.json and the table in docs/kernel.md. Kernel packages: build/kernels/
kernels: setup
	$(BIN)/python bench/kernel/kernels.py

clean:
	rm -rf $(VENV) target $(OUT)
