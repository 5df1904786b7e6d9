// fp32 -> bfloat16 rounding (N-OUT): round to nearest even on the low 16 bits,
// canonical NaN, subnormals to a zero of the same sign. A carry may run into the
// exponent; one that reaches the infinity encoding gives infinity.
//
// PipeStages: 0 combinational, 1 registered output.
module tpu_fp32_to_bf16 #(
  parameter int unsigned PipeStages = 0
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        en_i,
  input  logic [31:0] value_i,
  output logic [15:0] value_o
);

  if (PipeStages > tpu_pkg::RoundStagesMax) begin : g_bad_stages
    $error("tpu_fp32_to_bf16: PipeStages must be 0 or 1");
  end

  logic        round_up;
  logic [15:0] rounded;

  always_comb begin
    round_up = value_i[15] && (value_i[14:0] != 15'h0 || value_i[16]);
    if (value_i[30:23] == 8'hFF && value_i[22:0] != 23'h0) begin
      rounded = tpu_pkg::Bf16CanonicalNan;
    end else if (value_i[30:23] == 8'hFF) begin
      rounded = {value_i[31], 15'h7F80};
    end else if (value_i[30:23] == 8'h00) begin
      rounded = {value_i[31], 15'h0};
    end else begin
      rounded = value_i[31:16] + {15'h0, round_up};
    end
  end

  tpu_pipe_reg #(.Width(16), .Enable(PipeStages >= 1)) u_stage_out (
    .clk_i, .rst_ni, .en_i,
    .data_i(rounded),
    .data_o(value_o)
  );

endmodule
