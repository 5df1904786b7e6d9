// The matrix unit: MAC cells, the systolic array, its stream control (tpu_mxu).
-F ../arith/arith.f
tpu_systolic_array.sv
tpu_mxu_ctrl.sv
tpu_mxu.sv
