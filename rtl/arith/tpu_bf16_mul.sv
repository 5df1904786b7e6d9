// bfloat16 x bfloat16 -> fp32 multiplier (N-IN, N-MUL).
//
// The product of two 8-bit significands has at most 16 bits, so it always fits
// fp32's 24-bit significand exactly: there is no rounding, only normalisation
// by at most one place, overflow to infinity and flush to zero.
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

  // ---------------------------------------------------------------------------
  // Stage 1: classify (N-IN: exponent 0 is zero, subnormals included), multiply.
  // ---------------------------------------------------------------------------
  logic       a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
  logic       s1_sign, s1_nan, s1_inf, s1_zero;
  logic [9:0] s1_exp;   // biased exponent of the product before normalisation, signed
  logic [15:0] s1_sig;  // 1.7 x 1.7 -> 2.14 fixed point, in [2^14, 2^16)

  always_comb begin
    a_zero = a_i[14:7] == 8'h00;
    b_zero = b_i[14:7] == 8'h00;
    a_inf  = a_i[14:7] == 8'hFF && a_i[6:0] == 7'h00;
    b_inf  = b_i[14:7] == 8'hFF && b_i[6:0] == 7'h00;
    a_nan  = a_i[14:7] == 8'hFF && a_i[6:0] != 7'h00;
    b_nan  = b_i[14:7] == 8'hFF && b_i[6:0] != 7'h00;

    s1_sign = a_i[15] ^ b_i[15];
    s1_nan  = a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf);
    s1_inf  = a_inf || b_inf;
    s1_zero = a_zero || b_zero;
    s1_exp  = {2'b00, a_i[14:7]} + {2'b00, b_i[14:7]} - 10'd127;
    s1_sig  = {8'h00, 1'b1, a_i[6:0]} * {8'h00, 1'b1, b_i[6:0]};
  end

  logic        s2_sign, s2_nan, s2_inf, s2_zero;
  logic [9:0]  s2_exp;
  logic [15:0] s2_sig;

  tpu_pipe_reg #(.Width(30), .Enable(PipeStages >= 1)) u_stage_sig (
    .clk_i, .rst_ni, .en_i,
    .data_i({s1_sign, s1_nan, s1_inf, s1_zero, s1_exp, s1_sig}),
    .data_o({s2_sign, s2_nan, s2_inf, s2_zero, s2_exp, s2_sig})
  );

  // ---------------------------------------------------------------------------
  // Stage 2: normalise by one place, then overflow (>= 2^128) and flush
  // (< 2^-126) by the final biased exponent.
  // ---------------------------------------------------------------------------
  logic [9:0]  norm_exp;
  logic [22:0] norm_frac;
  logic [31:0] s2_product;

  always_comb begin
    if (s2_sig[15]) begin
      norm_exp  = s2_exp + 10'd1;
      norm_frac = {s2_sig[14:0], 8'h00};
    end else begin
      norm_exp  = s2_exp;
      norm_frac = {s2_sig[13:0], 9'h000};
    end

    if (s2_nan) begin
      s2_product = tpu_pkg::Fp32CanonicalNan;
    end else if (s2_inf) begin
      s2_product = {s2_sign, 8'hFF, 23'h0};
    end else if (s2_zero || norm_exp[9] || norm_exp == 10'd0) begin
      s2_product = {s2_sign, 31'h0};
    end else if (norm_exp >= 10'd255) begin
      s2_product = {s2_sign, 8'hFF, 23'h0};
    end else begin
      s2_product = {s2_sign, norm_exp[7:0], norm_frac};
    end
  end

  tpu_pipe_reg #(.Width(32), .Enable(PipeStages >= 2)) u_stage_out (
    .clk_i, .rst_ni, .en_i,
    .data_i(s2_product),
    .data_o(product_o)
  );

endmodule
