// Sequential activation function unit (N-IN, N-ACT) of the sequential core
// (tpu_seq_core): y = f(x) for func_i 0 none, 1 relu, 2 relu6, 3 leaky relu
// (slope alpha_i, bf16), 4 sigmoid, 5 tanh, 6 gelu, and the identity for the
// illegal codes 7..15. Bit for bit what the pipelined tpu_act_func and the
// reference model (sw/numerics/activation.cpp) compute, one value at a time: the
// algorithm of docs/numerics.md, section "The approximation, bit for bit",
// with the tables of tpu_act_tables_pkg.
//
// Why sequential: tpu_act_func spends five wide multipliers, a barrel shifter
// and a leading-zero count to finish a value every cycle, more logic than the
// whole iCE40UP5K has. Here one shift-and-add multiplier (a 32-bit adder, no
// DSP) forms every product one multiplier bit per cycle, and every shift is
// one bit per cycle, in four registers:
//   acc_hi_q  the adder's accumulator: the product's upper part
//   acc_lo_q  the multiplier, shifted out at the bottom while the product's
//             lower bits shift in at the top; also the shift register
//   mcand_q   the multiplicand, or a value kept for a later step
//   result_q  x from acceptance on (its fields are read later), then y
// The tables' nodes sit in one 512 x 44 ROM with a registered output (block
// RAM on an FPGA) as {base, signed delta}; the deltas of the falling tables
// (exp2, reciprocal) are stored negated, so every interpolation adds.
//
// Clock edges from the one that takes a value to out_valid_o: 1 for none,
// relu, relu6 and every result that needs no arithmetic (NaN, infinities,
// saturated or exact ranges); about 41 for leaky; 110 to 140 for sigmoid and
// tanh; 140 to 200 for gelu, which converts |x| to fixed point twice (both
// its Mills term and its square need it, and no fifth register holds it).
//
// Products: with mcand_q * acc_lo_q's k multiplier bits consumed one per
// cycle, acc_hi_q ends as floor(product / 2^k). Multiplicands are held five
// bits up (<< 5), which leaves every final product P of two 1.24 operands at
// acc_hi_q = floor(P / 2^20): its leading one at bit 29 - lz, lz <= 6, so
// right shifts alone normalise it to bit 23. A final operand 1 - v is never
// formed: mcand_q holds 32 v and each set multiplier bit adds 2^29 - mcand_q.
`include "tpu_assert.svh"

module tpu_seq_act (
  input  logic        clk_i,
  input  logic        rst_ni,

  input  logic        in_valid_i,   // a value to compute; taken when in_ready_o
  output logic        in_ready_o,   // idle: no value in flight
  input  logic [3:0]  func_i,       // ISA function code (tpu_isa_pkg::Func*)
  input  logic [15:0] alpha_i,      // leaky slope, bf16
  input  logic [31:0] x_i,          // fp32 input

  output logic        out_valid_o,  // y_o holds the result until out_ready_i
  input  logic        out_ready_i,
  output logic [31:0] y_o
);

  // Function codes: the ISA's (tpu_isa_pkg, generated from rtl/defs/isa.toml).
  localparam logic [3:0] FuncLeaky   = tpu_isa_pkg::FuncLeaky;
  localparam logic [3:0] FuncSigmoid = tpu_isa_pkg::FuncSigmoid;
  localparam logic [3:0] FuncTanh    = tpu_isa_pkg::FuncTanh;
  localparam logic [3:0] FuncGelu    = tpu_isa_pkg::FuncGelu;

  localparam logic [31:0] One  = 32'h3F80_0000;
  localparam logic [31:0] Half = 32'h3F00_0000;

  // Biased exponents that decide the paths. Below 2^-22 (e <= 104) |x| in 8.22
  // is zero, so sigmoid is exactly 1/2 and tanh exactly x. From 16 (e >= 131)
  // on, tanh is +-1 and gelu x or -0, and from 32 on sigmoid is 1: 2^-w's
  // exponent n is 25 or more, which leaves V = 0. From -128 down sigmoid is +0
  // (2^-n < 2^-184 is flushed). So |x| < 128 wherever S is computed, and
  // S = A * K never reaches its saturation at 256.
  localparam logic [7:0] ExpArgZeroMax    = 8'd104;
  localparam logic [7:0] ExpTanhSeriesEnd = 8'd123;  // |x| < 2^-4: tanh's series
  localparam logic [7:0] ExpLarge         = tpu_act_pkg::ExpLarge;  // |x| >= 16
  localparam logic [7:0] ExpSigmoidOne    = 8'd132;  // x >= 32
  localparam logic [7:0] ExpSigmoidZero   = 8'd134;  // x <= -128

  // The final product P = a * b * 2^(c - 48) lands in acc_hi_q as P / 2^20;
  // with r right shifts to bring its leading one to bit 23, the biased
  // exponent is 128 + c - 6 + r. ProductBias is 128 - 6.
  localparam logic [9:0] ProductBias = 10'd122;

  // The ROM: three tables of nodes {base (25 bits), delta (19 bits, signed)}.
  localparam int unsigned RomDepth = 512;
  localparam int unsigned RomWidth = 44;
  localparam logic [1:0]  RomExp2  = 2'b00;  // 2^-f, nodes 0..127
  localparam logic [1:0]  RomRecip = 2'b01;  // 1/(1 + v), nodes 0..127
  localparam logic        RomMills = 1'b1;   // M(t), nodes 0..255

  typedef enum logic [4:0] {
    StIdle,         // in_ready_o
    StLoadArg,      // acc_lo_q = x's significand << 6
    StShiftArg,     // ... >> (134 - e): |x| in 8.22 (A)
    StScale,        // A * K: the scaled argument S (acc_hi_q)
    StSquareSetup,  // T = S: T * T
    StSquare,
    StSaveSquare,   // gelu: keep T^2 / 2^22, then A again for the Mills term
    StMills,        // gelu: Mills interpolation, delta * fraction
    StAddMills,     // ... + base: M(A)
    StAddSquare,    // w = T^2 / 2^22 + M(A)
    StSaveArg,      // keep w; read the exp2 node
    StExp2,         // exp2 interpolation
    StAddExp2,      // ... + base: U, 2^-w = U 2^-n
    StSaveExp2,     // sigmoid, x < 0: keep U
    StShiftExp2,    // V = U >> n
    StRecipSetup,   // read the reciprocal's node
    StRecip,        // reciprocal interpolation
    StAddRecip,     // ... + base: R = 1/(1 + V)
    StLoadRecip,    // the final product's multiplier R
    StLoadInput,    // ... or x's significand
    StProduct,      // the final product
    StNormalise,    // leading one to bit 23
    StRound,        // round to nearest even, or the result below 2^-126
    StPack,
    StDone          // out_valid_o
  } state_e;

  // The paths that need arithmetic.
  typedef enum logic [2:0] {
    KindSigmoid,
    KindTanh,        // |x| >= 2^-4
    KindTanhSeries,  // |x| < 2^-4
    KindGelu,
    KindLeaky
  } kind_e;

  // What the adder adds to the accumulator.
  typedef enum logic [2:0] {
    OperandZero,
    OperandMcand,       // mcand_q
    OperandComplement,  // 2^29 - 1 - mcand_q (with a carry in: 32 (1 - v))
    OperandDelta,       // the ROM's delta, sign-extended
    OperandBase         // the ROM's base
  } operand_e;

  state_e      state_d, state_q;
  kind_e       kind_d, kind_q;
  logic        neg_d, neg_q;                // x < 0
  logic        mills_pass_d, mills_pass_q;  // gelu: A for the Mills term
  logic        rounded_d, rounded_q;
  logic [30:0] acc_hi_d, acc_hi_q;
  logic [29:0] acc_lo_d, acc_lo_q;
  logic [30:0] mcand_d, mcand_q;
  logic [9:0]  exp_d, exp_q;                // result's biased exponent, two's complement
  logic [4:0]  count_d, count_q;
  logic [31:0] result_d, result_q;

  // ---------------------------------------------------------------------------
  // Acceptance: classify x and alpha (N-IN), the results that need no
  // arithmetic, and the start of the others.
  // ---------------------------------------------------------------------------
  logic        x_sign, x_zero;
  logic [7:0]  x_exp;
  logic        leaky_sign;
  logic        accept_bypass;
  logic [31:0] accept_result;
  kind_e       accept_kind;
  logic [30:0] accept_mcand;
  logic [9:0]  accept_exp, accept_exp_bias;

  always_comb begin
    x_sign     = x_i[31];
    x_exp      = x_i[30:23];
    x_zero     = x_exp == 8'h00;
    leaky_sign = x_sign ^ alpha_i[15];

    // The results both units know exactly (tpu_act_pkg), then those this unit
    // finds where the others approximate: sigmoid and tanh saturated or at
    // arguments too small to matter, gelu of zero. An approximation keeps x
    // (zeros signed) in accept_result.
    {accept_bypass, accept_result} = tpu_act_pkg::exact_result(func_i, x_i, alpha_i, 1'b0);
    accept_kind = KindSigmoid;
    if (!accept_bypass) begin
      unique case (func_i)
        FuncLeaky: begin
          accept_kind   = KindLeaky;
          accept_result = {leaky_sign, alpha_i[14:7], x_i[22:0]};  // e_alpha for later
        end
        FuncSigmoid: begin
          accept_bypass = 1'b1;
          if (x_exp <= ExpArgZeroMax) begin
            accept_result = Half;
          end else if (!x_sign && x_exp >= ExpSigmoidOne) begin
            accept_result = One;
          end else if (x_sign && x_exp >= ExpSigmoidZero) begin
            accept_result = 32'h0;
          end else begin
            accept_bypass = 1'b0;
            accept_result = {1'b0, x_i[30:0]};
          end
        end
        FuncTanh: begin
          if (x_exp >= ExpLarge) begin
            accept_bypass = 1'b1;
            accept_result = {x_sign, One[30:0]};
          end else if (x_exp > ExpArgZeroMax) begin
            accept_kind = x_exp < ExpTanhSeriesEnd ? KindTanhSeries : KindTanh;
          end else begin
            accept_bypass = 1'b1;
          end
        end
        FuncGelu: begin
          if (x_zero) accept_bypass = 1'b1;
          else        accept_kind   = KindGelu;
        end
        default: ;
      endcase
    end

    // The constant of the scaled argument (<< 5, see the header), or alpha's
    // significand as leaky's multiplicand: 1.24 << 5. The biased exponent
    // before normalising is ProductBias + c (docs/numerics.md's table of the
    // functions): c is 0, e - 127 or (e - 127) + (e_alpha - 127); e_alpha (+ 1)
    // and 2^-n's exponent are added later, with exp_q's adder.
    accept_exp_bias = ProductBias;
    unique case (accept_kind)
      KindTanh:       accept_mcand = {tpu_act_tables_pkg::TwoLog2E, 5'h0};
      KindTanhSeries: begin
        accept_mcand    = {tpu_act_tables_pkg::InvSqrt3, 5'h0};
        accept_exp_bias = ProductBias - 10'd127;
      end
      KindGelu: begin
        accept_mcand    = {tpu_act_tables_pkg::GeluScale, 5'h0};
        accept_exp_bias = ProductBias - 10'd127;
      end
      KindLeaky: begin
        accept_mcand    = {2'b01, alpha_i[6:0], 22'h0};
        accept_exp_bias = ProductBias - 10'd254 - 10'd1;
      end
      default:        accept_mcand = {tpu_act_tables_pkg::Log2E, 5'h0};  // KindSigmoid
    endcase
    accept_exp = accept_exp_bias +
                 (accept_kind == KindSigmoid || accept_kind == KindTanh ? 10'h000 : {2'b00, x_exp});
  end

  // ---------------------------------------------------------------------------
  // The ROM of the interpolation nodes. Block RAM has no reset: the output
  // register is read only in the cycles after a read.
  // ---------------------------------------------------------------------------
  logic [RomWidth-1:0] rom [RomDepth];
  logic [RomWidth-1:0] rom_q;
  logic                rom_en;
  logic [8:0]          rom_addr;
  logic [24:0]         rom_base;
  logic [18:0]         rom_delta;

  initial begin
    for (int k = 0; k < 128; k++) begin
      rom[{RomExp2, k[6:0]}] = {tpu_act_tables_pkg::exp2_base(k[6:0]),
                                19'h0 - {2'b00, tpu_act_tables_pkg::exp2_delta(k[6:0])}};
      rom[{RomRecip, k[6:0]}] = {tpu_act_tables_pkg::recip_base(k[6:0]),
                                 19'h0 - {2'b00, tpu_act_tables_pkg::recip_delta(k[6:0])}};
    end
    for (int k = 0; k < 256; k++) begin
      rom[{RomMills, k[7:0]}] = {tpu_act_tables_pkg::mills_base(k[7:0]),
                                 1'b0, tpu_act_tables_pkg::mills_delta(k[7:0])};
    end
  end

  always_ff @(posedge clk_i) begin
    if (rom_en) rom_q <= rom[rom_addr];
  end

  assign rom_base  = rom_q[43:19];
  assign rom_delta = rom_q[18:0];

  // ---------------------------------------------------------------------------
  // The adder: acc_hi_q + operand (+ carry). Interpolations accumulate signed
  // values; everything else is unsigned.
  // ---------------------------------------------------------------------------
  operand_e    operand_sel;
  logic        carry_in, signed_acc, complement, mills_step;
  logic [31:0] operand, sum;

  // The final product's multiplicand is 32 (1 - v): tanh, tanh's series,
  // sigmoid and gelu of x >= 0 (sigmoid's v is 0 then).
  assign complement = kind_q == KindTanh || kind_q == KindTanhSeries ||
                      ((kind_q == KindSigmoid || kind_q == KindGelu) && !neg_q);
  // The Mills interpolation first shifts out the 0..2 bits below its fraction.
  assign mills_step = !count_q[4] || count_q[3:0] == 4'h0;

  always_comb begin
    operand_sel = OperandZero;
    carry_in    = 1'b0;
    signed_acc  = 1'b0;
    unique case (state_q)
      StScale, StSquare: begin
        if (acc_lo_q[0]) operand_sel = OperandMcand;
      end
      StProduct: begin
        if (acc_lo_q[0]) begin
          operand_sel = complement ? OperandComplement : OperandMcand;
          carry_in    = complement;
        end
      end
      StMills: begin
        signed_acc = 1'b1;
        if (acc_lo_q[0] && mills_step) operand_sel = OperandDelta;
      end
      StExp2, StRecip: begin
        // base - floor(delta * f / 2^k) = base + floor((2^k - 1 - delta * f) / 2^k):
        // the negated delta, and a carry of 1 at each of the k steps.
        signed_acc = 1'b1;
        carry_in   = 1'b1;
        if (acc_lo_q[0]) operand_sel = OperandDelta;
      end
      StAddMills, StAddExp2, StAddRecip: operand_sel = OperandBase;
      StAddSquare:                       operand_sel = OperandMcand;
      StRound: begin
        // Nearest even: the guard bit, and the sticky bits or the kept LSB.
        carry_in = acc_lo_q[29] && (acc_lo_q[28:0] != 29'h0 || acc_hi_q[0]);
      end
      default: ;
    endcase

    unique case (operand_sel)
      OperandMcand:      operand = {1'b0, mcand_q};
      OperandComplement: operand = {3'b000, ~mcand_q[28:0]};
      OperandDelta:      operand = {{13{rom_delta[18]}}, rom_delta};
      OperandBase:       operand = {7'h00, rom_base};
      default:           operand = 32'h0;
    endcase
    sum = {signed_acc && acc_hi_q[30], acc_hi_q} + operand + {31'h0, carry_in};
  end

  // ---------------------------------------------------------------------------
  // The sequence.
  // ---------------------------------------------------------------------------
  logic [7:0]  arg_exp;        // x's biased exponent
  logic        arg_zero;       // |x| < 2^-22: A = 0
  logic [29:0] input_sig;      // x's significand << 6 (30 bits)
  logic [7:0]  mills_index;
  logic [4:0]  mills_count;    // 17 steps after 0..2 shifts, minus 1
  logic [7:0]  exp2_shift;     // n, the integer part of w
  logic [9:0]  exp_addend, exp_sum;
  logic        exp_nonpositive, exp_overflow;
  logic [7:0]  final_exp;
  logic [22:0] final_frac;
  logic        step;

  always_comb begin
    arg_exp   = result_q[30:23];
    arg_zero  = arg_exp <= ExpArgZeroMax;
    input_sig = {1'b1, result_q[22:0], 6'h00};

    // Mills nodes every 1/32 on [0, 4), 1/16 on [4, 8), 1/8 on [8, 16) of A
    // (acc_lo_q, below 16 for gelu); the fraction is the 17 bits below the
    // node step.
    if (acc_lo_q[25]) begin
      mills_index = {2'b11, acc_lo_q[24:19]};
      mills_count = 5'd18;
    end else if (acc_lo_q[24]) begin
      mills_index = {2'b10, acc_lo_q[23:18]};
      mills_count = 5'd17;
    end else begin
      mills_index = {1'b0, acc_lo_q[23:17]};
      mills_count = 5'd16;
    end

    // exp_q + 1, exp_q - n or exp_q + e_alpha + 1: one adder.
    exp2_shift = mcand_q[29:22];
    unique case (state_q)
      StAddExp2:   exp_addend = ~{2'b00, exp2_shift};
      StLoadInput: exp_addend = {2'b00, result_q[30:23]};
      default:     exp_addend = 10'h000;
    endcase
    exp_sum = exp_q + exp_addend + 10'd1;

    exp_nonpositive = exp_q[9] || exp_q == 10'h000;
    exp_overflow    = !exp_q[9] && (exp_q[8] || exp_q[7:0] == 8'hFF);
    // Below 2^-126 (not rounded), IEEE rounding to the subnormal grid reaches
    // 2^-126 only from [2^-126 - 2^-150, 2^-126): a leading one at 2^-127
    // followed by 23 ones. Anything else is flushed.
    final_exp  = exp_q[7:0];
    final_frac = acc_hi_q[22:0];
    if (exp_nonpositive) begin
      final_exp  = {7'h00, exp_q == 10'h000 && acc_hi_q[22:0] == 23'h7F_FFFF};
      final_frac = 23'h0;
    end else if (exp_overflow) begin  // only leaky overflows
      final_exp  = 8'hFF;
      final_frac = 23'h0;
    end
  end

  always_comb begin
    state_d      = state_q;
    kind_d       = kind_q;
    neg_d        = neg_q;
    mills_pass_d = mills_pass_q;
    rounded_d    = rounded_q;
    acc_hi_d     = acc_hi_q;
    acc_lo_d     = acc_lo_q;
    mcand_d      = mcand_q;
    exp_d        = exp_q;
    count_d      = count_q;
    result_d     = result_q;
    rom_en       = 1'b0;
    rom_addr     = {RomExp2, acc_hi_q[21:15]};
    in_ready_o   = 1'b0;
    out_valid_o  = 1'b0;
    step         = 1'b0;

    unique case (state_q)
      StIdle: begin
        in_ready_o = 1'b1;
        if (in_valid_i) begin
          result_d     = accept_result;
          kind_d       = accept_kind;
          neg_d        = x_sign;
          mills_pass_d = 1'b0;
          rounded_d    = 1'b0;
          acc_hi_d     = '0;
          mcand_d      = accept_mcand;
          exp_d        = accept_exp;
          if (accept_bypass) state_d = StDone;
          else if (accept_kind == KindLeaky) state_d = StLoadInput;
          else state_d = StLoadArg;
        end
      end

      // A = (significand << 6) >> (134 - e): 1 to 29 shifts, or zero.
      StLoadArg: begin
        acc_lo_d = arg_zero ? '0 : input_sig;
        count_d  = arg_zero ? '0 : 5'd6 - arg_exp[4:0];  // (134 - e) mod 32
        state_d  = StShiftArg;
      end
      StShiftArg: begin
        if (count_q != 5'h00) begin
          step = 1'b1;
        end else if (mills_pass_q) begin
          rom_en   = 1'b1;
          rom_addr = {RomMills, mills_index};
          count_d  = mills_count;
          state_d  = StMills;
        end else begin
          count_d = 5'd28;
          state_d = StScale;
        end
      end

      // S = floor(A * K / 2^24) = floor(A * (K << 5) / 2^29): 29 steps. S < 2^30
      // (|x| < 128), so it never saturates.
      StScale: begin
        step = 1'b1;
        if (count_q == 5'h00) begin
          state_d = (kind_q == KindGelu || kind_q == KindTanhSeries) ? StSquareSetup : StSaveArg;
        end
      end

      // gelu: floor(T^2 / 2^22) = floor((T << 5) * T / 2^27), 27 steps;
      // tanh's series: floor(T^2 / 2^20), 25 steps.
      StSquareSetup: begin
        mcand_d  = {acc_hi_q[25:0], 5'h00};
        acc_lo_d = acc_hi_q[29:0];
        acc_hi_d = '0;
        count_d  = kind_q == KindGelu ? 5'd26 : 5'd24;
        state_d  = StSquare;
      end
      StSquare: begin
        step = 1'b1;
        if (count_q == 5'h00) state_d = kind_q == KindGelu ? StSaveSquare : StLoadInput;
      end
      StSaveSquare: begin
        mcand_d      = acc_hi_q;
        acc_hi_d     = '0;
        mills_pass_d = 1'b1;
        state_d      = StLoadArg;
      end

      // M(A) = G + floor(delta * g / 2^17), after 0..2 shifts that bring g
      // to the bottom.
      StMills: begin
        step = 1'b1;
        if (count_q == 5'h00) state_d = StAddMills;
      end
      StAddMills: begin
        acc_hi_d = sum[30:0];
        state_d  = StAddSquare;
      end
      StAddSquare: begin
        acc_hi_d = sum[30:0];
        state_d  = StSaveArg;
      end

      // 2^-w: n = w[29:22] (kept in mcand_q), node w[21:15], fraction
      // w[14:0] (15 steps).
      StSaveArg: begin
        mcand_d  = acc_hi_q;
        acc_lo_d = acc_hi_q[29:0];
        acc_hi_d = '0;
        rom_en   = 1'b1;
        rom_addr = {RomExp2, acc_hi_q[21:15]};
        count_d  = 5'd14;
        state_d  = StExp2;
      end
      StExp2: begin
        step = 1'b1;
        if (count_q == 5'h00) state_d = StAddExp2;
      end
      StAddExp2: begin
        acc_hi_d = sum[30:0];
        count_d  = exp2_shift[7:5] != 3'h0 ? 5'h1F : exp2_shift[4:0];  // 2^-n is 0 from 25 on
        if (neg_q && (kind_q == KindSigmoid || kind_q == KindGelu)) exp_d = exp_sum;
        if (kind_q == KindGelu) state_d = neg_q ? StLoadInput : StShiftExp2;
        else state_d = (kind_q == KindSigmoid && neg_q) ? StSaveExp2 : StShiftExp2;
      end
      StSaveExp2: begin
        mcand_d = {acc_hi_q[25:0], 5'h00};
        state_d = StShiftExp2;
      end
      StShiftExp2: begin
        if (count_q != 5'h00) begin
          step = 1'b1;
        end else begin
          state_d = kind_q == KindGelu ? StLoadInput : StRecipSetup;
        end
      end

      // 1/(1 + V): node V[23:17], fraction V[16:0] (17 steps). V < 1 here:
      // sigmoid's w is at least 2^-22.
      StRecipSetup: begin
        rom_en   = 1'b1;
        rom_addr = {RomRecip, acc_hi_q[23:17]};
        acc_lo_d = acc_hi_q[29:0];
        acc_hi_d = '0;
        if (kind_q == KindTanh) mcand_d = {acc_hi_q[25:0], 5'h00};  // 32 V
        else if (!neg_q) mcand_d = '0;  // sigmoid, x >= 0: R (1 - 0)
        count_d  = 5'd16;
        state_d  = StRecip;
      end
      StRecip: begin
        step = 1'b1;
        if (count_q == 5'h00) state_d = StAddRecip;
      end
      StAddRecip: begin
        acc_hi_d = sum[30:0];
        state_d  = StLoadRecip;
      end

      // The final product: R * 32 (1 - V) or R * 32 U, 25 steps; or
      // (x's significand << 6) * mcand_q, 30 steps.
      StLoadRecip: begin
        acc_lo_d = acc_hi_q[29:0];
        acc_hi_d = '0;
        count_d  = 5'd24;
        state_d  = StProduct;
      end
      StLoadInput: begin
        acc_lo_d = input_sig;
        if (kind_q == KindLeaky) exp_d = exp_sum;  // + e_alpha + 1 (result_q[30:23])
        else mcand_d = {acc_hi_q[25:0], 5'h00};    // gelu: 32 U or 32 V; series: 32 Y
        acc_hi_d = '0;
        count_d  = 5'd29;
        state_d  = StProduct;
      end
      StProduct: begin
        step = 1'b1;
        if (count_q == 5'h00) state_d = StNormalise;
      end

      // The leading one is at most 6 bits above bit 23 (and again one bit
      // after a carry out of rounding).
      StNormalise: begin
        if (acc_hi_q[29:24] != 6'h00) begin
          step  = 1'b1;
          exp_d = exp_sum;
        end else begin
          state_d = rounded_q ? StPack : StRound;
        end
      end
      StRound: begin
        if (exp_nonpositive) begin
          state_d = StPack;
        end else begin
          acc_hi_d  = sum[30:0];
          rounded_d = 1'b1;
          state_d   = StNormalise;
        end
      end
      StPack: begin
        result_d = {result_q[31], final_exp, final_frac};
        state_d  = StDone;
      end

      StDone: begin
        out_valid_o = 1'b1;
        if (out_ready_i) state_d = StIdle;
      end
      // The encodings beyond StDone are unreachable. Holding there, rather than
      // going to StIdle, lets Yosys recode the state one-hot (fsm_detect takes
      // a constant next state for a reset circuit): 20 fewer LUTs.
      default: ;
    endcase

    // One multiplication step, or a plain right shift of {acc_hi_q, acc_lo_q}
    // when the adder adds nothing.
    if (step) begin
      acc_hi_d = sum[31:1];
      acc_lo_d = {sum[0], acc_lo_q[29:1]};
      count_d  = count_q - 5'd1;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q      <= StIdle;
      kind_q       <= KindSigmoid;
      neg_q        <= 1'b0;
      mills_pass_q <= 1'b0;
      rounded_q    <= 1'b0;
      acc_hi_q     <= '0;
      acc_lo_q     <= '0;
      mcand_q      <= '0;
      exp_q        <= '0;
      count_q      <= '0;
      result_q     <= '0;
    end else begin
      state_q      <= state_d;
      kind_q       <= kind_d;
      neg_q        <= neg_d;
      mills_pass_q <= mills_pass_d;
      rounded_q    <= rounded_d;
      acc_hi_q     <= acc_hi_d;
      acc_lo_q     <= acc_lo_d;
      mcand_q      <= mcand_d;
      exp_q        <= exp_d;
      count_q      <= count_d;
      result_q     <= result_d;
    end
  end

  assign y_o = result_q;

  `TPU_ASSERT_NEXT(a_result_held, out_valid_o && !out_ready_i, out_valid_o && $stable(y_o),
                   "result withdrawn or changed before it was taken")
  `TPU_ASSERT_NEXT(a_busy_after_accept, in_valid_i && in_ready_o, !in_ready_o,
                   "accepted a second value while one is in flight")
  `TPU_ASSERT(a_idle_or_done, !(in_ready_o && out_valid_o),
              "ready for a value while a result waits")
  // The bounds the sequence relies on: w below 256 (no saturation), T below
  // 2^26 (32 T fits mcand_q), V < 1 before the reciprocal, 32 v below 2^29,
  // and the product's leading one at bit 23 after normalising.
  `TPU_ASSERT(a_arg_fits, state_q != StSaveArg || !acc_hi_q[30], "exponent of 2^-w beyond 8.22")
  `TPU_ASSERT(a_square_fits, state_q != StSquareSetup || (acc_hi_q[30:26] == 5'h00),
              "T does not fit 26 bits")
  `TPU_ASSERT(a_recip_below_one, state_q != StRecipSetup || (acc_hi_q[30:24] == 7'h00),
              "reciprocal of 1 + v with v >= 1")
  `TPU_ASSERT(a_complement_fits, !(state_q == StProduct && complement) || (mcand_q[30:29] == 2'b00),
              "1 - v out of range")
  `TPU_ASSERT(a_normalised, state_q != StRound || (acc_hi_q[30:23] == 8'h01),
              "product not normalised")

endmodule
