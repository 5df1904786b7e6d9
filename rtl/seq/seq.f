// The sequential core (tpu_seq_core): one multiply-add at a time.
-F ../arith/arith.f
-F ../act/act.f
tpu_seq_add.sv
tpu_seq_act.sv
tpu_seq_ram.sv
tpu_seq_bus.sv
tpu_seq_check.sv
tpu_seq_ctrl.sv
tpu_seq_core.sv
