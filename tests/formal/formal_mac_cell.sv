// Miter: one multiply-add cell (a 1 x 1 tpu_systolic_array) with MulStages and AddStages
// pipeline registers, in each mode the parameters build, against N-MAC made of SymFPU's
// binary32 multiply and add (symfpu_mul, symfpu_add, round to nearest even) wrapped in the
// contract, and against Q-MAC (an exact int8 product added with wrap-around) for an
// activation marked int8.
//
// Every input is free in every cycle. The proof pins the schedule (scripts/formal.py): a
// weight beat for row 0 in step 1, the activation with commit in step 2. The reference works
// in step with the cell: it multiplies in step 2 (the activation of step 2, the weight of
// step 1), adds the partial sum of step 2 + MulStages, and its result meets psum_o
// AddStages + 1 steps later.
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

  logic [31:0] psum, ieee_product, ieee_sum, int_product, expected, expected_late;
  logic [31:0] float_product, float_product_late, int_product_late;
  logic [15:0] wgt_prev;
  logic        int8, int8_late;
  logic [9:0]  flags;

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
  symfpu_mul u_ieee_mul (
    .a(formal_contract_pkg::widen(act_i)), .b(formal_contract_pkg::widen(wgt_prev)),
    .c(32'h0), .rm(5'b00001), .o(ieee_product),
    .NV(flags[0]), .DZ(flags[1]), .OF(flags[2]), .UF(flags[3]), .NX(flags[4])
  );
  assign float_product = formal_contract_pkg::canonical_out(ieee_product);
  // Q-MAC: the int8 low bytes of the lanes, an exact product.
  assign int_product = 32'($signed(act_i[7:0]) * $signed(wgt_prev[7:0]));
  assign int8        = !Float || (Int8 && act_int8_i);

  tpu_delay #(.Width(65), .Depth(MulStages)) u_product_late (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i({float_product, int_product, int8}),
    .data_o({float_product_late, int_product_late, int8_late})
  );

  // The add, with the partial sum of its step; an int32 sum wraps.
  symfpu_add u_ieee_add (
    .a(formal_contract_pkg::flush_in(psum_i)), .b(float_product_late),
    .c(32'h0), .rm(5'b00001), .o(ieee_sum),
    .NV(flags[5]), .DZ(flags[6]), .OF(flags[7]), .UF(flags[8]), .NX(flags[9])
  );
  assign expected = int8_late ? psum_i + int_product_late
                              : formal_contract_pkg::canonical_out(ieee_sum);

  tpu_delay #(.Width(32), .Depth(AddStages + 1)) u_expected_late (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i(expected), .data_o(expected_late)
  );

  assign ok_o = psum == expected_late;

endmodule
