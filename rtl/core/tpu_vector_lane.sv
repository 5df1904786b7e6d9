// One lane of the vector unit (ELTWISE, N-VEC of docs/numerics.md): the operation op_i of a_i
// and b_i, fp32 by tpu_fp_pkg's functions, or with int32_i int32 (wrapping, signed max and
// min); quant and dequant take a_i's fp32 value (an int32 a_i rounded) times the fp32 b_i, quant
// then rounded to an integer. Combinational: the vector unit registers its lanes' results.
module tpu_vector_lane (
  input  logic [3:0]  op_i,
  input  logic        int32_i,
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] result_o
);

  logic [31:0] addend, fp_sum, int_max, int_min, int_product, scaled;

  always_comb begin
    // One adder for add and sub: sub adds B with its sign flipped.
    addend      = {b_i[31] ^ (op_i == tpu_isa_pkg::VopSub), b_i[30:0]};
    fp_sum      = tpu_fp_pkg::add_round(tpu_fp_pkg::add_normalise(tpu_fp_pkg::add_align(
                      tpu_fp_pkg::add_order(a_i, addend))));
    int_product = a_i * b_i;
    int_max     = $signed(a_i) >= $signed(b_i) ? a_i : b_i;
    int_min     = $signed(a_i) >= $signed(b_i) ? b_i : a_i;
    scaled      = tpu_fp_pkg::fp32_mul(int32_i ? tpu_fp_pkg::fp32_from_int32(a_i) : a_i, b_i);
    unique case (op_i)
      tpu_isa_pkg::VopAdd:   result_o = int32_i ? a_i + b_i : fp_sum;
      tpu_isa_pkg::VopSub:   result_o = int32_i ? a_i - b_i : fp_sum;
      tpu_isa_pkg::VopMul:   result_o = int32_i ? int_product : tpu_fp_pkg::fp32_mul(a_i, b_i);
      tpu_isa_pkg::VopMax:   result_o = int32_i ? int_max : tpu_fp_pkg::fp32_max_min(a_i, b_i, 1'b1);
      tpu_isa_pkg::VopMin:   result_o = int32_i ? int_min : tpu_fp_pkg::fp32_max_min(a_i, b_i, 1'b0);
      tpu_isa_pkg::VopQuant: result_o = tpu_fp_pkg::fp32_to_int32(scaled);
      default:               result_o = scaled;  // dequant: the decoder refuses the others
    endcase
  end

endmodule
