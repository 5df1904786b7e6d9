// The arithmetic of the multiply-add cell: bf16 multiplier, fp32 adder, fp32 -> bf16 rounder,
// and the cell's stages in both its modes (bf16 and int8).
-F ../prim/prim.f
tpu_fp_pkg.sv
tpu_mac_pkg.sv
tpu_bf16_mul.sv
tpu_fp32_add.sv
tpu_fp32_to_bf16.sv
