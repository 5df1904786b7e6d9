// Miter: tpu_fp32_add with Stages pipeline registers against SymFPU's binary32 addition,
// round to nearest even (module symfpu_add, made by `symfpu -op add -rm RNE`), wrapped in
// the contract (formal_contract_pkg). The operands reach the reference through Stages
// registers, so ok_o compares the result of the same operands. Proved with the initial
// state free and en_i held at 1 (docs/verification.md says why that covers stalls).
module formal_fp32_add #(
  parameter int unsigned Stages = 0
) (
  input  logic        clk_i,
  input  logic [31:0] x_i,
  input  logic [31:0] y_i,
  output logic        ok_o
);

  logic [31:0] sum, x_late, y_late, ieee_sum;
  logic        nv, dz, of, uf, nx;

  tpu_fp32_add #(.PipeStages(Stages)) u_dut (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .x_i, .y_i, .sum_o(sum)
  );

  tpu_delay #(.Width(64), .Depth(Stages)) u_operands (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i({x_i, y_i}), .data_o({x_late, y_late})
  );

  symfpu_add u_ieee (
    .a(formal_contract_pkg::flush_in(x_late)), .b(formal_contract_pkg::flush_in(y_late)),
    .c(32'h0), .rm(5'b00001), .o(ieee_sum),
    .NV(nv), .DZ(dz), .OF(of), .UF(uf), .NX(nx)
  );

  assign ok_o = sum == formal_contract_pkg::canonical_out(ieee_sum);

endmodule
