// Reset for a board: asserted at once (asynchronously) while rst_ni is low,
// released two clock edges after rst_ni rises, in step with the clock, so that
// every flop leaves reset in the same cycle.
module tpu_reset_sync (
  input  logic clk_i,
  input  logic rst_ni,   // asynchronous: a button, a PLL's lock
  output logic rst_no
);

  logic [1:0] stages_d, stages_q;

  assign stages_d = {stages_q[0], 1'b1};

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) stages_q <= '0;
    else         stages_q <= stages_d;
  end

  assign rst_no = stages_q[1];

endmodule
