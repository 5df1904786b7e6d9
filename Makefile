# Top-level entry points. `make sim` and `make test` set everything up on a
# fresh Debian 12 machine (scripts/deps.sh installs what is missing).

BUILD   ?= build
JOBS    ?= $(shell nproc)
SEED    ?=
CASE    ?= 4x4_m0a0/back-to-back
# Array size for the Yosys synthesis check (a full 16x16 takes much longer).
SYNTH_ROWS ?= 2
SYNTH_COLS ?= 2
SHARDS  ?= $(JOBS)

RTL_FILES := $(shell cat rtl/mxu.f)
LINT      := verilator --lint-only -Wall sim/lint.vlt $(RTL_FILES)

.PHONY: all deps build sim test lint synth wave bench verify-exhaustive defs clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/Makefile: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# Verilator regression: directed and seeded random GEMMs on every compiled array.
sim: build
	$(BUILD)/bin/mxu_sim $(if $(SEED),--seed $(SEED))

# All GoogleTest suites through CTest.
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Lint every top at its default and extreme parameters; any warning fails.
lint: deps
	$(LINT) --top-module tpu_mxu
	$(LINT) --top-module tpu_mxu -GRows=1 -GCols=1
	$(LINT) --top-module tpu_mxu -GRows=3 -GCols=5 -GMulStages=2 -GAddStages=3
	for stages in 0 2; do $(LINT) --top-module tpu_bf16_mul -GPipeStages=$$stages || exit 1; done
	for stages in 0 3; do $(LINT) --top-module tpu_fp32_add -GPipeStages=$$stages || exit 1; done
	for stages in 0 1; do $(LINT) --top-module tpu_fp32_to_bf16 -GPipeStages=$$stages || exit 1; done
	@echo "lint: clean"

# Generic Yosys synthesis of the matrix unit, without and with every pipeline
# register; any Yosys warning fails.
synth: deps
	@mkdir -p $(BUILD)
	@for stages in "0 0" "2 3"; do set -- $$stages; \
	  log=$(BUILD)/synth_m$$1a$$2; \
	  yosys -q -l $$log.log -p "read_verilog -sv -DSYNTHESIS $(RTL_FILES); \
	    chparam -set Rows $(SYNTH_ROWS) -set Cols $(SYNTH_COLS) \
	      -set MulStages $$1 -set AddStages $$2 tpu_mxu; \
	    synth -flatten -top tpu_mxu; tee -q -o $$log.stat stat" || exit 1; \
	  if grep -q "^Warning" $$log.log; then grep "^Warning" $$log.log; exit 1; fi; \
	  echo "synth: tpu_mxu $(SYNTH_ROWS)x$(SYNTH_COLS) MulStages=$$1 AddStages=$$2:" \
	    "$$(grep -m1 'Number of cells' $$log.stat | tr -s ' '), no warnings"; \
	done

# Waveform of one regression case: make wave CASE=<config>/<case> (see mxu_sim --list).
wave: build
	@mkdir -p $(BUILD)/waves
	$(BUILD)/bin/mxu_sim --only "$(CASE)" --wave $(BUILD)/waves/mxu.fst $(if $(SEED),--seed $(SEED))
	@echo "open with: gtkwave $(BUILD)/waves/mxu.fst sim/mxu.gtkw"

bench: deps
	scripts/bench_mxu.sh $(BUILD)/bench

# All 2^32 multiplier inputs and all 2^32 rounder inputs, in SHARDS processes.
verify-exhaustive: build
	scripts/verify_exhaustive.sh $(BUILD)/bin/exhaustive $(SHARDS)

# SystemVerilog packages, C++ headers and doc tables from rtl/isa.toml and rtl/regmap.toml;
# `make test` fails while they are stale.
defs:
	python3 scripts/gen_defs.py

clean:
	rm -rf $(BUILD)
