// First-word-fall-through FIFO in registers, with valid/ready on both sides.
// For small queues (a few entries); tpu_ram_fifo keeps deep ones in block RAM.
// A push into a full FIFO is allowed in the cycle it pops, unless
// InReadyRegistered: then in_ready_o comes from the count register alone, so
// no path runs from out_ready_i to in_ready_o (a full FIFO takes its next entry
// a cycle after the pop).
`include "tpu_assert.svh"

module tpu_fifo #(
  parameter int unsigned Width = 8,
  parameter int unsigned Depth = 2,
  parameter bit          InReadyRegistered = 1'b0
) (
  input  logic             clk_i,
  input  logic             rst_ni,

  input  logic             in_valid_i,
  output logic             in_ready_o,
  input  logic [Width-1:0] in_data_i,

  output logic             out_valid_o,
  input  logic             out_ready_i,
  output logic [Width-1:0] out_data_o,

  output logic [$clog2(Depth+1)-1:0] count_o
);

  if (Width < 1 || Depth < 1) begin : g_bad_params
    $error("tpu_fifo: Width and Depth must be >= 1");
  end

  localparam int unsigned PtrWidth   = (Depth > 1) ? $clog2(Depth) : 1;
  localparam int unsigned CountWidth = $clog2(Depth + 1);
  localparam int unsigned LastSlotIdx = Depth - 1;
  localparam logic [PtrWidth-1:0]   LastSlot  = LastSlotIdx[PtrWidth-1:0];
  localparam logic [CountWidth-1:0] FullCount = Depth[CountWidth-1:0];

  // Slot s is bits [s*Width +: Width].
  logic [Depth*Width-1:0] slots_d, slots_q;
  logic [PtrWidth-1:0]   rd_ptr_d, rd_ptr_q, wr_ptr_d, wr_ptr_q;
  logic [CountWidth-1:0] count_d, count_q;
  logic                  push, pop;

  // Each handshake signal is its own assignment: the output side depends only on
  // the state, so a consumer's ready may depend on out_valid_o without forming a
  // combinational loop in the simulator's eyes.
  assign out_valid_o = count_q != '0;

  // Slots are chosen by comparing the pointer with each slot's number, not by
  // a part-select at pointer x Width: for a Width that is not a power of two
  // Yosys builds that product with a multiplier block, whose few routes out
  // then carry the whole slot choice.
  always_comb begin
    out_data_o = slots_q[0 +: Width];
    for (int unsigned s = 1; s < Depth; s++) begin
      if (rd_ptr_q == PtrWidth'(s)) out_data_o = slots_q[s*Width +: Width];
    end
  end
  assign pop         = out_valid_o && out_ready_i;
  assign in_ready_o  = count_q != FullCount || (pop && !InReadyRegistered);
  assign push        = in_valid_i && in_ready_o;

  always_comb begin
    // The slot under the write pointer is free whenever the FIFO is ready, so
    // it may take whatever is offered: it counts only once pushed. The wide
    // write enable then does not wait for the producer's valid.
    slots_d = slots_q;
    for (int unsigned s = 0; s < Depth; s++) begin
      if (in_ready_o && wr_ptr_q == PtrWidth'(s)) slots_d[s*Width +: Width] = in_data_i;
    end

    wr_ptr_d = wr_ptr_q;
    if (push) wr_ptr_d = (wr_ptr_q == LastSlot) ? '0 : wr_ptr_q + 1'b1;
    rd_ptr_d = rd_ptr_q;
    if (pop) rd_ptr_d = (rd_ptr_q == LastSlot) ? '0 : rd_ptr_q + 1'b1;

    count_d = count_q;
    if (push && !pop) count_d = count_q + 1'b1;
    if (pop && !push) count_d = count_q - 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      slots_q  <= '0;
      rd_ptr_q <= '0;
      wr_ptr_q <= '0;
      count_q  <= '0;
    end else begin
      slots_q  <= slots_d;
      rd_ptr_q <= rd_ptr_d;
      wr_ptr_q <= wr_ptr_d;
      count_q  <= count_d;
    end
  end

  assign count_o = count_q;

`ifndef SYNTHESIS
  logic [63:0] in_fold;
  tpu_fold64 #(.Width(Width)) u_in_fold (.value_i(in_data_i), .fold_o(in_fold));
  `TPU_ASSUME_NEXT(a_in_stable, in_valid_i && !in_ready_o, in_valid_i && $stable(in_fold),
                   "input beat changed or withdrawn before it was taken")
`endif

endmodule
