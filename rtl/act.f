rtl/tpu_pkg.sv
rtl/tpu_isa_pkg.sv
rtl/tpu_pipe_reg.sv
rtl/tpu_act_tables_pkg.sv
rtl/tpu_act_func.sv
