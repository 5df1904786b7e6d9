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
    p.sig  = {8'h00, 1'b1, a[6:0]} * {8'h00, 1'b1, b[6:0]};
    mul_significands = p;
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
  typedef struct packed {
    logic        nan;
    logic        inf;
    logic        inf_sign;
    logic        sign;       // of the larger operand
    logic        zero_sign;  // of an exact zero sum
    logic        eff_sub;
    logic [7:0]  big_exp;
    logic [7:0]  exp_diff;
    logic [23:0] big_sig;    // hidden bit explicit, zero for a zero operand
    logic [23:0] small_sig;
  } add_ordered_t;
  localparam int unsigned AddOrderedBits = 6 + 8 + 8 + 24 + 24;

  typedef struct packed {
    logic        nan;
    logic        inf;
    logic        inf_sign;
    logic        sign;
    logic        zero_sign;
    logic [7:0]  big_exp;
    logic [27:0] sum;  // carry, 1.23 significand, guard, round, sticky
  } add_sum_t;
  localparam int unsigned AddSumBits = 5 + 8 + 28;

  typedef struct packed {
    logic        nan;
    logic        inf;
    logic        inf_sign;
    logic        sign;
    logic        zero_sign;
    logic        zero;
    logic [9:0]  exp;   // signed biased exponent of the normalised sum
    logic [26:0] norm;  // 1.23 significand, guard, round, sticky
  } add_normalised_t;
  localparam int unsigned AddNormalisedBits = 6 + 10 + 27;

  // Stage 1: classify, order the operands by magnitude.
  function automatic add_ordered_t add_order(input logic [31:0] x, input logic [31:0] y);
    logic         x_inf, y_inf, x_nan, y_nan;
    logic [23:0]  x_sig, y_sig;
    add_ordered_t o;
    x_inf = x[30:23] == 8'hFF && x[22:0] == 23'h0;
    y_inf = y[30:23] == 8'hFF && y[22:0] == 23'h0;
    x_nan = x[30:23] == 8'hFF && x[22:0] != 23'h0;
    y_nan = y[30:23] == 8'hFF && y[22:0] != 23'h0;
    x_sig = (x[30:23] == 8'h00) ? 24'h0 : {1'b1, x[22:0]};
    y_sig = (y[30:23] == 8'h00) ? 24'h0 : {1'b1, y[22:0]};

    o.nan      = x_nan || y_nan || (x_inf && y_inf && (x[31] != y[31]));
    o.inf      = x_inf || y_inf;
    o.inf_sign = x_inf ? x[31] : y[31];
    // An exact zero sum is +0 unless both operands are negative (zeros).
    o.zero_sign = x[31] && y[31];
    o.eff_sub   = x[31] != y[31];

    if ({x[30:23], x_sig[22:0]} >= {y[30:23], y_sig[22:0]}) begin
      o.sign      = x[31];
      o.big_exp   = x[30:23];
      o.exp_diff  = x[30:23] - y[30:23];
      o.big_sig   = x_sig;
      o.small_sig = y_sig;
    end else begin
      o.sign      = y[31];
      o.big_exp   = y[30:23];
      o.exp_diff  = y[30:23] - x[30:23];
      o.big_sig   = y_sig;
      o.small_sig = x_sig;
    end
    add_order = o;
  endfunction

  // Stage 2: align the smaller significand (3 extra bits: guard, round,
  // sticky) and add or subtract.
  function automatic add_sum_t add_align(input add_ordered_t o);
    logic [4:0]  shift;
    logic [53:0] wide;
    logic [26:0] small_aligned;
    add_sum_t    sum;
    // Beyond 27 places the smaller operand only contributes its sticky bit.
    shift         = (o.exp_diff > 8'd27) ? 5'd27 : o.exp_diff[4:0];
    wide          = {o.small_sig, 3'b000, 27'h0} >> shift;
    small_aligned = {wide[53:28], wide[27] | (wide[26:0] != 27'h0)};

    sum.nan       = o.nan;
    sum.inf       = o.inf;
    sum.inf_sign  = o.inf_sign;
    sum.sign      = o.sign;
    sum.zero_sign = o.zero_sign;
    sum.big_exp   = o.big_exp;
    if (o.eff_sub) sum.sum = {1'b0, o.big_sig, 3'b000} - {1'b0, small_aligned};
    else           sum.sum = {1'b0, o.big_sig, 3'b000} + {1'b0, small_aligned};
    add_align = sum;
  endfunction

  // Stage 3: normalise so that bit 26 is the leading one.
  function automatic add_normalised_t add_normalise(input add_sum_t s);
    logic [4:0]      lead_zeros;
    add_normalised_t n;
    lead_zeros = tpu_pkg::lzc27(s.sum[26:0]);

    n.nan       = s.nan;
    n.inf       = s.inf;
    n.inf_sign  = s.inf_sign;
    n.sign      = s.sign;
    n.zero_sign = s.zero_sign;
    n.zero      = s.sum == 28'h0;
    if (s.sum[27]) begin
      n.exp  = {2'b00, s.big_exp} + 10'd1;
      n.norm = {s.sum[27:2], s.sum[1] | s.sum[0]};
    end else begin
      n.exp  = {2'b00, s.big_exp} - {5'd0, lead_zeros};
      n.norm = s.sum[26:0] << lead_zeros;
    end
    add_normalise = n;
  endfunction

  // Stage 4: round to nearest even, then overflow and flush by the exponent.
  function automatic logic [31:0] add_round(input add_normalised_t n);
    logic        round_up;
    logic [24:0] rounded_sig;
    logic [9:0]  rounded_exp;
    round_up    = n.norm[2] && (n.norm[1] || n.norm[0] || n.norm[3]);
    rounded_sig = {1'b0, n.norm[26:3]} + {24'h0, round_up};
    rounded_exp = rounded_sig[24] ? n.exp + 10'd1 : n.exp;

    if (n.nan) begin
      add_round = tpu_pkg::Fp32CanonicalNan;
    end else if (n.inf) begin
      add_round = {n.inf_sign, 8'hFF, 23'h0};
    end else if (n.zero) begin
      add_round = {n.zero_sign, 31'h0};
    end else if (rounded_exp[9] || rounded_exp == 10'd0) begin
      add_round = {n.sign, 31'h0};
    end else if (rounded_exp >= 10'd255) begin
      add_round = {n.sign, 8'hFF, 23'h0};
    end else begin
      // A carry out of rounding leaves a zero fraction, so bits [22:0] are
      // right in both cases.
      add_round = {n.sign, rounded_exp[7:0], rounded_sig[22:0]};
    end
  endfunction

endpackage
