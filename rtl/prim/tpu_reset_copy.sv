// One unit's copy of the core reset (tpu_array_core, tpu_seq_core): a flop loaded with the reset
// request, so the unit is in reset in the cycle after the request, exactly as
// if one register drove every unit. Each unit has its own copy because the
// core reset reaches some ten thousand flops: from one flop across the whole
// chip it was the longest path of an FPGA build (20 ns of routing on an
// ECP5), from one flop per unit it is a local net. keep_hierarchy stops Yosys
// from merging the copies back into one flop.
(* keep_hierarchy *)
module tpu_reset_copy (
  input  logic clk_i,
  input  logic rst_ni,     // the board's reset: the unit is in reset while it is low
                           // and for one cycle after
  input  logic reset_i,    // a core reset request: the unit is reset in the next cycle
  output logic rst_no      // the unit's asynchronous reset, from a flop (glitch-free)
);

  logic rst_n_d, rst_n_q;

  assign rst_n_d = !reset_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) rst_n_q <= 1'b0;
    else         rst_n_q <= rst_n_d;
  end

  assign rst_no = rst_n_q;

endmodule
