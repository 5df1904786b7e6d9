// Miter: tpu_bf16_mul with Stages pipeline registers against SymFPU's binary32
// multiplication (module symfpu_mul, `symfpu -op mul -rm RNE`) of the operands widened to
// fp32, wrapped in the contract (formal_contract_pkg). N-MUL's product is exact, so any
// rounding SymFPU does would show as a difference.
module formal_bf16_mul #(
  parameter int unsigned Stages = 0
) (
  input  logic        clk_i,
  input  logic [15:0] a_i,
  input  logic [15:0] b_i,
  output logic        ok_o
);

  logic [31:0] product, ieee_product;
  logic [15:0] a_late, b_late;
  logic        nv, dz, of, uf, nx;

  tpu_bf16_mul #(.PipeStages(Stages)) u_dut (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .a_i, .b_i, .product_o(product)
  );

  tpu_delay #(.Width(32), .Depth(Stages)) u_operands (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i({a_i, b_i}), .data_o({a_late, b_late})
  );

  symfpu_mul u_ieee (
    .a(formal_contract_pkg::widen(a_late)), .b(formal_contract_pkg::widen(b_late)),
    .c(32'h0), .rm(5'b00001), .o(ieee_product),
    .NV(nv), .DZ(dz), .OF(of), .UF(uf), .NX(nx)
  );

  assign ok_o = product == formal_contract_pkg::canonical_out(ieee_product);

endmodule
