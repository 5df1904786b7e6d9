// fp32 adder (N-IN, N-ADD): IEEE binary32 addition, round to nearest even,
// results below 2^-126 flushed to a zero of the result's sign, canonical NaN.
//
// Operands with exponent 0 are zeros (N-IN): their fraction is ignored. A zero
// operand goes through the normal path with a zero significand, so only NaN and
// infinity need a bypass. Sums below 2^-126 are always exact (both operands are
// multiples of 2^-149), so flushing them never interacts with rounding.
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

  // ---------------------------------------------------------------------------
  // Stage 1: classify, order the operands by magnitude.
  // ---------------------------------------------------------------------------
  logic        x_inf, y_inf, x_nan, y_nan;
  logic [23:0] x_sig, y_sig;  // hidden bit made explicit, zero for a zero operand
  logic        x_is_big;

  logic        s1_nan, s1_inf, s1_inf_sign;
  logic        s1_sign, s1_zero_sign, s1_eff_sub;
  logic [7:0]  s1_big_exp, s1_exp_diff;
  logic [23:0] s1_big_sig, s1_small_sig;

  always_comb begin
    x_inf = x_i[30:23] == 8'hFF && x_i[22:0] == 23'h0;
    y_inf = y_i[30:23] == 8'hFF && y_i[22:0] == 23'h0;
    x_nan = x_i[30:23] == 8'hFF && x_i[22:0] != 23'h0;
    y_nan = y_i[30:23] == 8'hFF && y_i[22:0] != 23'h0;
    x_sig = (x_i[30:23] == 8'h00) ? 24'h0 : {1'b1, x_i[22:0]};
    y_sig = (y_i[30:23] == 8'h00) ? 24'h0 : {1'b1, y_i[22:0]};

    s1_nan      = x_nan || y_nan || (x_inf && y_inf && (x_i[31] != y_i[31]));
    s1_inf      = x_inf || y_inf;
    s1_inf_sign = x_inf ? x_i[31] : y_i[31];
    // An exact zero sum is +0 unless both operands are negative (zeros).
    s1_zero_sign = x_i[31] && y_i[31];
    s1_eff_sub   = x_i[31] != y_i[31];

    x_is_big = {x_i[30:23], x_sig[22:0]} >= {y_i[30:23], y_sig[22:0]};
    if (x_is_big) begin
      s1_sign      = x_i[31];
      s1_big_exp   = x_i[30:23];
      s1_exp_diff  = x_i[30:23] - y_i[30:23];
      s1_big_sig   = x_sig;
      s1_small_sig = y_sig;
    end else begin
      s1_sign      = y_i[31];
      s1_big_exp   = y_i[30:23];
      s1_exp_diff  = y_i[30:23] - x_i[30:23];
      s1_big_sig   = y_sig;
      s1_small_sig = x_sig;
    end
  end

  localparam int unsigned SwapWidth = 3 + 3 + 8 + 8 + 24 + 24;

  logic        s2_nan, s2_inf, s2_inf_sign;
  logic        s2_sign, s2_zero_sign, s2_eff_sub;
  logic [7:0]  s2_big_exp, s2_exp_diff;
  logic [23:0] s2_big_sig, s2_small_sig;

  tpu_pipe_reg #(.Width(SwapWidth), .Enable(PipeStages >= 2)) u_stage_swap (
    .clk_i, .rst_ni, .en_i,
    .data_i({s1_nan, s1_inf, s1_inf_sign, s1_sign, s1_zero_sign, s1_eff_sub,
             s1_big_exp, s1_exp_diff, s1_big_sig, s1_small_sig}),
    .data_o({s2_nan, s2_inf, s2_inf_sign, s2_sign, s2_zero_sign, s2_eff_sub,
             s2_big_exp, s2_exp_diff, s2_big_sig, s2_small_sig})
  );

  // ---------------------------------------------------------------------------
  // Stage 2: align the smaller significand (3 extra bits: guard, round, sticky)
  // and add or subtract.
  // ---------------------------------------------------------------------------
  logic [4:0]  align_shift;
  logic [53:0] align_wide;
  logic [26:0] small_aligned;
  logic [27:0] s2_sum;

  always_comb begin
    // Beyond 27 places the smaller operand only contributes its sticky bit.
    align_shift   = (s2_exp_diff > 8'd27) ? 5'd27 : s2_exp_diff[4:0];
    align_wide    = {s2_small_sig, 3'b000, 27'h0} >> align_shift;
    small_aligned = {align_wide[53:28], align_wide[27] | (align_wide[26:0] != 27'h0)};
    if (s2_eff_sub) s2_sum = {1'b0, s2_big_sig, 3'b000} - {1'b0, small_aligned};
    else            s2_sum = {1'b0, s2_big_sig, 3'b000} + {1'b0, small_aligned};
  end

  localparam int unsigned SumWidth = 3 + 2 + 8 + 28;

  logic        s3_nan, s3_inf, s3_inf_sign, s3_sign, s3_zero_sign;
  logic [7:0]  s3_big_exp;
  logic [27:0] s3_sum;

  tpu_pipe_reg #(.Width(SumWidth), .Enable(PipeStages >= 1)) u_stage_sum (
    .clk_i, .rst_ni, .en_i,
    .data_i({s2_nan, s2_inf, s2_inf_sign, s2_sign, s2_zero_sign, s2_big_exp, s2_sum}),
    .data_o({s3_nan, s3_inf, s3_inf_sign, s3_sign, s3_zero_sign, s3_big_exp, s3_sum})
  );

  // ---------------------------------------------------------------------------
  // Stage 3: normalise so that bit 26 is the leading one.
  // ---------------------------------------------------------------------------
  logic [4:0]  lead_zeros;
  logic        s3_zero;
  logic [9:0]  s3_exp;   // signed biased exponent of the normalised sum
  logic [26:0] s3_norm;  // 1.23 significand, guard, round, sticky

  always_comb begin
    lead_zeros = tpu_pkg::lzc27(s3_sum[26:0]);
    s3_zero    = s3_sum == 28'h0;
    if (s3_sum[27]) begin
      s3_exp  = {2'b00, s3_big_exp} + 10'd1;
      s3_norm = {s3_sum[27:2], s3_sum[1] | s3_sum[0]};
    end else begin
      s3_exp  = {2'b00, s3_big_exp} - {5'd0, lead_zeros};
      s3_norm = s3_sum[26:0] << lead_zeros;
    end
  end

  localparam int unsigned NormWidth = 3 + 3 + 10 + 27;

  logic        s4_nan, s4_inf, s4_inf_sign, s4_sign, s4_zero_sign, s4_zero;
  logic [9:0]  s4_exp;
  logic [26:0] s4_norm;

  tpu_pipe_reg #(.Width(NormWidth), .Enable(PipeStages >= 3)) u_stage_norm (
    .clk_i, .rst_ni, .en_i,
    .data_i({s3_nan, s3_inf, s3_inf_sign, s3_sign, s3_zero_sign, s3_zero, s3_exp, s3_norm}),
    .data_o({s4_nan, s4_inf, s4_inf_sign, s4_sign, s4_zero_sign, s4_zero, s4_exp, s4_norm})
  );

  // ---------------------------------------------------------------------------
  // Stage 4: round to nearest even, then overflow and flush by the exponent.
  // ---------------------------------------------------------------------------
  logic        round_up;
  logic [24:0] rounded_sig;
  logic [9:0]  rounded_exp;
  logic        unused_hidden_bit;  // always 1 (or 0 after a carry): implied by the exponent

  assign unused_hidden_bit = rounded_sig[23];

  always_comb begin
    round_up    = s4_norm[2] && (s4_norm[1] || s4_norm[0] || s4_norm[3]);
    rounded_sig = {1'b0, s4_norm[26:3]} + {24'h0, round_up};
    rounded_exp = rounded_sig[24] ? s4_exp + 10'd1 : s4_exp;

    if (s4_nan) begin
      sum_o = tpu_pkg::Fp32CanonicalNan;
    end else if (s4_inf) begin
      sum_o = {s4_inf_sign, 8'hFF, 23'h0};
    end else if (s4_zero) begin
      sum_o = {s4_zero_sign, 31'h0};
    end else if (rounded_exp[9] || rounded_exp == 10'd0) begin
      sum_o = {s4_sign, 31'h0};
    end else if (rounded_exp >= 10'd255) begin
      sum_o = {s4_sign, 8'hFF, 23'h0};
    end else begin
      // A carry out of rounding leaves a zero fraction, so bits [22:0] are right
      // in both cases.
      sum_o = {s4_sign, rounded_exp[7:0], rounded_sig[22:0]};
    end
  end

endmodule
