// fp32 adder (N-IN, N-ADD): IEEE binary32 addition, round to nearest even,
// results below 2^-126 flushed to a zero of the result's sign, canonical NaN.
// The arithmetic is tpu_fp_pkg's, shared with the systolic array.
//
// PipeStages chooses the pipeline registers (latency = PipeStages cycles):
//   0: combinational
//   1: register after the significand add
//   2: also after the operand swap
//   3: also after normalisation (before rounding)
module tpu_fp32_add #(
  parameter int unsigned PipeStages = 0
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        en_i,
  input  logic [31:0] x_i,
  input  logic [31:0] y_i,
  output logic [31:0] sum_o
);

  if (PipeStages > tpu_pkg::AddStagesMax) begin : g_bad_stages
    $error("tpu_fp32_add: PipeStages must be 0, 1, 2 or 3");
  end

  tpu_fp_pkg::add_ordered_t    ordered_d, ordered;
  tpu_fp_pkg::add_sum_t        summed_d, summed;
  tpu_fp_pkg::add_normalised_t normalised_d, normalised;

  assign ordered_d    = tpu_fp_pkg::add_order(x_i, y_i);
  assign summed_d     = tpu_fp_pkg::add_align(ordered);
  assign normalised_d = tpu_fp_pkg::add_normalise(summed);
  assign sum_o        = tpu_fp_pkg::add_round(normalised);

  tpu_pipe_reg #(.Width(tpu_fp_pkg::AddOrderedBits), .Enable(PipeStages >= 2)) u_stage_swap (
    .clk_i, .rst_ni, .en_i,
    .data_i(ordered_d),
    .data_o(ordered)
  );

  tpu_pipe_reg #(.Width(tpu_fp_pkg::AddSumBits), .Enable(PipeStages >= 1)) u_stage_sum (
    .clk_i, .rst_ni, .en_i,
    .data_i(summed_d),
    .data_o(summed)
  );

  tpu_pipe_reg #(.Width(tpu_fp_pkg::AddNormalisedBits), .Enable(PipeStages >= 3)) u_stage_norm (
    .clk_i, .rst_ni, .en_i,
    .data_i(normalised_d),
    .data_o(normalised)
  );

endmodule
