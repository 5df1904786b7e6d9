// One lane of requantisation (Q-REQ of docs/numerics.md, TensorFlow Lite's
// double-rounding MultiplyByQuantizedMultiplier): an int32 sum, its column's
// bias, multiplier M and shift s, to an int8 output
//   x = wrap(sum + bias); x = wrap(x * 2^max(s, 0));
//   y = RDBP(SRDHM(x, M), max(-s, 0)); out = clamp(y + zo, lo, hi).
// Four pipeline registers (Latency): after the shift, after the 32 x 32
// multiply, after the rounding high half, at the output. The multiply has a
// stage to itself so that an FPGA maps it to its multiplier blocks with their
// registers.
module tpu_requant (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        en_i,
  input  logic [31:0] sum_i,
  input  logic [31:0] bias_i,
  input  logic [31:0] mult_i,        // M, any int32 (the compiler gives 0 or 2^30 .. 2^31 - 1)
  input  logic [5:0]  shift_i,       // s in -31 .. 30, two's complement
  input  logic [7:0]  zero_point_i,  // zo
  input  logic [7:0]  lo_i,
  input  logic [7:0]  hi_i,
  output logic [7:0]  out_o
);

  // Stage 1: bias and left shift. The multiplier and the right shift travel along.
  logic [31:0] shifted_d, shifted_q, mult_q;
  logic [4:0]  right_d, right_q;
  logic [31:0] biased;
  always_comb begin
    biased    = sum_i + bias_i;
    shifted_d = shift_i[5] ? biased : biased << shift_i[4:0];
    right_d   = shift_i[5] ? 5'(-shift_i) : 5'd0;
  end

  // Stage 2: the 64-bit product. Both operands INT32_MIN is SRDHM's one overflow.
  logic signed [63:0] product_d, product_q;
  logic               saturate_d, saturate_q;
  logic [4:0]         right2_q;
  always_comb begin
    product_d  = $signed(shifted_q) * $signed(mult_q);
    saturate_d = shifted_q == 32'h8000_0000 && mult_q == 32'h8000_0000;
  end

  // Stage 3: SRDHM, the nudged product divided by 2^31 with truncation toward
  // zero: an arithmetic shift, after adding 2^31 - 1 to a negative value.
  logic signed [63:0] nudged;
  logic        [63:0] toward_zero;
  logic        [31:0] high_d, high_q;
  logic        [4:0]  right3_q;
  always_comb begin
    nudged      = product_q + (product_q[63] ? 64'sd1 - 64'sd1073741824 : 64'sd1073741824);
    toward_zero = nudged[63] ? 64'(nudged + 64'sd2147483647) : 64'(nudged);
    high_d      = saturate_q ? 32'h7FFF_FFFF : 32'($signed(toward_zero) >>> 31);
  end

  // Stage 4: RDBP (round half away from zero), the zero point, the clamp. y + zo
  // is computed in 33 bits, so that it never wraps.
  logic        [31:0] mask, remainder, threshold;
  logic signed [31:0] quotient;
  logic signed [32:0] offset;
  logic        [7:0]  out_d, out_q;
  always_comb begin
    mask      = (32'd1 << right3_q) - 32'd1;
    remainder = high_q & mask;
    threshold = (mask >> 1) + {31'd0, high_q[31]};
    quotient  = ($signed(high_q) >>> right3_q) + ((remainder > threshold) ? 32'sd1 : 32'sd0);
    offset    = 33'(quotient) + 33'($signed(zero_point_i));
    if (offset < 33'($signed(lo_i))) offset = 33'($signed(lo_i));
    if (offset > 33'($signed(hi_i))) offset = 33'($signed(hi_i));
    out_d = offset[7:0];
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      shifted_q  <= '0;
      mult_q     <= '0;
      right_q    <= '0;
      product_q  <= '0;
      saturate_q <= 1'b0;
      right2_q   <= '0;
      high_q     <= '0;
      right3_q   <= '0;
      out_q      <= '0;
    end else if (en_i) begin
      shifted_q  <= shifted_d;
      mult_q     <= mult_i;
      right_q    <= right_d;
      product_q  <= product_d;
      saturate_q <= saturate_d;
      right2_q   <= right_q;
      high_q     <= high_d;
      right3_q   <= right2_q;
      out_q      <= out_d;
    end
  end

  assign out_o = out_q;

endmodule
