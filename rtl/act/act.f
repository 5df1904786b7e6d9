// The activation functions' definitions both cores' function units share: the generated
// tables and the exact results.
-F ../isa/isa.f
tpu_act_tables_pkg.sv
tpu_act_pkg.sv
