// A chain of Depth enabled registers (Depth = 0 is a wire). Used for the input
// skew and output de-skew of the systolic array and for the valid pipeline.
// The chain is one shift register, so a simulator spends one statement on it
// whatever its depth.
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

  if (Depth == 0) begin : g_wire
    assign data_o = data_i;
    logic unused_ctrl;
    assign unused_ctrl = ^{clk_i, rst_ni, en_i};
  end else begin : g_chain
    // Bits [s*Width +: Width] are register s's output; a new value enters at
    // register 0.
    localparam int unsigned Bits = Depth * Width;
    logic [Bits-1:0] stage_q;

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni)   stage_q <= '0;
      else if (en_i) stage_q <= Bits'({stage_q, data_i});
    end

    assign data_o = stage_q[Bits-1 -: Width];
  end

endmodule
