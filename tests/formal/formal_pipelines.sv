// Miters for the pipeline registers: each arithmetic unit with Stages registers against the
// same unit with none (itself proved equal to the IEEE reference), Stages cycles later.
// Every operand is free in every cycle, so a register that mixed values of two cycles would
// show. Proved from a free initial state with en_i at 1; the stall check (scripts/formal.py)
// shows en_i enables every register of the unit.

module formal_fp32_add_pipeline #(
  parameter int unsigned Stages = 1
) (
  input  logic        clk_i,
  input  logic [31:0] x_i,
  input  logic [31:0] y_i,
  output logic        ok_o
);
  logic [31:0] piped, unpiped, unpiped_late;
  tpu_fp32_add #(.PipeStages(Stages)) u_piped (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .x_i, .y_i, .sum_o(piped)
  );
  tpu_fp32_add #(.PipeStages(0)) u_unpiped (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .x_i, .y_i, .sum_o(unpiped)
  );
  tpu_delay #(.Width(32), .Depth(Stages)) u_late (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i(unpiped), .data_o(unpiped_late)
  );
  assign ok_o = piped == unpiped_late;
endmodule

module formal_bf16_mul_pipeline #(
  parameter int unsigned Stages = 1
) (
  input  logic        clk_i,
  input  logic [15:0] a_i,
  input  logic [15:0] b_i,
  output logic        ok_o
);
  logic [31:0] piped, unpiped, unpiped_late;
  tpu_bf16_mul #(.PipeStages(Stages)) u_piped (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .a_i, .b_i, .product_o(piped)
  );
  tpu_bf16_mul #(.PipeStages(0)) u_unpiped (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .a_i, .b_i, .product_o(unpiped)
  );
  tpu_delay #(.Width(32), .Depth(Stages)) u_late (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i(unpiped), .data_o(unpiped_late)
  );
  assign ok_o = piped == unpiped_late;
endmodule

module formal_fp32_to_bf16_pipeline #(
  parameter int unsigned Stages = 1
) (
  input  logic        clk_i,
  input  logic [31:0] value_i,
  output logic        ok_o
);
  logic [15:0] piped, unpiped, unpiped_late;
  tpu_fp32_to_bf16 #(.PipeStages(Stages)) u_piped (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .value_i, .value_o(piped)
  );
  tpu_fp32_to_bf16 #(.PipeStages(0)) u_unpiped (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .value_i, .value_o(unpiped)
  );
  tpu_delay #(.Width(16), .Depth(Stages)) u_late (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i(unpiped), .data_o(unpiped_late)
  );
  assign ok_o = piped == unpiped_late;
endmodule
