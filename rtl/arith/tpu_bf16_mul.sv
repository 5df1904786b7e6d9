// bfloat16 x bfloat16 -> fp32 multiplier (N-IN, N-MUL); the arithmetic is
// tpu_fp_pkg's, shared with the systolic array.
//
// PipeStages chooses the pipeline registers (latency = PipeStages cycles):
//   0: combinational
//   1: register after the significand multiply
//   2: also a register on the output
module tpu_bf16_mul #(
  parameter int unsigned PipeStages = 0
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        en_i,
  input  logic [15:0] a_i,
  input  logic [15:0] b_i,
  output logic [31:0] product_o
);

  if (PipeStages > tpu_pkg::MulStagesMax) begin : g_bad_stages
    $error("tpu_bf16_mul: PipeStages must be 0, 1 or 2");
  end

  tpu_fp_pkg::mul_product_t s1_product, s2_product;
  logic [31:0]              s2_normalised;

  assign s1_product    = tpu_fp_pkg::mul_significands(a_i, b_i);
  assign s2_normalised = tpu_fp_pkg::mul_normalise(s2_product);

  tpu_pipe_reg #(.Width(tpu_fp_pkg::MulProductBits), .Enable(PipeStages >= 1)) u_stage_sig (
    .clk_i, .rst_ni, .en_i,
    .data_i(s1_product),
    .data_o(s2_product)
  );

  tpu_pipe_reg #(.Width(32), .Enable(PipeStages >= 2)) u_stage_out (
    .clk_i, .rst_ni, .en_i,
    .data_i(s2_normalised),
    .data_o(product_o)
  );

endmodule
