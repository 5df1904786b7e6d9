// The generated definitions (scripts/gen_defs.py from rtl/defs/*.toml): the instruction set,
// its decoder and the register map; and the interface of tpu_top's shell to either core.
-F ../prim/prim.f
tpu_isa_pkg.sv
tpu_regs_pkg.sv
tpu_decode.sv
tpu_shell_pkg.sv
