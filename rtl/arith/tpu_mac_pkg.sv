// The multiply-add cell's stages in both of its modes: bf16 x bf16 -> fp32
// (N-MUL, N-ADD, the stages of tpu_fp_pkg) or int8 x int8 -> int32 (Q-MAC).
// The mode comes with each activation (`int8`). The int8 mode uses the same
// 8 x 8 multiplier, on the operands' magnitudes, and the same pipeline
// registers: between the adder's stages an int32 sum travels in the bits of
// the float stage's value. Only the 32-bit integer adder is its own. A core
// built without one of the modes passes a constant, and synthesis removes the
// other mode's logic.
package tpu_mac_pkg;

  // The magnitude of an int8 value; -128 gives 128, which 8 bits hold.
  function automatic logic [7:0] magnitude8(input logic [7:0] x);
    magnitude8 = x[7] ? 8'(-x) : x;
  endfunction

  // Multiplier stage: the significands, or the int8 operands' magnitudes
  // (the low byte of each lane) with the product's sign.
  function automatic tpu_fp_pkg::mul_product_t multiply(input logic [15:0] a, input logic [15:0] w,
                                            input logic int8);
    logic [7:0]   op_a, op_w;
    tpu_fp_pkg::mul_product_t p;
    p      = tpu_fp_pkg::mul_classify(a, w);
    op_a   = int8 ? magnitude8(a[7:0]) : tpu_fp_pkg::mul_operand(a[6:0]);
    op_w   = int8 ? magnitude8(w[7:0]) : tpu_fp_pkg::mul_operand(w[6:0]);
    p.sig  = {8'h00, op_a} * {8'h00, op_w};
    p.sign = int8 ? a[7] ^ w[7] : p.sign;
    multiply = p;
  endfunction

  // The product as fp32, or as an int32 (an exact 16-bit product, |p| <= 2^14).
  function automatic logic [31:0] product(input tpu_fp_pkg::mul_product_t p, input logic int8);
    logic [31:0] magnitude;
    magnitude = {16'h0, p.sig};
    product   = int8 ? (p.sign ? 32'(-magnitude) : magnitude) : tpu_fp_pkg::mul_normalise(p);
  endfunction

  // Adder stages. In int8 mode the first carries both operands (64 bits, the
  // width of tpu_fp_pkg::add_ordered_t), the second adds them with wrap-around, and the
  // sum rides in the low 32 bits of the later stages.
  function automatic tpu_fp_pkg::add_ordered_t add_order(input logic [31:0] psum, input logic [31:0] prod,
                                             input logic int8);
    add_order = int8 ? tpu_fp_pkg::add_ordered_t'({psum, prod}) : tpu_fp_pkg::add_order(psum, prod);
  endfunction

  function automatic tpu_fp_pkg::add_sum_t add_align(input tpu_fp_pkg::add_ordered_t o, input logic int8);
    logic [63:0] operands;
    logic [31:0] sum;
    operands  = o;  // tpu_fp_pkg::add_ordered_t is 64 bits wide
    sum       = operands[63:32] + operands[31:0];
    add_align = int8 ? tpu_fp_pkg::add_sum_t'({{(tpu_fp_pkg::AddSumBits - 32){1'b0}}, sum})
                     : tpu_fp_pkg::add_align(o);
  endfunction

  function automatic tpu_fp_pkg::add_normalised_t add_normalise(input tpu_fp_pkg::add_sum_t s, input logic int8);
    logic [31:0] sum;
    sum           = s[31:0];
    add_normalise = int8 ? tpu_fp_pkg::add_normalised_t'({{(tpu_fp_pkg::AddNormalisedBits - 32){1'b0}}, sum})
                         : tpu_fp_pkg::add_normalise(s);
  endfunction

  function automatic logic [31:0] add_round(input tpu_fp_pkg::add_normalised_t n, input logic int8);
    add_round = int8 ? n[31:0] : tpu_fp_pkg::add_round(n);
  endfunction

endpackage
