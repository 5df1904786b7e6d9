// A chain of Depth enabled registers (Depth = 0 is a wire). Used for the input
// skew and output de-skew of the systolic array and for the valid pipeline.
module tpu_delay #(
  parameter int unsigned Width = 1,
  parameter int unsigned Depth = 1
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             en_i,
  input  logic [Width-1:0] data_i,
  output logic [Width-1:0] data_o
);

  // stages[s*Width +: Width] is the input of register s; the last slot the output.
  logic [(Depth+1)*Width-1:0] stages;
  assign stages[0 +: Width] = data_i;

  for (genvar s = 0; s < Depth; s++) begin : g_stage
    tpu_pipe_reg #(.Width(Width), .Enable(1'b1)) u_reg (
      .clk_i, .rst_ni, .en_i,
      .data_i(stages[s*Width +: Width]),
      .data_o(stages[(s+1)*Width +: Width])
    );
  end

  assign data_o = stages[Depth*Width +: Width];

  if (Depth == 0) begin : g_wire
    logic unused_ctrl;
    assign unused_ctrl = ^{clk_i, rst_ni, en_i};
  end

endmodule
