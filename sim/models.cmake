# Every Verilator model of the build, one row each: its kind, its name (the generated class is
# V<name>) and the parameters of its top, by name. The kind fixes the top, its RTL file lists and
# what the programs that run the model learn of it:
#   mxu    tpu_mxu (rtl/mxu/mxu.f), in the matrix unit's registry (tb/harness/mxu_model.hpp):
#          Rows, Cols, MulStages and AddStages are required.
#   core   tpu_top with both cores (rtl/top/top.f), in the runtime's named configurations
#          (tpu::core_configs()) and the rtl backend's registry: the HardwareConfig fields below
#          are required; any other tpu_top parameter may follow.
#   model_core  a core of the same fields that no Verilator model is built of: the functional
#          model and the cycle model run it (tpu::model_configs(), `--backend model --array`).
#   board  tpu_board (rtl/board/board.f) with the parameters of fpga/<board>/board.toml, for each
#          board whose board.toml asks for a simulation (the rows at the end).
#   unit   one arithmetic or function unit, for its own tests: TOP and LIST name it.
# TRACE compiles FST waveform tracing into a model (make wave, --trace). Tracing compiled in slows
# a model 2.4 to 4.4 times even while no waveform is written (docs/perf/README.md), so only the
# configurations the waveform targets and their tests trace; -DTPU_TRACE=ON traces every model.
# The top-level CMakeLists.txt includes this file whether or not TPU_RTL builds the models
# (sim/CMakeLists.txt), so that the runtime knows the core configurations either way.

# tpu_top's parameters that make a HardwareConfig, and the field each sets.
set(TPU_CORE_FIELDS Sequential=sequential Dim=dim MulStages=mul_stages AddStages=add_stages
    ActLanes=act_lanes UbDepth=ub_depth AccDepth=acc_depth BusBytes=bus_bytes
    WeightTiles=weight_tiles LinkLanes=link_lanes Int8=int8 Float=float_datapath
    VectorLanes=vector_lanes)
set(TPU_MXU_FIELDS Rows=rows Cols=cols MulStages=mul_stages AddStages=add_stages)

function(tpu_model kind name)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "TRACE" "TOP;LIST" "")
  if(kind STREQUAL "mxu")
    set(top tpu_mxu)
    set(lists rtl/mxu/mxu.f)
  elseif(kind STREQUAL "core" OR kind STREQUAL "model_core")
    set(top tpu_top)
    set(lists rtl/top/top.f)
  elseif(kind STREQUAL "board")
    set(top tpu_board)
    set(lists rtl/top/top.f rtl/board/board.f)
  elseif(kind STREQUAL "unit")
    if(NOT ARG_TOP OR NOT ARG_LIST)
      message(FATAL_ERROR "sim/models.cmake: unit ${name}: TOP and LIST are required")
    endif()
    set(top ${ARG_TOP})
    set(lists ${ARG_LIST})
  else()
    message(FATAL_ERROR "sim/models.cmake: ${name}: unknown kind '${kind}'")
  endif()
  foreach(param IN LISTS ARG_UNPARSED_ARGUMENTS)
    if(NOT param MATCHES "^[A-Za-z][A-Za-z0-9]*=[0-9A-Za-z']+$")
      message(FATAL_ERROR "sim/models.cmake: ${name}: '${param}' is not NAME=VALUE")
    endif()
  endforeach()
  get_property(names GLOBAL PROPERTY TPU_MODELS)
  if(name IN_LIST names)
    message(FATAL_ERROR "sim/models.cmake: two models are named ${name}")
  endif()
  set_property(GLOBAL APPEND PROPERTY TPU_MODELS ${name})
  set_property(GLOBAL PROPERTY TPU_MODEL_${name}_KIND ${kind})
  set_property(GLOBAL PROPERTY TPU_MODEL_${name}_TOP ${top})
  set_property(GLOBAL PROPERTY TPU_MODEL_${name}_LISTS ${lists})
  set_property(GLOBAL PROPERTY TPU_MODEL_${name}_PARAMS ${ARG_UNPARSED_ARGUMENTS})
  set_property(GLOBAL PROPERTY TPU_MODEL_${name}_TRACE ${ARG_TRACE})
endfunction()

# The names of the models of one kind, in the table's order.
function(tpu_models_of kind out)
  get_property(names GLOBAL PROPERTY TPU_MODELS)
  set(found "")
  foreach(name IN LISTS names)
    get_property(model_kind GLOBAL PROPERTY TPU_MODEL_${name}_KIND)
    if(model_kind STREQUAL kind)
      list(APPEND found ${name})
    endif()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# The value of parameter `param` of model `name`; a fatal error if the row lacks it.
function(tpu_model_param name param out)
  get_property(params GLOBAL PROPERTY TPU_MODEL_${name}_PARAMS)
  foreach(entry IN LISTS params)
    if(entry MATCHES "^${param}=(.*)$")
      set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "sim/models.cmake: ${name}: the parameter ${param} is required")
endfunction()

# A C++ expression of the struct `type` with its `fields` (PARAM=field pairs) set from model
# `name`'s parameters: what the registries and the runtime's configurations are generated from.
function(tpu_model_struct name type fields out)
  set(text "[] {\n    ${type} c;\n")
  foreach(pair IN LISTS fields)
    string(REPLACE "=" ";" pair ${pair})
    list(GET pair 0 param)
    list(GET pair 1 field)
    tpu_model_param(${name} ${param} value)
    if(value STREQUAL "1'b1")
      set(value true)
    elseif(value STREQUAL "1'b0")
      set(value false)
    else()
      set(value "${value}u")
    endif()
    string(APPEND text "    c.${field} = ${value};\n")
  endforeach()
  string(APPEND text "    return c;\n  }()")
  set(${out} ${text} PARENT_SCOPE)
endfunction()

# The matrix unit: every edge from 1 to 16, and pipelined arrays that exercise the skew and the
# weight-reload delay of deeper partial-sum steps. make wave's default case runs on 4x4_m0a0.
tpu_model(mxu mxu_1x1_m0a0 Rows=1 Cols=1 MulStages=0 AddStages=0)
tpu_model(mxu mxu_2x3_m0a0 Rows=2 Cols=3 MulStages=0 AddStages=0)
tpu_model(mxu mxu_4x4_m0a0 TRACE Rows=4 Cols=4 MulStages=0 AddStages=0)
tpu_model(mxu mxu_8x8_m0a0 Rows=8 Cols=8 MulStages=0 AddStages=0)
tpu_model(mxu mxu_16x16_m0a0 Rows=16 Cols=16 MulStages=0 AddStages=0)
tpu_model(mxu mxu_4x4_m1a1 Rows=4 Cols=4 MulStages=1 AddStages=1)
tpu_model(mxu mxu_3x5_m2a3 Rows=3 Cols=5 MulStages=2 AddStages=3)
tpu_model(mxu mxu_5x2_m1a2 Rows=5 Cols=2 MulStages=1 AddStages=2)

# The arithmetic units at every legal pipeline depth, and the function units.
foreach(stages 0 1 2)
  tpu_model(unit bf16_mul_s${stages} TOP tpu_bf16_mul LIST rtl/arith/arith.f
            PipeStages=${stages})
endforeach()
foreach(stages 0 1 2 3)
  tpu_model(unit fp32_add_s${stages} TOP tpu_fp32_add LIST rtl/arith/arith.f
            PipeStages=${stages})
endforeach()
foreach(stages 0 1)
  tpu_model(unit fp32_to_bf16_s${stages} TOP tpu_fp32_to_bf16 LIST rtl/arith/arith.f
            PipeStages=${stages})
endforeach()
# The array core's activation function unit, and with a register after each multiplier as the
# FPGA builds have it.
tpu_model(unit act_func TOP tpu_act_func LIST rtl/core/core.f)
# One lane of the vector unit (its conversions checked over every input by make verify-exhaustive).
tpu_model(unit vector_lane TOP tpu_vector_lane LIST rtl/core/core.f)
tpu_model(unit act_func_split TOP tpu_act_func LIST rtl/core/core.f SplitStages=1'b1)
# ... and without exp, reciprocal and reciprocal square root, as a core without a vector unit has it.
tpu_model(unit act_func_base TOP tpu_act_func LIST rtl/core/core.f VectorFunctions=1'b0)
# The sequential core's fp32 adder (the same sums, one bit per cycle) and function unit (the
# same functions, one value at a time).
tpu_model(unit seq_add TOP tpu_seq_add LIST rtl/seq/seq.f)
tpu_model(unit seq_act TOP tpu_seq_act LIST rtl/seq/seq.f)
# The DMA's burst splitter, with the ULX3S's bus and the read engine's longest burst, and with a
# wide bus and a MaxBurst that is not a power of two. RunWidth as the engines size it for rows of
# up to 16 beats.
tpu_model(unit axi_bursts_b8 TOP tpu_axi_bursts LIST rtl/axi/axi.f
          BusBytes=8 MaxBurst=8 RowsWidth=16 RunWidth=21)
tpu_model(unit axi_bursts_b32 TOP tpu_axi_bursts LIST rtl/axi/axi.f
          BusBytes=32 MaxBurst=3 RowsWidth=16 RunWidth=21)

# The core configurations the tests, the regression and the `tpu` tool use.
# The default core, with inter-chip links a row wide and room for 64 rows at the receiving end:
# a pod's chip (docs/pod.md), at full rate up to a link latency of about 28 cycles; a vector unit
# of a row's lanes.
tpu_model(core top_16x16 Sequential=1'b0 Dim=16 MulStages=0 AddStages=0 ActLanes=4 UbDepth=16384
          AccDepth=4096 BusBytes=16 WeightTiles=4 LinkLanes=16 Int8=1'b1 Float=1'b1 QueueDepth=4
          LinkCredits=64 VectorLanes=16)
# Pipelined arithmetic; rows narrower than the bus; links of two lanes, a row in two beats, and
# room for 3 rows at the receiving end; a vector unit of two lanes (two groups a row). The traced
# core: make wave-core's default case and the tool's --trace tests run on it.
tpu_model(core top_4x4_m1a1 TRACE Sequential=1'b0 Dim=4 MulStages=1 AddStages=1 ActLanes=2
          UbDepth=1024 AccDepth=256 BusBytes=16 WeightTiles=2 LinkLanes=2 Int8=1'b1 Float=1'b1
          QueueDepth=2 LinkCredits=3 VectorLanes=2)
# A 32-bit bus: rows of several beats. No links and no vector unit, as on a board: ALLREDUCE and
# ELTWISE are illegal.
tpu_model(core top_8x8_bus4 Sequential=1'b0 Dim=8 MulStages=0 AddStages=0 ActLanes=8
          UbDepth=2048 AccDepth=512 BusBytes=4 WeightTiles=2 LinkLanes=0 Int8=1'b1 Float=1'b1
          QueueDepth=3 VectorLanes=0)
# The sequential core, which the iCEBreaker carries: the memories of 4x4_m1a1, so that the error
# and hazard tests run on both.
tpu_model(core top_4x4_seq Sequential=1'b1 Dim=4 MulStages=0 AddStages=0 ActLanes=1
          UbDepth=1024 AccDepth=256 BusBytes=4 WeightTiles=2 LinkLanes=0 Int8=1'b0 Float=1'b1
          VectorLanes=0)
# Rows narrower than the bus: bf16 lanes at 2-byte host addresses.
tpu_model(core top_1x1_seq Sequential=1'b1 Dim=1 MulStages=0 AddStages=0 ActLanes=1
          UbDepth=1024 AccDepth=256 BusBytes=4 WeightTiles=2 LinkLanes=0 Int8=1'b0 Float=1'b1
          VectorLanes=0)
# A weight store of four slots, three of them for READ_WEIGHTS.
tpu_model(core top_8x8_seq Sequential=1'b1 Dim=8 MulStages=0 AddStages=0 ActLanes=1
          UbDepth=1024 AccDepth=512 BusBytes=4 WeightTiles=3 LinkLanes=0 Int8=1'b0 Float=1'b1
          VectorLanes=0)
# TPU v2's 128x128 matrix unit: its Verilator model for make bench-tpu (-DTPU_LARGE_CORE=ON),
# otherwise the functional model's alone (the zoo's table in docs/networks.md).
if(TPU_LARGE_CORE)
  set(tpu_v2_kind core)
else()
  set(tpu_v2_kind model_core)
endif()
tpu_model(${tpu_v2_kind} top_128x128 Sequential=1'b0 Dim=128 MulStages=0 AddStages=0 ActLanes=16
          UbDepth=2048 AccDepth=2048 BusBytes=64 WeightTiles=2 LinkLanes=128 Int8=1'b1 Float=1'b1
          QueueDepth=4 VectorLanes=16)

# The FPGA boards of fpga/ whose board.toml asks for a simulation, with its tpu_board parameters:
# the serial backend's tests and `tpu --backend serial --port sim` talk to these models through a
# model of the UART line (sim/backends/board_sim.cpp). They are traced: `--port sim --trace`
# shows what a board does with its frames, and sim/board_seq.gtkw is checked against a waveform.
file(GLOB TPU_BOARD_FILES ${CMAKE_CURRENT_LIST_DIR}/../fpga/*/board.toml)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_FILE}
             ${TPU_BOARD_FILES} ${CMAKE_CURRENT_LIST_DIR}/../scripts/fpga_flow.py)
set(TPU_FPGA_FLOW ${CMAKE_CURRENT_LIST_DIR}/../scripts/fpga_flow.py)
execute_process(COMMAND python3 ${TPU_FPGA_FLOW} boards --simulated
                OUTPUT_VARIABLE TPU_SIMULATED_BOARDS OUTPUT_STRIP_TRAILING_WHITESPACE
                COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "\n" ";" TPU_SIMULATED_BOARDS "${TPU_SIMULATED_BOARDS}")
foreach(board IN LISTS TPU_SIMULATED_BOARDS)
  execute_process(COMMAND python3 ${TPU_FPGA_FLOW} params ${board}
                  OUTPUT_VARIABLE board_params RESULT_VARIABLE board_status
                  ERROR_VARIABLE board_error)
  if(NOT board_status EQUAL 0)
    message(FATAL_ERROR "fpga/${board}/board.toml: ${board_error}")
  endif()
  string(REPLACE "\n" ";" board_params "${board_params}")
  list(FILTER board_params INCLUDE REGEX "^-G")
  list(TRANSFORM board_params REPLACE "^-G" "")
  tpu_model(board board_${board} TRACE ${board_params})
endforeach()
