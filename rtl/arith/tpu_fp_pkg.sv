// The multiply-add arithmetic (N-IN, N-MUL, N-ADD) as functions, one per
// pipeline stage, with the values that cross each stage boundary as packed
// structs. The arithmetic units (tpu_bf16_mul, tpu_fp32_add) and the systolic
// array (which keeps each stage's state for all its cells in one array, so
// that a simulator compiles the cell once) call the same functions: one
// description of the arithmetic, for simulation and synthesis alike.
package tpu_fp_pkg;

  // ---------------------------------------------------------------------------
  // bfloat16 x bfloat16 -> fp32. The product of two 8-bit significands has at
  // most 16 bits, so it always fits fp32's 24-bit significand exactly: there is
  // no rounding, only normalisation by at most one place, overflow to infinity
  // and flush to zero.
  // ---------------------------------------------------------------------------
  typedef struct packed {
    logic        sign;
    logic        nan;
    logic        inf;
    logic        zero;
    logic [9:0]  exp;  // biased exponent before normalisation, signed
    logic [15:0] sig;  // 1.7 x 1.7 -> 2.14 fixed point, in [2^14, 2^16)
  } mul_product_t;
  localparam int unsigned MulProductBits = 4 + 10 + 16;

  // Stage 1: classify (N-IN: exponent 0 is zero, subnormals included), multiply.
  function automatic mul_product_t mul_significands(input logic [15:0] a, input logic [15:0] b);
    mul_product_t p;
    p     = mul_classify(a, b);
    p.sig = {8'h00, mul_operand(a[6:0])} * {8'h00, mul_operand(b[6:0])};
    mul_significands = p;
  endfunction

  // A significand with its hidden bit: what stage 1 multiplies.
  function automatic logic [7:0] mul_operand(input logic [6:0] fraction);
    mul_operand = {1'b1, fraction};
  endfunction

  // Stage 1 without the multiply (sig is 0), for a cell that multiplies
  // other operands in the same multiplier (tpu_mac_pkg).
  function automatic mul_product_t mul_classify(input logic [15:0] a, input logic [15:0] b);
    logic         a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
    mul_product_t p;
    a_zero = a[14:7] == 8'h00;
    b_zero = b[14:7] == 8'h00;
    a_inf  = a[14:7] == 8'hFF && a[6:0] == 7'h00;
    b_inf  = b[14:7] == 8'hFF && b[6:0] == 7'h00;
    a_nan  = a[14:7] == 8'hFF && a[6:0] != 7'h00;
    b_nan  = b[14:7] == 8'hFF && b[6:0] != 7'h00;

    p.sign = a[15] ^ b[15];
    p.nan  = a_nan || b_nan || (a_inf && b_zero) || (a_zero && b_inf);
    p.inf  = a_inf || b_inf;
    p.zero = a_zero || b_zero;
    p.exp  = {2'b00, a[14:7]} + {2'b00, b[14:7]} - 10'd127;
    p.sig  = '0;
    mul_classify = p;
  endfunction

  // Stage 2: normalise by one place, then overflow (>= 2^128) and flush
  // (< 2^-126) by the final biased exponent.
  function automatic logic [31:0] mul_normalise(input mul_product_t p);
    logic [9:0]  norm_exp;
    logic [22:0] norm_frac;
    if (p.sig[15]) begin
      norm_exp  = p.exp + 10'd1;
      norm_frac = {p.sig[14:0], 8'h00};
    end else begin
      norm_exp  = p.exp;
      norm_frac = {p.sig[13:0], 9'h000};
    end

    if (p.nan) begin
      mul_normalise = tpu_pkg::Fp32CanonicalNan;
    end else if (p.inf) begin
      mul_normalise = {p.sign, 8'hFF, 23'h0};
    end else if (p.zero || norm_exp[9] || norm_exp == 10'd0) begin
      mul_normalise = {p.sign, 31'h0};
    end else if (norm_exp >= 10'd255) begin
      mul_normalise = {p.sign, 8'hFF, 23'h0};
    end else begin
      mul_normalise = {p.sign, norm_exp[7:0], norm_frac};
    end
  endfunction

  // ---------------------------------------------------------------------------
  // fp32 + fp32: IEEE binary32 addition, round to nearest even, results below
  // 2^-126 flushed to a zero of the result's sign, canonical NaN. Operands with
  // exponent 0 are zeros (N-IN): their fraction is ignored. A zero operand goes
  // through the normal path with a zero significand, so only NaN and infinity
  // need a bypass. Sums below 2^-126 are always exact (both operands are
  // multiples of 2^-149), so flushing them never interacts with rounding.
  // ---------------------------------------------------------------------------
  // The values between the adder's stages fit 64 bits, so that a simulator keeps
  // each in one machine word. What decides a sum besides its significand
  // (add_class_t) passes every stage unchanged. Flags that follow from it are
  // not carried: an infinite sum has the sign of the larger operand (an
  // infinity is larger than any finite value), and an exact zero sum is -0
  // only when both operands are negative (same signs, the larger negative).
  typedef struct packed {
    logic nan;
    logic inf;
    logic sign;     // of the larger operand
    logic eff_sub;  // the signs differ
  } add_class_t;
  localparam int unsigned AddClassBits = 4;

  typedef struct packed {
    add_class_t  cls;
    logic [7:0]  big_exp;
    logic [4:0]  shift;      // exponent difference, at most 27: beyond it only the sticky bit
    logic [22:0] big_frac;   // the hidden bit follows from big_exp (add_align)
    logic [23:0] small_sig;  // hidden bit explicit, zero for a zero operand
  } add_ordered_t;
  localparam int unsigned AddOrderedBits = AddClassBits + 8 + 5 + 23 + 24;

  typedef struct packed {
    add_class_t  cls;
    logic [7:0]  big_exp;
    logic [27:0] sum;  // carry, 1.23 significand, guard, round, sticky
  } add_sum_t;
  localparam int unsigned AddSumBits = AddClassBits + 8 + 28;

  typedef struct packed {
    add_class_t  cls;
    logic        zero;
    logic [9:0]  exp;   // signed biased exponent of the normalised sum
    logic [26:0] norm;  // 1.23 significand, guard, round, sticky
  } add_normalised_t;
  localparam int unsigned AddNormalisedBits = AddClassBits + 1 + 10 + 27;

  // The stages choose values with ?: rather than assign them in branches of an
  // if: the simulator then compiles data-dependent choices to conditional moves,
  // not to branches that random operands mispredict half of the time.

  // Beyond 27 places the smaller operand only contributes its sticky bit.
  function automatic logic [4:0] clamp_shift(input logic [7:0] exp_diff);
    clamp_shift = exp_diff > 8'd27 ? 5'd27 : exp_diff[4:0];
  endfunction

  // Stage 1: classify, order the operands by magnitude. Comparing the bits
  // below the sign orders by magnitude; two operands with exponent 0 are both
  // zeros (N-IN), whose order does not matter.
  function automatic add_ordered_t add_order(input logic [31:0] x, input logic [31:0] y);
    logic         x_max, y_max, x_big;
    logic [31:0]  larger;
    logic [30:0]  smaller;  // its sign is not needed
    logic [7:0]   x_over_y, y_over_x;
    add_ordered_t o;
    x_max   = x[30:23] == 8'hFF;
    y_max   = y[30:23] == 8'hFF;
    x_big   = x[30:0] >= y[30:0];
    larger  = x_big ? x : y;
    smaller = x_big ? y[30:0] : x[30:0];
    // Both exponent differences beside the comparison, not after it.
    x_over_y = x[30:23] - y[30:23];
    y_over_x = y[30:23] - x[30:23];

    o.cls.nan     = (x_max && x[22:0] != 23'h0) || (y_max && y[22:0] != 23'h0) ||
                    (x_max && y_max && x[31] != y[31]);
    o.cls.inf     = x_max || y_max;
    o.cls.sign    = larger[31];
    o.cls.eff_sub = x[31] != y[31];
    o.big_exp     = larger[30:23];
    o.shift       = x_big ? clamp_shift(x_over_y) : clamp_shift(y_over_x);
    o.big_frac    = larger[22:0];
    o.small_sig   = smaller[30:23] == 8'h00 ? 24'h0 : {1'b1, smaller[22:0]};
    add_order = o;
  endfunction

  // Stage 2: align the smaller significand (3 extra bits: guard, round,
  // sticky) and add or subtract.
  function automatic add_sum_t add_align(input add_ordered_t o);
    logic [23:0] big_sig;
    logic [53:0] wide;
    logic [27:0] small_aligned, sum_add, sum_sub;
    add_sum_t    sum;
    big_sig       = o.big_exp == 8'h00 ? 24'h0 : {1'b1, o.big_frac};
    wide          = {o.small_sig, 3'b000, 27'h0} >> o.shift;
    small_aligned = {1'b0, wide[53:28], wide[27] | (wide[26:0] != 27'h0)};

    sum.cls     = o.cls;
    sum.big_exp = o.big_exp;
    // Both, side by side, then one chosen: one carry chain deep, not a negation then an add.
    sum_add     = {1'b0, big_sig, 3'b000} + small_aligned;
    sum_sub     = {1'b0, big_sig, 3'b000} - small_aligned;
    sum.sum     = o.cls.eff_sub ? sum_sub : sum_add;
    add_align = sum;
  endfunction

  // Stage 3: normalise so that bit 26 is the leading one. The sum is counted
  // and shifted with its carry on top: no leading zero means a carry, which
  // moves the point one place the other way, its lowest bit joining the sticky
  // bit. A zero sum has no leading one; stage 4 knows it by its flag.
  function automatic add_normalised_t add_normalise(input add_sum_t s);
    logic [27:0]     shifted;
    logic [4:0]      lead_zeros;
    add_normalised_t n;
    lead_zeros = tpu_pkg::lzc32({s.sum, 3'b000});
    shifted    = s.sum << lead_zeros;

    n.cls  = s.cls;
    n.zero = s.sum == 28'h0;
    n.exp  = {2'b00, s.big_exp} + 10'd1 - {5'd0, lead_zeros};
    n.norm = {shifted[27:2], shifted[1] | shifted[0]};
    add_normalise = n;
  endfunction

  // Stage 4: round to nearest even, then overflow and flush by the exponent.
  function automatic logic [31:0] add_round(input add_normalised_t n);
    logic        round_up;
    logic [24:0] rounded_sig;
    logic [9:0]  rounded_exp;
    round_up    = n.norm[2] && (n.norm[1] || n.norm[0] || n.norm[3]);
    rounded_sig = {1'b0, n.norm[26:3]} + {24'h0, round_up};
    rounded_exp = n.exp + {9'h0, rounded_sig[24]};

    if (n.cls.nan) begin
      add_round = tpu_pkg::Fp32CanonicalNan;
    end else if (n.cls.inf) begin
      add_round = {n.cls.sign, 8'hFF, 23'h0};
    end else if (n.zero) begin
      add_round = {n.cls.sign && !n.cls.eff_sub, 31'h0};
    end else if (rounded_exp[9] || rounded_exp == 10'd0) begin
      add_round = {n.cls.sign, 31'h0};
    end else if (rounded_exp >= 10'd255) begin
      add_round = {n.cls.sign, 8'hFF, 23'h0};
    end else begin
      // A carry out of rounding leaves a zero fraction, so bits [22:0] are
      // right in both cases.
      add_round = {n.cls.sign, rounded_exp[7:0], rounded_sig[22:0]};
    end
  endfunction

  // ---------------------------------------------------------------------------
  // fp32 x fp32 (ELTWISE's mul, N-VEC): operands by N-IN, the IEEE product
  // rounded to nearest even, then results below 2^-126 flushed to a zero of
  // the product's sign; canonical NaN. The exact product of two 24-bit
  // significands has 48 bits; IEEE would round a product below 2^-126 on the
  // subnormal grid (2^-149), which reaches 2^-126 only from
  // [2^-126 - 2^-150, 2^-126): exponent 0 with a fraction of all ones.
  // ---------------------------------------------------------------------------
  function automatic logic [31:0] fp32_mul(input logic [31:0] x, input logic [31:0] y);
    logic        x_zero, y_zero, x_max, y_max, x_nan, y_nan, sign, top, round_up;
    logic [47:0] product;
    logic [22:0] kept;     // the fraction below the leading one
    logic        guard, sticky;
    logic [23:0] rounded;  // the kept fraction rounded, its carry on top
    logic [9:0]  exp_pre, exp_post;  // signed biased exponents, before and after rounding
    x_zero  = x[30:23] == 8'h00;
    y_zero  = y[30:23] == 8'h00;
    x_max   = x[30:23] == 8'hFF;
    y_max   = y[30:23] == 8'hFF;
    x_nan   = x_max && x[22:0] != 23'h0;
    y_nan   = y_max && y[22:0] != 23'h0;
    sign    = x[31] ^ y[31];
    product = {24'h0, 1'b1, x[22:0]} * {24'h0, 1'b1, y[22:0]};
    top     = product[47];
    kept    = top ? product[46:24] : product[45:23];
    guard   = top ? product[23] : product[22];
    sticky  = top ? product[22:0] != 23'h0 : product[21:0] != 22'h0;
    exp_pre = {2'b00, x[30:23]} + {2'b00, y[30:23]} - 10'd127 + {9'h0, top};
    round_up = guard && (sticky || kept[0]);
    rounded  = {1'b0, kept} + {23'h0, round_up};
    exp_post = exp_pre + {9'h0, rounded[23]};

    if (x_nan || y_nan || (x_max && y_zero) || (y_max && x_zero)) begin
      fp32_mul = tpu_pkg::Fp32CanonicalNan;
    end else if (x_max || y_max) begin
      fp32_mul = {sign, 8'hFF, 23'h0};
    end else if (x_zero || y_zero) begin
      fp32_mul = {sign, 31'h0};
    end else if (exp_pre == 10'd0 && kept == 23'h7FFFFF) begin
      fp32_mul = {sign, 8'h01, 23'h0};
    end else if (exp_pre[9] || exp_pre == 10'd0) begin
      fp32_mul = {sign, 31'h0};
    end else if (exp_post >= 10'd255) begin
      fp32_mul = {sign, 8'hFF, 23'h0};
    end else begin
      // A carry out of rounding leaves a zero fraction: bits [22:0] are right either way.
      fp32_mul = {sign, exp_post[7:0], rounded[22:0]};
    end
  endfunction

  // The order of fp32 values after N-IN as an unsigned key: -0 below +0. Not for NaN.
  function automatic logic [31:0] fp32_order_key(input logic [31:0] x);
    logic [31:0] canonical;
    canonical = x[30:23] == 8'h00 ? {x[31], 31'h0} : x;
    fp32_order_key = canonical[31] ? ~canonical : {1'b1, canonical[30:0]};
  endfunction

  // max and min (ELTWISE, N-VEC): NaN if either operand is, max(-0, +0) = +0 and
  // min(-0, +0) = -0; a subnormal operand counts as its zero (N-IN) and a zero
  // or subnormal result is that zero.
  function automatic logic [31:0] fp32_max_min(input logic [31:0] x, input logic [31:0] y,
                                               input logic want_max);
    logic        nan, x_larger;
    logic [31:0] larger, smaller;
    nan      = (x[30:23] == 8'hFF && x[22:0] != 23'h0) || (y[30:23] == 8'hFF && y[22:0] != 23'h0);
    x_larger = fp32_order_key(x) >= fp32_order_key(y);
    larger   = x_larger ? x : y;
    smaller  = x_larger ? y : x;
    fp32_max_min = want_max ? larger : smaller;
    if (fp32_max_min[30:23] == 8'h00) fp32_max_min = {fp32_max_min[31], 31'h0};
    if (nan) fp32_max_min = tpu_pkg::Fp32CanonicalNan;
  endfunction

  // int32 to fp32 (ELTWISE quant and dequant with I32, N-VEC): the two's complement value
  // rounded to 24 significant bits, nearest even; exact below 2^24 in magnitude.
  function automatic logic [31:0] fp32_from_int32(input logic [31:0] x);
    logic [31:0] magnitude;
    logic [30:0] normalised;  // the bits below the leading one, from bit 30 down
    logic [4:0]  lead;  // the leading one's position
    logic        guard, sticky, round_up;
    logic [23:0] rounded;  // the kept fraction (below the leading one) rounded, its carry on top
    logic [7:0]  exponent;
    magnitude = x[31] ? 32'(-x) : x;  // 2^31 for -2^31: unsigned
    lead = '0;
    for (int b = 0; b < 32; b++) begin
      if (magnitude[b]) lead = 5'(b);
    end
    normalised = 31'(magnitude << (5'd31 - lead));  // the leading one shifted out at bit 31
    guard    = normalised[7];
    sticky   = normalised[6:0] != 7'h0;
    round_up = guard && (sticky || normalised[8]);
    rounded  = {1'b0, normalised[30:8]} + {23'h0, round_up};
    exponent = 8'd127 + {3'b000, lead} + {7'h0, rounded[23]};
    fp32_from_int32 = magnitude == 32'h0 ? 32'h0 : {x[31], exponent, rounded[22:0]};
  endfunction

  // fp32 to int32 (ELTWISE quant, N-VEC): after N-IN, rounded to an integer, ties to even; past
  // the int32 range (infinities included) its nearest end, NaN 0.
  function automatic logic [31:0] fp32_to_int32(input logic [31:0] x);
    logic        nan;
    logic [8:0]  shift;      // of the significand right, from 2^23 ones to units
    logic [63:0] fixed;      // |x| with 32 fraction bits, where |x| < 2^23
    logic [31:0] magnitude;  // |x| rounded, below 2^31
    logic        round_up;
    nan   = x[30:23] == 8'hFF && x[22:0] != 23'h0;
    shift = 9'd150 - {1'b0, x[30:23]};
    fixed = {8'h0, 1'b1, x[22:0], 32'h0} >> (shift > 9'd63 ? 9'd63 : shift);
    round_up  = fixed[31] && (fixed[30:0] != 31'h0 || fixed[32]);
    magnitude = x[30:23] >= 8'd150 ? {1'b0, 1'b1, x[22:0], 7'h0} >> (8'd157 - x[30:23])
                                   : fixed[63:32] + {31'h0, round_up};
    if (nan || x[30:23] < 8'd126) begin
      fp32_to_int32 = 32'h0;  // NaN, and magnitudes below 1/2 (a subnormal is its zero)
    end else if (x[30:23] >= 8'd158) begin
      fp32_to_int32 = x[31] ? 32'h8000_0000 : 32'h7FFF_FFFF;
    end else begin
      fp32_to_int32 = x[31] ? 32'(-magnitude) : magnitude;
    end
  endfunction

endpackage
