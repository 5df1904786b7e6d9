// The array core (tpu_array_core): issue stage, unit queues, hazard checks, memories, the
// activation function unit (tpu_act_func), the collective unit, the vector unit and the other units.
-F ../mxu/mxu.f
-F ../act/act.f
-F ../axi/axi.f
-F ../pod/pod.f
tpu_core_pkg.sv
tpu_banked_mem.sv
tpu_op_queue.sv
tpu_dma_iterations.sv
tpu_int8_widen.sv
tpu_hazard_check.sv
tpu_issue.sv
tpu_act_func.sv
tpu_requant.sv
tpu_load_unit.sv
tpu_tile_transpose.sv
tpu_weight_unit.sv
tpu_matmul_unit.sv
tpu_act_unit.sv
tpu_store_unit.sv
tpu_collective_unit.sv
tpu_vector_lane.sv
tpu_vector_unit.sv
tpu_array_core.sv
