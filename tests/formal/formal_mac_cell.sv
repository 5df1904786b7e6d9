// Miter: one multiply-add cell (a 1 x 1 tpu_systolic_array) with MulStages and AddStages
// pipeline registers, in each mode the parameters build. A bf16 activation is checked against
// N-MAC made of the proved units, tpu_fp32_add(S, tpu_bf16_mul(a, w)) without pipeline
// registers; an activation marked int8 against Q-MAC (an exact int8 product added with
// wrap-around).
//
// Why the units and not SymFPU directly: the fp32_add and bf16_mul proofs show
//   tpu_fp32_add(x, y)  = C(add(F(x), F(y)))   and   tpu_bf16_mul(a, w) = C(mul(W(a), W(w)))
// for every input, with add and mul SymFPU's (RNE), F the operands' flush, W the widening
// and C the results' flush and canonical NaN (formal_contract_pkg). C leaves no subnormal, so
// F(C(v)) = C(v), and the reference here equals C(add(F(S), C(mul(W(a), W(w))))), N-MAC in
// SymFPU's terms. The direct miter, both SymFPU circuits beside the cell, did not finish in
// 20 minutes; this one leaves the solver two copies of the same arithmetic.
//
// Every input is free in every cycle. The proof pins the schedule (scripts/formal.py): a
// weight beat for row 0 in step 1, the activation with commit in step 2, and the mode of that
// activation (the split: one proof for each mode). The reference works in step with the
// cell: it multiplies in step 2 (the activation of step 2, the weight of step 1), adds the
// partial sum of step 2 + MulStages, and its result meets psum_o AddStages + 1 steps later.
module formal_mac_cell #(
  parameter int unsigned MulStages = 0,
  parameter int unsigned AddStages = 0,
  parameter bit          Int8      = 1'b1,
  parameter bit          Float     = 1'b1
) (
  input  logic        clk_i,
  input  logic [15:0] act_i,
  input  logic        act_int8_i,
  input  logic        commit_i,
  input  logic        wgt_valid_i,
  input  logic        wgt_tag_i,
  input  logic [15:0] wgt_i,
  input  logic [31:0] psum_i,
  output logic        ok_o
);

  logic [31:0] psum, float_product, float_product_late, float_sum;
  (* keep *) logic [31:0] float_product_at_cell, int_product_at_cell;  // read only by the lemmas
  logic [31:0] int_product, int_product_late, expected, expected_late;
  logic [15:0] wgt_prev;
  logic        int8, int8_late;

  tpu_systolic_array #(
    .Rows(1), .Cols(1), .TagWidth(1), .MulStages(MulStages), .AddStages(AddStages),
    .Int8(Int8), .Float(Float)
  ) u_dut (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1),
    .act_i, .act_int8_i, .commit_i, .wgt_valid_i, .wgt_tag_i, .wgt_i, .psum_i, .psum_o(psum)
  );

  // The multiply: this step's activation, the last step's weight.
  tpu_delay #(.Width(16), .Depth(1)) u_wgt_prev (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i(wgt_i), .data_o(wgt_prev)
  );
  tpu_bf16_mul #(.PipeStages(0)) u_float_mul (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .a_i(act_i), .b_i(wgt_prev), .product_o(float_product)
  );
  // Q-MAC: the int8 low bytes of the lanes, an exact product.
  assign int_product = 32'($signed(act_i[7:0]) * $signed(wgt_prev[7:0]));
  assign int8        = !Float || (Int8 && act_int8_i);

  // The product where the cell hands it to its product register (a cycle after the multiply
  // with MulStages >= 1): the proof's lemma (scripts/formal.py) compares the two there, the
  // float product in a float proof, the int32 one in an int8 proof.
  tpu_delay #(.Width(64), .Depth(MulStages >= 1 ? 1 : 0)) u_product_at_cell (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i({float_product, int_product}),
    .data_o({float_product_at_cell, int_product_at_cell})
  );

  tpu_delay #(.Width(65), .Depth(MulStages)) u_product_late (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i({float_product, int_product, int8}),
    .data_o({float_product_late, int_product_late, int8_late})
  );

  // The add, with the partial sum of its step; an int32 sum wraps.
  tpu_fp32_add #(.PipeStages(0)) u_float_add (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .x_i(psum_i), .y_i(float_product_late),
    .sum_o(float_sum)
  );
  assign expected = int8_late ? psum_i + int_product_late : float_sum;

  tpu_delay #(.Width(32), .Depth(AddStages + 1)) u_expected_late (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i(expected), .data_o(expected_late)
  );

  assign ok_o = psum == expected_late;

endmodule
