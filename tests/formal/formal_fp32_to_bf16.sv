// Miter: tpu_fp32_to_bf16 with Stages registers against N-OUT written from the definition
// of IEEE round to nearest even on the significand (SymFPU has no format conversion): keep
// the top 8 of the 24 significand bits, round up when the 16 below are more than half, or
// exactly half with the kept part odd; a carry out of the significand raises the exponent,
// and an exponent that reaches 255 is infinity. The RTL instead adds the round bit to the
// bf16 encoding, letting the carry run into the exponent.
module formal_fp32_to_bf16 #(
  parameter int unsigned Stages = 0
) (
  input  logic        clk_i,
  input  logic [31:0] value_i,
  output logic        ok_o
);

  logic [15:0] rounded, expected;
  logic [31:0] value_late;
  logic [23:0] significand;
  logic [8:0]  kept;
  logic        round_up;
  logic [8:0]  exponent;

  tpu_fp32_to_bf16 #(.PipeStages(Stages)) u_dut (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .value_i, .value_o(rounded)
  );

  tpu_delay #(.Width(32), .Depth(Stages)) u_operand (
    .clk_i, .rst_ni(1'b1), .en_i(1'b1), .data_i(value_i), .data_o(value_late)
  );

  always_comb begin
    significand = {1'b1, value_late[22:0]};
    round_up    = significand[15:0] > 16'h8000 || (significand[15:0] == 16'h8000 && significand[16]);
    kept        = {1'b0, significand[23:16]} + {8'h0, round_up};
    exponent    = {1'b0, value_late[30:23]} + {8'h0, kept[8]};
    if (value_late[30:23] == 8'hFF) begin
      expected = value_late[22:0] != 23'h0 ? 16'h7FC0 : {value_late[31], 15'h7F80};
    end else if (value_late[30:23] == 8'h00) begin
      expected = {value_late[31], 15'h0};
    end else if (exponent >= 9'd255) begin
      expected = {value_late[31], 15'h7F80};
    end else begin
      expected = {value_late[31], exponent[7:0], kept[8] ? 7'h0 : kept[6:0]};
    end
  end

  assign ok_o = rounded == expected;

endmodule
