// One lane of requantisation (Q-REQ of docs/numerics.md, TensorFlow Lite's
// double-rounding MultiplyByQuantizedMultiplier): an int32 sum, its column's
// bias, multiplier M and shift s, to an int8 output
//   x = wrap(sum + bias); x = wrap(x * 2^max(s, 0));
//   y = RDBP(SRDHM(x, M), max(-s, 0)); out = clamp(y + zo, lo, hi),
// and y + zo unclamped as 32 bits: y itself with zo = 0, the int32 result of
// ACTIVATE REQ F32 (a rescaling, docs/isa.md).
// Six pipeline registers (tpu_pkg::RequantLatency), each after one carry
// chain or shifter, for FPGA clocks: the bias add, the left shift, the
// 32 x 32 multiply (a stage of its own, so that an FPGA maps it to its
// multiplier blocks with their registers), the rounding high half, the
// right shift with its rounding bit, and the zero point with the clamp.
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
  output logic [7:0]  out_o,
  output logic [31:0] wide_o         // y + zo, its low 32 bits
);

  // Stage 1: the bias. The multiplier and the shift travel along.
  logic [31:0] biased_d, biased_q, mult1_q;
  logic [5:0]  shift1_q;
  assign biased_d = sum_i + bias_i;

  // Stage 2: the left shift; the right shift's distance travels on.
  logic [31:0] shifted_d, shifted_q, mult2_q;
  logic [4:0]  right_d, right2_q;
  assign shifted_d = shift1_q[5] ? biased_q : biased_q << shift1_q[4:0];
  assign right_d   = shift1_q[5] ? 5'(-shift1_q) : 5'd0;

  // Stage 3: the 64-bit product. Both operands INT32_MIN is SRDHM's one overflow.
  logic signed [63:0] product_d, product_q;
  logic               saturate_d, saturate_q;
  logic [4:0]         right3_q;
  assign product_d  = $signed(shifted_q) * $signed(mult2_q);
  assign saturate_d = shifted_q == 32'h8000_0000 && mult2_q == 32'h8000_0000;

  // Stage 4: SRDHM. TensorFlow Lite nudges by 2^30 (1 - 2^30 below zero) and
  // divides by 2^31 truncating toward zero; for every product that is
  // floor((p + 2^30) / 2^31) (docs/numerics.md): one add and a shift.
  logic signed [63:0] rounded;
  logic        [31:0] high_d, high_q;
  logic        [4:0]  right4_q;
  assign rounded = product_q + 64'sd1073741824;
  assign high_d  = saturate_q ? 32'h7FFF_FFFF : 32'(rounded >>> 31);

  // Stage 5: RDBP's shift and its rounding bit (round half away from zero).
  logic        [31:0] mask, remainder, threshold;
  logic signed [31:0] quotient_d, quotient_q;
  logic               round_up_d, round_up_q;
  assign mask       = (32'd1 << right4_q) - 32'd1;
  assign remainder  = high_q & mask;
  assign threshold  = (mask >> 1) + {31'd0, high_q[31]};
  assign quotient_d = $signed(high_q) >>> right4_q;
  assign round_up_d = remainder > threshold;

  // Stage 6: y + zo in 34 bits, so that it never wraps, then the clamp.
  logic signed [33:0] offset, clamped;
  logic        [7:0]  out_d, out_q;
  logic        [31:0] wide_q;
  always_comb begin
    offset  = 34'(quotient_q) + 34'(round_up_q) + 34'($signed(zero_point_i));
    clamped = offset;
    if (clamped < 34'($signed(lo_i))) clamped = 34'($signed(lo_i));
    if (clamped > 34'($signed(hi_i))) clamped = 34'($signed(hi_i));
    out_d = clamped[7:0];
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      biased_q   <= '0;
      mult1_q    <= '0;
      shift1_q   <= '0;
      shifted_q  <= '0;
      mult2_q    <= '0;
      right2_q   <= '0;
      product_q  <= '0;
      saturate_q <= 1'b0;
      right3_q   <= '0;
      high_q     <= '0;
      right4_q   <= '0;
      quotient_q <= '0;
      round_up_q <= 1'b0;
      out_q      <= '0;
      wide_q     <= '0;
    end else if (en_i) begin
      biased_q   <= biased_d;
      mult1_q    <= mult_i;
      shift1_q   <= shift_i;
      shifted_q  <= shifted_d;
      mult2_q    <= mult1_q;
      right2_q   <= right_d;
      product_q  <= product_d;
      saturate_q <= saturate_d;
      right3_q   <= right2_q;
      high_q     <= high_d;
      right4_q   <= right3_q;
      quotient_q <= quotient_d;
      round_up_q <= round_up_d;
      out_q      <= out_d;
      wide_q     <= offset[31:0];
    end
  end

  assign out_o  = out_q;
  assign wide_o = wide_q;

endmodule
