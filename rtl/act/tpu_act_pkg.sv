// What both activation function units (tpu_act_func of the array core,
// tpu_seq_act of the sequential core) share: the results N-ACT fixes exactly,
// without an approximation (docs/numerics.md, "Activation functions").
package tpu_act_pkg;

  localparam logic [31:0] Six    = 32'h40C0_0000;  // 1.5 * 2^2
  localparam logic [7:0]  ExpSix = 8'd129;
  localparam logic [7:0]  ExpLarge = 8'd131;  // |x| >= 16: gelu(x) is x or -0 (Q(16) < 2^-189)

  // {exact, value} for func applied to x (fp32) with leaky's slope alpha (bf16):
  // - the identity for none and the illegal codes; relu; relu6 (+inf included);
  // - leaky: x for x >= 0 and x = -0, else IEEE x * alpha's special cases (an
  //   infinite, NaN or zero operand);
  // - gelu from |x| >= 16 on: x, or -0 below zero;
  // - with vector_functions (a unit that has exp, reciprocal and reciprocal
  //   square root; without, their codes are illegal ones): the reciprocal of
  //   +-0 and +-inf (+-inf, +-0); the reciprocal square root of +-0 (+-inf, as
  //   IEEE 754's rSqrt), +inf (+0) and of x < 0 (NaN);
  // - the canonical NaN for a NaN x, whatever the function.
  // exact = 0 leaves value to the approximation: leaky's product of finite
  // nonzero operands, sigmoid, tanh, gelu below 16, exp, and the reciprocal and
  // the reciprocal square root of the other values (each unit may find more
  // exact cases of its own there).
  function automatic logic [32:0] exact_result(input logic [3:0] func, input logic [31:0] x,
                                               input logic [15:0] alpha,
                                               input logic vector_functions);
    logic        sign, zero, inf, nan, alpha_zero, alpha_inf, alpha_nan, product_sign, exact;
    logic [7:0]  exponent;
    logic [31:0] value;
    sign         = x[31];
    exponent          = x[30:23];
    zero         = exponent == 8'h00;
    inf          = exponent == 8'hFF && x[22:0] == 23'h0;
    nan          = exponent == 8'hFF && x[22:0] != 23'h0;
    alpha_zero   = alpha[14:7] == 8'h00;
    alpha_inf    = alpha[14:7] == 8'hFF && alpha[6:0] == 7'h0;
    alpha_nan    = alpha[14:7] == 8'hFF && alpha[6:0] != 7'h0;
    product_sign = sign ^ alpha[15];

    exact = 1'b1;
    value = zero ? {sign, 31'h0} : x;
    unique case (func)
      tpu_isa_pkg::FuncRelu: begin
        if (sign) value = 32'h0;
      end
      tpu_isa_pkg::FuncRelu6: begin
        if (sign) value = 32'h0;
        else if (exponent > ExpSix || (exponent == ExpSix && x[22])) value = Six;
      end
      tpu_isa_pkg::FuncLeaky: begin
        if (sign && !zero) begin
          if (alpha_nan || (inf && alpha_zero)) value = tpu_pkg::Fp32CanonicalNan;
          else if (inf || alpha_inf)            value = {product_sign, 8'hFF, 23'h0};
          else if (alpha_zero)                  value = {product_sign, 31'h0};
          else                                  exact = 1'b0;
        end
      end
      tpu_isa_pkg::FuncSigmoid, tpu_isa_pkg::FuncTanh: exact = 1'b0;
      tpu_isa_pkg::FuncGelu: begin
        if (exponent < ExpLarge) exact = 1'b0;
        else if (sign)      value = 32'h8000_0000;
      end
      tpu_isa_pkg::FuncExp: begin
        if (vector_functions) exact = 1'b0;
      end
      tpu_isa_pkg::FuncRecip: begin
        if (vector_functions) begin
          if (zero)     value = {sign, 8'hFF, 23'h0};
          else if (inf) value = {sign, 31'h0};
          else          exact = 1'b0;
        end
      end
      tpu_isa_pkg::FuncRsqrt: begin
        if (vector_functions) begin
          if (zero)      value = {sign, 8'hFF, 23'h0};
          else if (sign) value = tpu_pkg::Fp32CanonicalNan;
          else if (inf)  value = 32'h0;
          else           exact = 1'b0;
        end
      end
      default: ;
    endcase
    if (nan) begin
      exact = 1'b1;
      value = tpu_pkg::Fp32CanonicalNan;
    end
    exact_result = {exact, value};
  endfunction

endpackage
