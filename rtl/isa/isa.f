// The generated definitions (scripts/gen_defs.py from rtl/defs/*.toml): the instruction set,
// its decoder and the register map.
-F ../prim/prim.f
tpu_isa_pkg.sv
tpu_regs_pkg.sv
tpu_decode.sv
