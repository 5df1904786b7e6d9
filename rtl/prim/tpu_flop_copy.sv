// One unit's copy of a flop of the issue stage (tpu_array_core: the aborts): loaded
// from the same next-state value, so every copy equals the flop it stands for,
// cycle for cycle. An abort reaches the DMA engines of three units; from one
// flop it was the longest path of an FPGA build (13.6 ns of routing on one net
// of an ECP5), from one flop per unit it is a local net. keep_hierarchy stops
// Yosys from merging the copies back into one flop.
(* keep_hierarchy *)
module tpu_flop_copy (
  input  logic clk_i,
  input  logic rst_ni,
  input  logic d_i,   // the flop's next value
  output logic q_o
);

  logic q_d, q_q;

  assign q_d = d_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) q_q <= 1'b0;
    else         q_q <= q_d;
  end

  assign q_o = q_q;

endmodule
