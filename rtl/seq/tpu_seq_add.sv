// Sequential fp32 adder (N-IN, N-ADD) of the sequential core: for every pair
// of inputs the same bits as tpu_fp32_add and the reference model
// (sw/numerics/float.cpp), one addition at a time. Round to nearest even, sums
// below 2^-126 flushed to a zero of the sum's sign, the canonical NaN, and an
// exact zero sum is +0 unless both operands are negative.
//
// Why sequential: tpu_fp32_add spends two barrel shifters, a leading-zero count
// and a 28-bit adder (about 720 LUTs on an iCE40) to finish a sum every cycle,
// and the iCE40UP5K has 5,280 LUTs in all. Here the significands sit in two
// 28-bit shift registers, laid out as {carry, hidden bit, 23 fraction bits,
// guard, round, sticky}, and a one-bit full adder adds them least significant
// bit first. Phases:
//   align  the operand with the smaller exponent shifts right one place per
//          cycle, its lost bits ORed into the sticky bit, min(|ex - ey|, 26)
//          places (after 26 its hidden bit is the sticky bit, and further
//          shifts would change nothing).
//   add    28 cycles: both registers shift right into the full adder, and the
//          sum bit enters a_q at the top. For an effective subtraction b_q
//          holds y inverted (from acceptance on) and the carry in is 1: x - y.
//          If y is the larger magnitude the sum is inverted instead:
//          ~(x + ~y) = y - x. Which magnitude is larger, and the normalising
//          left shift (0, 1 or 2 places), are known before the pass from the
//          carry out and top bits of the same sum taken from the FPGA's carry
//          chain (carry cells, no LUT per bit), so the sum bit is delayed by
//          that many cycles, then rounded on the fly.
//   norm   only after a cancellation (exponents at most one apart), where the
//          sum is exact: a_q rotates until the sum's leading one is at bit 27.
//   pack   infinities, NaNs, overflow, flush and zero sums.
// Clock edges from acceptance to out_valid_o: 31 + min(|ex - ey|, 26), so 31
// to 57; at most 58 after a cancellation. About 230 LUTs and 100 flip-flops on
// an iCE40 (synth_ice40 -abc9).
//
// Zero and subnormal operands are loaded like the others (hidden bit 1) and
// masked where their bits enter the full adder.
`include "tpu_assert.svh"

module tpu_seq_add (
  input  logic        clk_i,
  input  logic        rst_ni,

  input  logic        in_valid_i,   // accepted when in_valid_i && in_ready_o
  output logic        in_ready_o,   // idle: no addition in flight
  input  logic [31:0] x_i,
  input  logic [31:0] y_i,

  output logic        out_valid_o,  // sum_o holds the result until out_ready_i
  input  logic        out_ready_i,
  output logic [31:0] sum_o         // add(x, y) per N-ADD
);

  typedef enum logic [2:0] {
    StIdle  = 3'd0,
    StAlign = 3'd1,
    StAdd   = 3'd2,
    StNorm  = 3'd3,
    StPack  = 3'd4,
    StDone  = 3'd5
  } state_e;

  localparam logic [4:0] LastBit  = 5'd27;  // the add pass handles bits 0..27
  localparam logic [4:0] GuardBit = 5'd3;   // of the normalised sum
  localparam logic [4:0] LsbBit   = 5'd4;

  // ---------------------------------------------------------------------------
  // Registers
  // ---------------------------------------------------------------------------
  state_e      state_q, state_d;
  logic [27:0] a_q, a_d;      // x's significand; after the add pass the sum
  logic [27:0] b_q, b_d;      // y's significand, inverted for a subtraction
  // Signed biased exponent of the sum: 9 bits hold -26 .. 255, all that
  // finite operands give (their sum rounds to at most 2^128).
  logic [8:0]  exp_q, exp_d;
  logic [4:0]  cnt_q, cnt_d;    // shifts to go, bit of the add pass, rotations to go
  logic [4:0]  lead_q, lead_d;  // after a cancellation: the sum's leading one + 1

  // Operand facts taken at acceptance.
  logic x_sign_q, x_sign_d, y_sign_q, y_sign_d;
  logic x_zero_q, x_zero_d, y_zero_q, y_zero_d;  // exponent 0: zero (N-IN)
  logic x_max_q, x_max_d, y_max_q, y_max_d;      // exponent 255: inf or NaN
  logic align_x_q, align_x_d;                    // ex <= ey: x is aligned

  // Decided at the end of the alignment.
  logic       invert_q, invert_d;  // subtraction with |y| > |x|: sum = y - x
  logic       cancel_q, cancel_d;  // leading one unknown: exact sum, rotate it
  logic [1:0] shift_q, shift_d;    // normalising left shift in the add pass

  // Add pass.
  logic carry_q, carry_d;      // the full adder's carry
  logic delay1_q, delay1_d;    // sum bit one cycle ago
  logic delay2_q, delay2_d;    // and two
  logic round_q, round_d;      // sticky below the guard bit, then rounding carry
  logic guard_q, guard_d;
  logic nonzero_q, nonzero_d;  // a one seen in the sum
  logic nan_q, nan_d;          // a NaN's fraction bit seen; at pack: result NaN

  // Result sign, from pack on.
  logic sign_q, sign_d;

  // ---------------------------------------------------------------------------
  // Acceptance: exponent difference and the alignment count.
  // ---------------------------------------------------------------------------
  logic       in_sub, in_align_x, in_far;
  logic [8:0] diff_m1;  // ex - ey - 1
  logic [7:1] diff_mag;  // bit 0 does not decide >= 26
  logic [4:0] align_start;

  always_comb begin
    in_sub     = x_i[31] ^ y_i[31];
    diff_m1    = {1'b0, x_i[30:23]} + {1'b1, ~y_i[30:23]};
    in_align_x = diff_m1[8];
    // ey - ex when x is aligned, else ex - ey - 1; at 26 or more the shifts
    // stop at 26.
    diff_mag   = diff_m1[7:1] ^ {7{in_align_x}};
    in_far     = |diff_mag[7:5] || (&diff_mag[4:3] && |diff_mag[2:1]);  // >= 26
    // The alignment counts to 0, one shift per count: down from ey - ex, or
    // up from -(ex - ey) = ~(ex - ey - 1).
    if (in_far) align_start = in_align_x ? 5'd26 : 5'd6;
    else        align_start = ~diff_m1[4:0];
  end

  // ---------------------------------------------------------------------------
  // End of the alignment: the sum's top bits from the carry chain decide the
  // sign of a subtraction and the normalising shift.
  // ---------------------------------------------------------------------------
  logic        sub, cnt_zero, small_zero;
  logic [29:0] chain;     // {carry out, a_q + b_q + carry in, 1}
  logic [2:0]  sum_top;   // bits 27..25 of the sum's magnitude
  logic        align_invert, align_cancel;
  logic [1:0]  align_shift;
  logic        unused_chain;

  assign unused_chain = ^chain[25:0];

  always_comb begin
    sub        = x_sign_q ^ y_sign_q;
    cnt_zero   = cnt_q == 5'd0;
    small_zero = align_x_q ? x_zero_q : y_zero_q;
    // A subtraction forms x - y when y was aligned, else x - y - 1 (adding 1
    // below the LSB turns the low bit of b into the carry in).
    chain = {1'b0, a_q, 1'b1} + {1'b0, b_q, sub & ~align_x_q};

    // No carry out: the difference is negative, |y| >= |x| (the sum is y - x).
    align_invert = sub & ~chain[29];
    // With equal exponents and |x| > |y| these are the top bits of x - y - 1;
    // they can only move a sum of 2^25 to the cancellation path, which is
    // exact for any sum.
    sum_top      = chain[28:26] ^ {3{align_invert}};
    align_cancel = 1'b0;
    if (small_zero)      align_shift = 2'd1;  // the sum is the other operand
    else if (sum_top[2]) align_shift = 2'd0;
    else if (sum_top[1]) align_shift = 2'd1;
    else if (sum_top[0]) align_shift = 2'd2;
    else begin
      align_shift  = 2'd0;
      align_cancel = 1'b1;
    end
  end

  // ---------------------------------------------------------------------------
  // Add pass: full adder, normalising delay, rounding to nearest even.
  // ---------------------------------------------------------------------------
  logic a_bit, b_bit, sum_bit, sum_carry, norm_bit, round_in, out_bit;
  logic round_carry_out, cnt_before_guard, cnt_after_lsb, cnt_after_frac;

  always_comb begin
    // Ranges of the bit count, spelt out: comparisons map to carry chains.
    cnt_before_guard = cnt_q[4:2] == 3'b000 && cnt_q[1:0] != 2'b11;               // < 3
    cnt_after_lsb    = cnt_q[4:3] != 2'b00 || (cnt_q[2] && cnt_q[1:0] != 2'b00);  // > 4
    cnt_after_frac   = cnt_q[4:3] == 2'b11 && cnt_q[2:1] != 2'b00;                // > 25

    a_bit     = a_q[0] & ~x_zero_q;
    b_bit     = y_zero_q ? sub : b_q[0];  // a zero y is all ones inverted
    sum_bit   = a_bit ^ b_bit ^ carry_q ^ invert_q;
    sum_carry = (a_bit & b_bit) | (carry_q & (a_bit ^ b_bit));

    unique case (shift_q)
      2'd0:    norm_bit = sum_bit;
      2'd1:    norm_bit = delay1_q;
      default: norm_bit = delay2_q;
    endcase

    // Bits 0..2 of the normalised sum are sticky, 3 the guard, 4 the LSB.
    round_in = 1'b0;
    if (!cancel_q) begin
      if (cnt_q == LsbBit)    round_in = guard_q & (round_q | norm_bit);
      else if (cnt_after_lsb) round_in = round_q;
    end
    out_bit         = norm_bit ^ round_in;
    round_carry_out = cnt_q == LastBit && norm_bit && round_in;
  end

  // ---------------------------------------------------------------------------
  // Pack.
  // ---------------------------------------------------------------------------
  logic special, is_nan, overflow, underflow, kill, exp_ones, exp_zero, pack_sign;

  always_comb begin
    special   = x_max_q | y_max_q;
    is_nan    = nan_q | (x_max_q & y_max_q & sub);
    overflow  = ~exp_q[8] & &exp_q[7:0];
    underflow = exp_q[8] | exp_q == 9'd0;
    kill      = special | ~nonzero_q | overflow | underflow;

    exp_ones  = special | (nonzero_q & overflow);  // inf, NaN
    exp_zero  = ~special & (~nonzero_q | underflow);  // zero, flush
    // An infinity goes through the datapath like any operand with its
    // exponent, so its sign comes out as a finite one's would.
    if (is_nan)          pack_sign = 1'b0;
    else if (!nonzero_q) pack_sign = x_sign_q & y_sign_q;
    else                 pack_sign = invert_q ? y_sign_q : x_sign_q;
  end

  // ---------------------------------------------------------------------------
  // Next state.
  // ---------------------------------------------------------------------------
  logic exp_step, exp_down, cnt_step, cnt_down;

  always_comb begin
    state_d     = state_q;
    a_d         = a_q;
    b_d         = b_q;
    exp_d       = exp_q;
    cnt_d       = cnt_q;
    lead_d      = lead_q;
    x_sign_d    = x_sign_q;
    y_sign_d    = y_sign_q;
    x_zero_d    = x_zero_q;
    y_zero_d    = y_zero_q;
    x_max_d     = x_max_q;
    y_max_d     = y_max_q;
    align_x_d   = align_x_q;
    invert_d    = invert_q;
    cancel_d    = cancel_q;
    shift_d     = shift_q;
    carry_d     = carry_q;
    delay1_d    = 1'b0;
    delay2_d    = 1'b0;
    round_d     = 1'b0;
    guard_d     = guard_q;
    nonzero_d   = nonzero_q;
    nan_d       = nan_q;
    sign_d      = sign_q;
    exp_step    = 1'b0;
    exp_down    = 1'b0;
    cnt_step    = 1'b0;
    cnt_down    = 1'b0;

    unique case (state_q)
      StIdle: begin
        if (in_valid_i) begin
          state_d     = StAlign;
          a_d         = {2'b01, x_i[22:0], 3'b000};
          b_d         = {2'b01, y_i[22:0], 3'b000} ^ {28{in_sub}};
          exp_d       = {1'b0, in_align_x ? y_i[30:23] : x_i[30:23]};
          cnt_d       = align_start;
          x_sign_d    = x_i[31];
          y_sign_d    = y_i[31];
          x_zero_d    = x_i[30:23] == 8'h00;
          y_zero_d    = y_i[30:23] == 8'h00;
          x_max_d     = &x_i[30:23];
          y_max_d     = &y_i[30:23];
          align_x_d   = in_align_x;
        end
      end

      StAlign: begin
        nonzero_d = 1'b0;
        nan_d     = 1'b0;
        invert_d  = align_invert;
        cancel_d  = align_cancel;
        shift_d   = align_shift;
        carry_d   = sub & ~align_invert;
        if (cnt_zero) begin
          state_d = StAdd;
        end else begin
          cnt_step = 1'b1;
          cnt_down = align_x_q;
          if (align_x_q) a_d = {1'b0, a_q[27:2], a_q[1] | a_q[0]};
          else b_d = {sub, b_q[27:2], sub ? b_q[1] & b_q[0] : b_q[1] | b_q[0]};
        end
      end

      StAdd: begin
        a_d       = {out_bit, a_q[27:1]};
        b_d       = {sub, b_q[27:1]};
        carry_d   = sum_carry;
        delay1_d  = sum_bit;
        delay2_d  = delay1_q;
        nonzero_d = nonzero_q | norm_bit;
        if (cnt_before_guard) round_d = round_q | norm_bit;
        else if (cnt_q == GuardBit) begin
          round_d = round_q;
          guard_d = norm_bit;
        end else round_d = norm_bit & round_in;
        // A NaN's fraction: bits 3..25 of an operand with exponent 255, which
        // the alignment never shifts (bits 0..2 are still 0).
        if (!cnt_after_frac) begin
          nan_d = nan_q | (x_max_q & a_q[0]) | (y_max_q & (b_q[0] ^ sub));
        end
        // The sum's leading one is at p: record p + 1 on the next bit.
        if (cancel_q && delay1_q) lead_d = cnt_q;

        // Exponent: +1 - shift, +1 for a rounding carry out of bit 27. After a
        // cancellation -27 here, +(p + 1) while rotating.
        if (cancel_q) begin
          exp_step = cnt_q != 5'd0;
          exp_down = 1'b1;
        end else if (cnt_q == 5'd0) begin
          exp_step = shift_q != 2'd1;
          exp_down = shift_q == 2'd2;
        end else begin
          exp_step = round_carry_out;
        end

        if (cnt_q == LastBit) begin
          if (cancel_q && nonzero_d) begin
            state_d = StNorm;
            cnt_d   = lead_q;
          end else begin
            state_d = StPack;
          end
        end else begin
          cnt_step = 1'b1;
        end
      end

      StNorm: begin
        if (cnt_zero) begin
          state_d = StPack;
        end else begin
          a_d      = {a_q[0], a_q[27:1]};
          cnt_step = 1'b1;
          cnt_down = 1'b1;
          exp_step = 1'b1;
        end
      end

      StPack: begin
        state_d = StDone;
        nan_d   = is_nan;
        sign_d  = pack_sign;
        if (kill) a_d = '0;
        if (exp_ones) exp_d = 9'h0FF;
        else if (exp_zero) exp_d = 9'h000;
      end

      StDone: begin
        if (out_ready_i) state_d = StIdle;
      end

      default: state_d = StIdle;
    endcase

    if (exp_step) exp_d = exp_q + {{8{exp_down}}, 1'b1};
    if (cnt_step) cnt_d = cnt_q + {{4{cnt_down}}, 1'b1};
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q     <= StIdle;
      a_q         <= '0;
      b_q         <= '0;
      exp_q       <= '0;
      cnt_q       <= '0;
      lead_q      <= '0;
      x_sign_q    <= 1'b0;
      y_sign_q    <= 1'b0;
      x_zero_q    <= 1'b0;
      y_zero_q    <= 1'b0;
      x_max_q     <= 1'b0;
      y_max_q     <= 1'b0;
      align_x_q   <= 1'b0;
      invert_q    <= 1'b0;
      cancel_q    <= 1'b0;
      shift_q     <= '0;
      carry_q     <= 1'b0;
      delay1_q    <= 1'b0;
      delay2_q    <= 1'b0;
      round_q     <= 1'b0;
      guard_q     <= 1'b0;
      nonzero_q   <= 1'b0;
      nan_q       <= 1'b0;
      sign_q      <= 1'b0;
    end else begin
      state_q     <= state_d;
      a_q         <= a_d;
      b_q         <= b_d;
      exp_q       <= exp_d;
      cnt_q       <= cnt_d;
      lead_q      <= lead_d;
      x_sign_q    <= x_sign_d;
      y_sign_q    <= y_sign_d;
      x_zero_q    <= x_zero_d;
      y_zero_q    <= y_zero_d;
      x_max_q     <= x_max_d;
      y_max_q     <= y_max_d;
      align_x_q   <= align_x_d;
      invert_q    <= invert_d;
      cancel_q    <= cancel_d;
      shift_q     <= shift_d;
      carry_q     <= carry_d;
      delay1_q    <= delay1_d;
      delay2_q    <= delay2_d;
      round_q     <= round_d;
      guard_q     <= guard_d;
      nonzero_q   <= nonzero_d;
      nan_q       <= nan_d;
      sign_q      <= sign_d;
    end
  end

  // ---------------------------------------------------------------------------
  // Outputs. A NaN's fraction is 0x400000; a_q was cleared for it.
  // ---------------------------------------------------------------------------
  assign in_ready_o  = state_q == StIdle;
  assign out_valid_o = state_q == StDone;
  assign sum_o       = {sign_q, exp_q[7:0], a_q[26] | nan_q, a_q[25:4]};

  `TPU_ASSERT_NEXT(a_result_held, out_valid_o && !out_ready_i, out_valid_o && $stable(sum_o),
                   "result withdrawn or changed before it was taken")
  `TPU_ASSERT_NEXT(a_busy_after_accept, in_valid_i && in_ready_o, !in_ready_o,
                   "accepted a second addition while one is in flight")
  `TPU_ASSERT(a_idle_or_done, !(in_ready_o && out_valid_o),
              "ready for an addition while a result waits")
  // The predicted normalising shift was right: the last bit of the pass is
  // the sum's leading one.
  `TPU_ASSERT(a_shift_predicted,
              !(state_q == StAdd && cnt_q == LastBit && !cancel_q && nonzero_d && !special) ||
              norm_bit,
              "normalising shift mispredicted")
  `TPU_ASSERT(a_cancel_normalised, !(state_q == StNorm && cnt_zero && !special) || a_q[27],
              "sum not normalised after the rotation")

endmodule
