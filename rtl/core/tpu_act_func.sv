// Activation function unit (N-IN, N-ACT): y = f(x) for one fp32 value per
// cycle, f chosen per value by func_i (the ISA's func field):
//   0 none, 1 relu, 2 relu6, 3 leaky relu (slope alpha_i, bf16), 4 sigmoid,
//   5 tanh, 6 gelu; with VectorFunctions 7 exp, 8 reciprocal, 9 reciprocal
//   square root; the illegal codes (7..15, or 10..15) give the identity.
// The piecewise-linear functions are exact. The others are
// table-driven fixed-point approximations, specified bit for bit in
// docs/numerics.md, section Activation functions and modelled by sw/numerics/activation.cpp; the tables are in
// tpu_act_tables_pkg (generated). Every multiplying function ends in one
// shared step: the exact product of two 1.24 operands, scaled by a power of
// two, rounded like an IEEE binary32 result and flushed below 2^-126.
//
// Pipeline: tpu_pkg::ActFuncLatency = 5 registers, each stage at most one
// multiplier and an adder deep; func_i, alpha_i and x_i are sampled together
// and y_o is registered. Registers advance only while en_i is high. With
// SplitStages, for the clock rates of an FPGA, every stage has a second
// register: after its multipliers (before the multiplier in stage 1), so that
// a multiplication has a cycle of its own; stage 4 a third, after the shift
// by n, and stage 5 a third and a fourth, after the leading-zero count and
// after the shift that normalises: tpu_pkg::ActFuncSplitLatency = 13 registers.
//   1: classify, exact results (bypass), |x| to 8.22 fixed point, |x| * K,
//      gelu's Mills table entries
//   2: gelu: square + Mills term; tanh below 2^-4: 1 - x^2/3; exp of x >= 0:
//      2^w read as 2^c * 2^-(c - w), c = ceil(w)
//   3: 2^-w = 2^-n * u, u from the exp2 table
//   4: v = 2^-w (the reciprocals: v = x's significand - 1), r = 1/(1 + v)
//      from the reciprocal table (or 1/sqrt from its own), 1 - v; pick the
//      two operands of the product
//   5: multiply, normalise, round, flush
module tpu_act_func #(
  parameter bit SplitStages = 1'b0,
  // exp, reciprocal and reciprocal square root (the functions of a core with
  // a vector unit); without them their codes are illegal, and the unit has
  // no logic of theirs.
  parameter bit VectorFunctions = 1'b1
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        en_i,
  input  logic [3:0]  func_i,
  input  logic [15:0] alpha_i,
  input  logic [31:0] x_i,
  output logic [31:0] y_o
);

  // Function codes: the ISA's (tpu_isa_pkg, generated from rtl/defs/isa.toml).
  localparam logic [3:0] FuncLeaky   = tpu_isa_pkg::FuncLeaky;
  localparam logic [3:0] FuncSigmoid = tpu_isa_pkg::FuncSigmoid;
  localparam logic [3:0] FuncTanh    = tpu_isa_pkg::FuncTanh;
  localparam logic [3:0] FuncGelu    = tpu_isa_pkg::FuncGelu;
  localparam logic [3:0] FuncExp     = tpu_isa_pkg::FuncExp;
  localparam logic [3:0] FuncRecip   = tpu_isa_pkg::FuncRecip;
  localparam logic [3:0] FuncRsqrt   = tpu_isa_pkg::FuncRsqrt;

  // The operands of the final product, chosen in stage 1 from the function
  // and the sign of x (u = 2^-w, r = 1/(1 + u), x's significand s, B an
  // operand computed before stage 4). The last five are the vector
  // functions'; their reciprocals read the table at v = s - 1, not at u.
  localparam logic [3:0] ProdRecip      = 4'd0;   // sigmoid, x >= 0: r
  localparam logic [3:0] ProdExp2Recip  = 4'd1;   // sigmoid, x < 0: u * r
  localparam logic [3:0] ProdDiffRecip  = 4'd2;   // tanh: (1 - u) * r
  localparam logic [3:0] ProdInputDiff  = 4'd3;   // gelu, x >= 0: s * (1 - u)
  localparam logic [3:0] ProdInputExp2  = 4'd4;   // gelu, x < 0: s * u
  localparam logic [3:0] ProdInputB     = 4'd5;   // tanh series, leaky: s * B
  localparam logic [3:0] ProdExp2       = 4'd6;   // exp, x < 0: u
  localparam logic [3:0] ProdExp2Up     = 4'd7;   // exp, x >= 0: u, w read as c - w
  localparam logic [3:0] ProdSigRecip   = 4'd8;   // reciprocal: 1/s
  localparam logic [3:0] ProdSigRsqrt   = 4'd9;   // 1/sqrt: 1/sqrt(s), x's exponent even
  localparam logic [3:0] ProdSigRsqrt2  = 4'd10;  // ... odd (unbiased): 1/sqrt(2 s)

  // The five tpu_pipe_reg stages below (thirteen with SplitStages) are the
  // latencies the package advertises.
  if (tpu_pkg::ActFuncLatency != 5 || tpu_pkg::ActFuncSplitLatency != 13) begin : g_bad_latency
    $error("tpu_act_func: tpu_pkg::ActFuncLatency and ActFuncSplitLatency must be 5 and 13, the depths of the pipeline");
  end

  localparam logic [24:0] One = 25'h100_0000;  // 1.0 in 1.24
  localparam logic [29:0] ArgMax = '1;         // largest 8.22 value
  // What passes from stage to stage: bypass, its value, sign, product kind,
  // scale, x's significand, operand B.
  localparam int unsigned CarryWidth = 1 + 32 + 1 + 4 + 11 + 25 + 25;

  // ---------------------------------------------------------------------------
  // Stage 1: classify x and alpha (N-IN), results that need no arithmetic,
  // and the scaled argument |x| * K in 8.22 fixed point.
  // ---------------------------------------------------------------------------
  logic        x_sign, x_zero;
  logic [7:0]  x_exp;
  logic [7:0]  abs_shift;
  logic        abs_big;           // |x| >= 256 (infinity included)
  logic [29:0] abs_fixed;         // |x| in 8.22, truncated (meaningless when abs_big)
  logic        tanh_series;       // |x| < 2^-4
  logic [25:0] scale_const;       // K, 24 fraction bits

  logic        s1_bypass;         // the result is s1_bypass_value
  logic [31:0] s1_bypass_value;
  logic        s1_sign;           // sign of the product result
  logic [3:0]  s1_prod;
  logic [10:0] s1_scale;          // power of two of the product, two's complement
  logic [24:0] s1_sig;            // x's significand in 1.24, 0 for zero
  logic [24:0] s1_operand_b;      // alpha's significand in 1.24 (leaky)
  logic [29:0] s1_scaled;         // |x| * K in 8.22, saturated
  logic [25:0] s1_abs;            // |x| in 4.22 (gelu: |x| < 16)
  logic        s1_gelu, s1_series;
  logic [10:0] rsqrt_exponent;    // x's unbiased exponent, two's complement

  always_comb begin
    x_sign  = x_i[31];
    x_exp   = x_i[30:23];
    x_zero  = x_exp == 8'h00;
    s1_sig  = x_zero ? 25'h0 : {1'b1, x_i[22:0], 1'b0};

    s1_operand_b = {1'b1, alpha_i[6:0], 17'h0};

    // |x| * 2^22 = {significand, 6'b0} * 2^(exponent - 134).
    abs_big   = x_exp > 8'd134;
    abs_shift = 8'd134 - x_exp;
    abs_fixed = {s1_sig[24:1], 6'h0} >> abs_shift;
    s1_abs    = abs_fixed[25:0];
    tanh_series = x_exp < 8'd123;
    rsqrt_exponent = {3'b000, x_exp} - 11'd127;

    // Which product ends the computation, and its power of two.
    s1_prod     = ProdInputB;
    s1_scale    = {3'b000, x_exp} - 11'd127;
    s1_sign     = x_sign;
    s1_gelu     = 1'b0;
    s1_series   = 1'b0;
    scale_const = '0;
    unique case (func_i)
      FuncSigmoid: begin
        s1_prod     = x_sign ? ProdExp2Recip : ProdRecip;
        s1_scale    = '0;
        s1_sign     = 1'b0;
        scale_const = tpu_act_tables_pkg::Log2E;
      end
      FuncTanh: begin
        if (tanh_series) begin
          s1_series   = 1'b1;
          scale_const = tpu_act_tables_pkg::InvSqrt3;
        end else begin
          s1_prod     = ProdDiffRecip;
          s1_scale    = '0;
          scale_const = tpu_act_tables_pkg::TwoLog2E;
        end
      end
      FuncGelu: begin
        s1_prod     = x_sign ? ProdInputExp2 : ProdInputDiff;
        s1_gelu     = 1'b1;
        scale_const = tpu_act_tables_pkg::GeluScale;
      end
      FuncLeaky: begin
        s1_scale = {3'b000, x_exp} + {3'b000, alpha_i[14:7]} - 11'd254;
        s1_sign  = x_sign ^ alpha_i[15];
      end
      FuncExp: begin
        if (VectorFunctions) begin
          s1_prod     = x_sign ? ProdExp2 : ProdExp2Up;
          s1_scale    = '0;
          s1_sign     = 1'b0;
          scale_const = tpu_act_tables_pkg::Log2E;
        end
      end
      FuncRecip: begin
        if (VectorFunctions) begin
          s1_prod  = ProdSigRecip;
          s1_scale = 11'd127 - {3'b000, x_exp};
        end
      end
      FuncRsqrt: begin
        // x = s * 2^(2q + p): 1/sqrt(x) = 2^-q / sqrt(s * 2^p).
        if (VectorFunctions) begin
          s1_prod  = rsqrt_exponent[0] ? ProdSigRsqrt2 : ProdSigRsqrt;
          s1_scale = 11'd0 - {rsqrt_exponent[10], rsqrt_exponent[10:1]};
          s1_sign  = 1'b0;
        end
      end
      default: ;
    endcase

    // Exact results (tpu_act_pkg), which skip the approximation.
    {s1_bypass, s1_bypass_value} = tpu_act_pkg::exact_result(func_i, x_i, alpha_i,
                                                             VectorFunctions);
  end

  // With SplitStages, the multiplication |x| * K gets a cycle of its own.
  logic        m1_bypass, m1_sign, m1_gelu, m1_series, m1_abs_big;
  logic [31:0] m1_bypass_value;
  logic [3:0]  m1_prod;
  logic [10:0] m1_scale;
  logic [24:0] m1_sig, m1_operand_b;
  logic [25:0] m1_abs, m1_scale_const;
  logic [29:0] m1_abs_fixed;
  logic [55:0] scaled_product;

  tpu_pipe_reg #(.Width(CarryWidth + 26 + 2 + 1 + 30 + 26), .Enable(SplitStages)) u_split_scale (
    .clk_i, .rst_ni, .en_i,
    .data_i({s1_bypass, s1_bypass_value, s1_sign, s1_prod, s1_scale, s1_sig, s1_operand_b,
             s1_abs, s1_gelu, s1_series, abs_big, abs_fixed, scale_const}),
    .data_o({m1_bypass, m1_bypass_value, m1_sign, m1_prod, m1_scale, m1_sig, m1_operand_b,
             m1_abs, m1_gelu, m1_series, m1_abs_big, m1_abs_fixed, m1_scale_const})
  );

  // gelu's Mills node and its table entries are looked up here, beside the
  // multiplication, so that stage 2 starts its multipliers from registers.
  logic [7:0]  mills_index;
  logic [16:0] mills_fraction;
  logic [24:0] mills_base;
  logic [17:0] mills_delta;

  always_comb begin
    scaled_product = {26'h0, m1_abs_fixed} * {30'h0, m1_scale_const};
    s1_scaled = (m1_abs_big || scaled_product[55:54] != 2'b00) ? ArgMax : scaled_product[53:24];

    // Nodes every 1/32 on [0, 4), 1/16 on [4, 8), 1/8 on [8, 16); the
    // fraction is the 17 bits below the node step.
    if (m1_abs[25]) begin
      mills_index    = {2'b11, m1_abs[24:19]};
      mills_fraction = m1_abs[18:2];
    end else if (m1_abs[24]) begin
      mills_index    = {2'b10, m1_abs[23:18]};
      mills_fraction = m1_abs[17:1];
    end else begin
      mills_index    = {1'b0, m1_abs[23:17]};
      mills_fraction = m1_abs[16:0];
    end
    mills_base  = tpu_act_tables_pkg::mills_base(mills_index);
    mills_delta = tpu_act_tables_pkg::mills_delta(mills_index);
  end

  logic        s2_bypass, s2_sign, s2_gelu, s2_series;
  logic [31:0] s2_bypass_value;
  logic [3:0]  s2_prod;
  logic [10:0] s2_scale;
  logic [24:0] s2_sig, s2_operand_b;
  logic [29:0] s2_scaled;
  logic [16:0] s2_mills_fraction;
  logic [24:0] s2_mills_base;
  logic [17:0] s2_mills_delta;

  tpu_pipe_reg #(.Width(CarryWidth + 30 + 17 + 25 + 18 + 2)) u_stage_scaled (
    .clk_i, .rst_ni, .en_i,
    .data_i({m1_bypass, m1_bypass_value, m1_sign, m1_prod, m1_scale, m1_sig, m1_operand_b,
             s1_scaled, mills_fraction, mills_base, mills_delta, m1_gelu, m1_series}),
    .data_o({s2_bypass, s2_bypass_value, s2_sign, s2_prod, s2_scale, s2_sig, s2_operand_b,
             s2_scaled, s2_mills_fraction, s2_mills_base, s2_mills_delta, s2_gelu, s2_series})
  );

  // ---------------------------------------------------------------------------
  // Stage 2: gelu's exponent w = (|x| sqrt(log2(e)/2))^2 + M(|x|), with the
  // Mills term M interpolated in its table; tanh's series factor 1 - x^2/3.
  // Sigmoid and tanh pass |x| * K on as w.
  // ---------------------------------------------------------------------------
  logic [51:0] square;           // s2_scaled[25:0]^2, 16.44
  logic [34:0] mills_step;
  logic [24:0] mills;            // M(|x|) in 3.22

  logic [29:0] s2_w;             // exponent of 2^-w in 8.22
  logic [24:0] s2_operand_b_next;
  logic [10:0] s2_scale_next;
  logic        exp_up;            // exp of x >= 0

  always_comb begin
    square     = {26'h0, s2_scaled[25:0]} * {26'h0, s2_scaled[25:0]};
    mills_step = {17'h0, s2_mills_delta} * {18'h0, s2_mills_fraction};
  end

  logic        m2_bypass, m2_sign, m2_gelu, m2_series;
  logic [31:0] m2_bypass_value;
  logic [3:0]  m2_prod;
  logic [10:0] m2_scale;
  logic [24:0] m2_sig, m2_operand_b;
  logic [29:0] m2_scaled;
  logic [51:0] m2_square;
  logic [24:0] m2_mills_base;
  logic [34:0] m2_mills_step;

  tpu_pipe_reg #(.Width(CarryWidth + 30 + 2 + 52 + 25 + 35), .Enable(SplitStages)) u_split_square (
    .clk_i, .rst_ni, .en_i,
    .data_i({s2_bypass, s2_bypass_value, s2_sign, s2_prod, s2_scale, s2_sig, s2_operand_b,
             s2_scaled, s2_gelu, s2_series, square, s2_mills_base, mills_step}),
    .data_o({m2_bypass, m2_bypass_value, m2_sign, m2_prod, m2_scale, m2_sig, m2_operand_b,
             m2_scaled, m2_gelu, m2_series, m2_square, m2_mills_base, m2_mills_step})
  );

  always_comb begin
    mills = m2_mills_base + {7'h0, m2_mills_step[34:17]};

    // gelu: |x| < 16, so the square is below 185 and w below 191.
    s2_w = m2_gelu ? m2_square[51:22] + {5'h0, mills} : m2_scaled;

    // exp of x >= 0: 2^w = 2^c * 2^-(c - w) with c = ceil(w), so that 2^-(c - w)
    // comes from the table and the product's scale is c (2^256 for a w that
    // saturated: infinity).
    exp_up        = VectorFunctions && m2_prod == ProdExp2Up;
    s2_scale_next = m2_scale;
    if (exp_up) begin
      s2_w          = {8'h00, 22'h0 - m2_scaled[21:0]};
      s2_scale_next = {3'b000, m2_scaled[29:22]} + {10'h0, m2_scaled[21:0] != 22'h0};
    end

    // tanh series: |x| < 2^-4, so x^2/3 < 2^-9 and square[51:45] is zero.
    s2_operand_b_next = m2_series ? One - m2_square[44:20] : m2_operand_b;
  end

  logic        s3_bypass, s3_sign;
  logic [31:0] s3_bypass_value;
  logic [3:0]  s3_prod;
  logic [10:0] s3_scale;
  logic [24:0] s3_sig, s3_operand_b;
  logic [29:0] s3_w;

  tpu_pipe_reg #(.Width(CarryWidth + 30)) u_stage_arg (
    .clk_i, .rst_ni, .en_i,
    .data_i({m2_bypass, m2_bypass_value, m2_sign, m2_prod, s2_scale_next, m2_sig,
             s2_operand_b_next, s2_w}),
    .data_o({s3_bypass, s3_bypass_value, s3_sign, s3_prod, s3_scale, s3_sig, s3_operand_b,
             s3_w})
  );

  // ---------------------------------------------------------------------------
  // Stage 3: 2^-w = 2^-n * u, n = floor(w), u = 2^-frac(w) in (0.5, 1]
  // interpolated between the exp2 table's nodes.
  // ---------------------------------------------------------------------------
  logic [31:0] exp2_step;
  logic [24:0] s3_u;

  assign exp2_step = {15'h0, tpu_act_tables_pkg::exp2_delta(s3_w[21:15])} * {17'h0, s3_w[14:0]};

  logic        m3_bypass, m3_sign;
  logic [31:0] m3_bypass_value;
  logic [3:0]  m3_prod;
  logic [10:0] m3_scale;
  logic [24:0] m3_sig, m3_operand_b;
  logic [29:0] m3_w;
  logic [31:0] m3_exp2_step;

  tpu_pipe_reg #(.Width(CarryWidth + 30 + 32), .Enable(SplitStages)) u_split_exp2 (
    .clk_i, .rst_ni, .en_i,
    .data_i({s3_bypass, s3_bypass_value, s3_sign, s3_prod, s3_scale, s3_sig, s3_operand_b,
             s3_w, exp2_step}),
    .data_o({m3_bypass, m3_bypass_value, m3_sign, m3_prod, m3_scale, m3_sig, m3_operand_b,
             m3_w, m3_exp2_step})
  );

  assign s3_u = tpu_act_tables_pkg::exp2_base(m3_w[21:15]) - {8'h0, m3_exp2_step[31:15]};

  // The reciprocals read their table at v = x's significand - 1 (in 1.24, as
  // 2^-0 * v): it takes the place of u and n.
  logic        direct_v;
  logic [24:0] s3_u_next;
  logic [7:0]  s3_n_next;

  always_comb begin
    direct_v  = VectorFunctions && (m3_prod == ProdSigRecip || m3_prod == ProdSigRsqrt ||
                                    m3_prod == ProdSigRsqrt2);
    s3_u_next = direct_v ? {1'b0, m3_sig[23:0]} : s3_u;
    s3_n_next = direct_v ? 8'h00 : m3_w[29:22];
  end

  logic        s4_bypass, s4_sign;
  logic [31:0] s4_bypass_value;
  logic [3:0]  s4_prod;
  logic [10:0] s4_scale;
  logic [24:0] s4_sig, s4_operand_b, s4_u;
  logic [7:0]  s4_n;

  tpu_pipe_reg #(.Width(CarryWidth + 25 + 8)) u_stage_exp2 (
    .clk_i, .rst_ni, .en_i,
    .data_i({m3_bypass, m3_bypass_value, m3_sign, m3_prod, m3_scale, m3_sig, m3_operand_b,
             s3_u_next, s3_n_next}),
    .data_o({s4_bypass, s4_bypass_value, s4_sign, s4_prod, s4_scale, s4_sig, s4_operand_b,
             s4_u, s4_n})
  );

  // ---------------------------------------------------------------------------
  // Stage 4: v = 2^-w in 1.24 (truncated), r = 1/(1 + v) interpolated between
  // the reciprocal table's nodes, 1 - v; then the operands of the product.
  // ---------------------------------------------------------------------------
  logic [24:0] exp2_value;        // v = 2^-w
  logic [33:0] recip_step;
  logic        m4_rsqrt;
  logic [24:0] recip_base;
  logic [24:0] recip;             // r = 1/(1 + v)
  logic [24:0] one_minus_exp2;    // 1 - v

  logic [24:0] s4_operand_a, s4_operand_b_final;
  logic [10:0] s4_prod_scale;

  assign exp2_value = s4_u >> s4_n;

  // With SplitStages, the shift by n gets a cycle of its own: the table
  // lookup and the multiplier that follow it are a cycle's worth already.
  logic        h4_bypass, h4_sign;
  logic [31:0] h4_bypass_value;
  logic [3:0]  h4_prod;
  logic [10:0] h4_scale;
  logic [24:0] h4_sig, h4_operand_b, h4_u, h4_exp2_value;
  logic [7:0]  h4_n;

  tpu_pipe_reg #(.Width(CarryWidth + 25 + 8 + 25), .Enable(SplitStages)) u_split_shift (
    .clk_i, .rst_ni, .en_i,
    .data_i({s4_bypass, s4_bypass_value, s4_sign, s4_prod, s4_scale, s4_sig, s4_operand_b,
             s4_u, s4_n, exp2_value}),
    .data_o({h4_bypass, h4_bypass_value, h4_sign, h4_prod, h4_scale, h4_sig, h4_operand_b,
             h4_u, h4_n, h4_exp2_value})
  );

  // The reciprocal square root's table has two halves, 1/sqrt(1 + v) and
  // 1/sqrt(2 (1 + v)), each with the nodes and interpolation of 1/(1 + v)'s.
  logic        h4_rsqrt;
  logic [16:0] recip_delta;

  always_comb begin
    h4_rsqrt    = VectorFunctions && (h4_prod == ProdSigRsqrt || h4_prod == ProdSigRsqrt2);
    recip_delta = h4_rsqrt ? tpu_act_tables_pkg::rsqrt_delta({h4_prod == ProdSigRsqrt2,
                                                              h4_exp2_value[23:17]})
                           : tpu_act_tables_pkg::recip_delta(h4_exp2_value[23:17]);
    recip_step  = {17'h0, recip_delta} * {17'h0, h4_exp2_value[16:0]};
  end

  logic        m4_bypass, m4_sign;
  logic [31:0] m4_bypass_value;
  logic [3:0]  m4_prod;
  logic [10:0] m4_scale;
  logic [24:0] m4_sig, m4_operand_b, m4_u, m4_exp2_value;
  logic [7:0]  m4_n;
  logic [33:0] m4_recip_step;

  tpu_pipe_reg #(.Width(CarryWidth + 25 + 8 + 25 + 34), .Enable(SplitStages)) u_split_recip (
    .clk_i, .rst_ni, .en_i,
    .data_i({h4_bypass, h4_bypass_value, h4_sign, h4_prod, h4_scale, h4_sig, h4_operand_b,
             h4_u, h4_n, h4_exp2_value, recip_step}),
    .data_o({m4_bypass, m4_bypass_value, m4_sign, m4_prod, m4_scale, m4_sig, m4_operand_b,
             m4_u, m4_n, m4_exp2_value, m4_recip_step})
  );

  always_comb begin
    m4_rsqrt   = VectorFunctions && (m4_prod == ProdSigRsqrt || m4_prod == ProdSigRsqrt2);
    recip_base = m4_rsqrt ? tpu_act_tables_pkg::rsqrt_base({m4_prod == ProdSigRsqrt2,
                                                            m4_exp2_value[23:17]})
                          : tpu_act_tables_pkg::recip_base(m4_exp2_value[23:17]);
    // v = 1 only for w = 0: 1/(1 + 1) lies beyond the table.
    recip = m4_exp2_value[24] ? 25'h080_0000 : recip_base - {8'h0, m4_recip_step[33:17]};
    one_minus_exp2 = One - m4_exp2_value;

    s4_operand_a       = m4_sig;
    s4_operand_b_final = m4_operand_b;
    s4_prod_scale      = m4_scale;
    unique case (m4_prod)
      ProdRecip: begin
        s4_operand_a       = recip;
        s4_operand_b_final = One;
      end
      ProdExp2Recip: begin
        s4_operand_a       = m4_u;
        s4_operand_b_final = recip;
        s4_prod_scale      = m4_scale - {3'b000, m4_n};
      end
      ProdDiffRecip: begin
        s4_operand_a       = one_minus_exp2;
        s4_operand_b_final = recip;
      end
      ProdInputDiff: begin
        s4_operand_b_final = one_minus_exp2;
      end
      ProdInputExp2: begin
        s4_operand_b_final = m4_u;
        s4_prod_scale      = m4_scale - {3'b000, m4_n};
      end
      ProdExp2, ProdExp2Up: begin
        if (VectorFunctions) begin
          s4_operand_a       = m4_u;
          s4_operand_b_final = One;
          s4_prod_scale      = m4_scale - {3'b000, m4_n};
        end
      end
      ProdSigRecip, ProdSigRsqrt, ProdSigRsqrt2: begin
        if (VectorFunctions) begin
          s4_operand_a       = recip;
          s4_operand_b_final = One;
        end
      end
      default: ;  // ProdInputB
    endcase
  end

  logic        s5_bypass, s5_sign;
  logic [31:0] s5_bypass_value;
  logic [10:0] s5_scale;
  logic [24:0] s5_operand_a, s5_operand_b;

  tpu_pipe_reg #(.Width(1 + 32 + 1 + 11 + 25 + 25)) u_stage_operands (
    .clk_i, .rst_ni, .en_i,
    .data_i({m4_bypass, m4_bypass_value, m4_sign, s4_prod_scale, s4_operand_a,
             s4_operand_b_final}),
    .data_o({s5_bypass, s5_bypass_value, s5_sign, s5_scale, s5_operand_a, s5_operand_b})
  );

  // ---------------------------------------------------------------------------
  // Stage 5: the exact product a * b * 2^(scale - 48), rounded to nearest
  // even as IEEE binary32 rounds (gradual underflow), then flushed below
  // 2^-126.
  // ---------------------------------------------------------------------------
  // Number of leading zeros of a 50-bit value (50 when it is zero): leading
  // zero bytes, then leading zeros within the first nonzero byte
  // (tpu_pkg::lzc8). The value is padded with ones to 64 bits (bit 0 left
  // out), so its last byte is never zero.
  function automatic logic [5:0] lzc50(input logic [49:0] value);
    logic [63:1] padded;
    padded = {value, 13'h1FFF};
    if      (padded[63:56] != 8'h00) lzc50 = {3'd0, tpu_pkg::lzc8(padded[63:57])};
    else if (padded[55:48] != 8'h00) lzc50 = {3'd1, tpu_pkg::lzc8(padded[55:49])};
    else if (padded[47:40] != 8'h00) lzc50 = {3'd2, tpu_pkg::lzc8(padded[47:41])};
    else if (padded[39:32] != 8'h00) lzc50 = {3'd3, tpu_pkg::lzc8(padded[39:33])};
    else if (padded[31:24] != 8'h00) lzc50 = {3'd4, tpu_pkg::lzc8(padded[31:25])};
    else if (padded[23:16] != 8'h00) lzc50 = {3'd5, tpu_pkg::lzc8(padded[23:17])};
    else if (padded[15:8] != 8'h00)  lzc50 = {3'd6, tpu_pkg::lzc8(padded[15:9])};
    else                             lzc50 = {3'd7, tpu_pkg::lzc8(padded[7:1])};
  endfunction

  logic [49:0] product;
  logic        m5_bypass, m5_sign;
  logic [31:0] m5_bypass_value;
  logic [10:0] m5_scale;
  logic [49:0] m5_product;
  logic [5:0]  lead_zeros;
  logic        c5_bypass, c5_sign;
  logic [31:0] c5_bypass_value;
  logic [10:0] c5_scale;
  logic [49:0] c5_product;
  logic [5:0]  c5_lead_zeros;
  logic [49:0] c5_normalised;    // leading one at bit 49
  logic [10:0] c5_biased_exp;    // of the leading one, two's complement
  logic        n5_bypass, n5_sign, n5_zero;
  logic [31:0] n5_bypass_value;
  logic [49:0] normalised;
  logic [10:0] biased_exp;
  logic        round_up;
  logic [24:0] rounded_sig;
  logic [10:0] rounded_exp;
  logic [31:0] s5_result;

  assign product = {25'h0, s5_operand_a} * {25'h0, s5_operand_b};

  tpu_pipe_reg #(.Width(1 + 32 + 1 + 11 + 50), .Enable(SplitStages)) u_split_product (
    .clk_i, .rst_ni, .en_i,
    .data_i({s5_bypass, s5_bypass_value, s5_sign, s5_scale, product}),
    .data_o({m5_bypass, m5_bypass_value, m5_sign, m5_scale, m5_product})
  );

  assign lead_zeros = lzc50(m5_product);

  // With SplitStages, the 50-bit leading-zero count, the shift by it and
  // rounding are each as deep as a multiplier: they get a cycle each.
  tpu_pipe_reg #(.Width(1 + 32 + 1 + 11 + 50 + 6), .Enable(SplitStages)) u_split_count (
    .clk_i, .rst_ni, .en_i,
    .data_i({m5_bypass, m5_bypass_value, m5_sign, m5_scale, m5_product, lead_zeros}),
    .data_o({c5_bypass, c5_bypass_value, c5_sign, c5_scale, c5_product, c5_lead_zeros})
  );

  always_comb begin
    c5_normalised = c5_product << c5_lead_zeros;
    c5_biased_exp = c5_scale + 11'd128 - {5'h0, c5_lead_zeros};
  end

  tpu_pipe_reg #(.Width(1 + 32 + 1 + 1 + 50 + 11), .Enable(SplitStages)) u_split_normalise (
    .clk_i, .rst_ni, .en_i,
    .data_i({c5_bypass, c5_bypass_value, c5_sign, c5_lead_zeros == 6'd50, c5_normalised,
             c5_biased_exp}),
    .data_o({n5_bypass, n5_bypass_value, n5_sign, n5_zero, normalised, biased_exp})
  );

  always_comb begin
    round_up    = normalised[25] && (normalised[24:0] != 25'h0 || normalised[26]);
    rounded_sig = {1'b0, normalised[49:26]} + {24'h0, round_up};
    rounded_exp = rounded_sig[24] ? biased_exp + 11'd1 : biased_exp;

    if (n5_bypass) begin
      s5_result = n5_bypass_value;
    end else if (n5_zero) begin
      s5_result = {n5_sign, 31'h0};
    end else if (biased_exp[10] || biased_exp == 11'd0) begin
      // Below 2^-126. IEEE rounding to the subnormal grid reaches 2^-126 only
      // from [2^-126 - 2^-150, 2^-126): a leading one at 2^-127 followed by
      // 23 ones. Anything else is flushed.
      if (biased_exp == 11'd0 && normalised[48:26] == 23'h7F_FFFF) begin
        s5_result = {n5_sign, 8'h01, 23'h0};
      end else begin
        s5_result = {n5_sign, 31'h0};
      end
    end else if (rounded_exp >= 11'd255) begin
      s5_result = {n5_sign, 8'hFF, 23'h0};  // only leaky and exp can overflow
    end else begin
      // A carry out of rounding leaves a zero fraction, so bits [22:0] are
      // right in both cases.
      s5_result = {n5_sign, rounded_exp[7:0], rounded_sig[22:0]};
    end
  end

  // The low bits of the scaling and interpolation products are dropped by
  // design (truncation, docs/numerics.md, section Activation functions); the rounded significand's hidden
  // bit is implied by the exponent.
  logic unused_dropped_bits;
  assign unused_dropped_bits = ^{scaled_product[23:0], m2_square[19:0], m2_mills_step[16:0],
                                 m3_w[14:0], m3_exp2_step[14:0], m4_recip_step[16:0],
                                 rounded_sig[23]};

  tpu_pipe_reg #(.Width(32)) u_stage_out (
    .clk_i, .rst_ni, .en_i,
    .data_i(s5_result),
    .data_o(y_o)
  );

endmodule
