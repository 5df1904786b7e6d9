// The queue of decoded operations in front of one unit. An entry stays in the
// queue until the unit reports it complete, so the queue is also the list of
// that unit's operations in flight: it shows every entry's footprint to the
// issue stage for hazard checks. `peek` reads the entry in slot `peek_slot_i`
// (the matrix unit starts later operations before earlier ones have completed;
// it keeps the slot it reads in a register, so no pointer arithmetic comes
// before the entry).
`include "tpu_assert.svh"

module tpu_op_queue #(
  parameter int unsigned Depth = 4,
  localparam int unsigned OffWidth = (Depth > 1) ? $clog2(Depth) : 1
) (
  input  logic                                    clk_i,
  input  logic                                    rst_ni,

  input  logic                                    push_i,
  input  tpu_core_pkg::op_t                       push_op_i,
  input  logic [tpu_core_pkg::FootprintBits-1:0]  push_fp_i,
  output logic                                    full_o,

  output logic                                    empty_o,
  output logic [$clog2(Depth+1)-1:0]              count_o,
  output tpu_core_pkg::op_t                       head_o,
  input  logic [OffWidth-1:0]                     peek_slot_i,
  output tpu_core_pkg::op_t                       peek_o,
  input  logic                                    pop_i,

  output logic [Depth-1:0]                        valid_o,
  output logic [Depth*tpu_core_pkg::FootprintBits-1:0] fps_o
);

  localparam int unsigned OpBits     = tpu_core_pkg::OpBits;
  localparam int unsigned FpBits     = tpu_core_pkg::FootprintBits;
  localparam int unsigned CountWidth = $clog2(Depth + 1);
  localparam int unsigned LastSlotIdx = Depth - 1;
  localparam logic [OffWidth-1:0]   LastSlot  = LastSlotIdx[OffWidth-1:0];
  localparam logic [CountWidth-1:0] FullCount = Depth[CountWidth-1:0];

  if (Depth < 1 || Depth > 16) begin : g_bad_depth
    $error("tpu_op_queue: Depth must be in 1..16");
  end

  logic [Depth*OpBits-1:0] ops_d, ops_q;
  logic [Depth*FpBits-1:0] fps_d, fps_q;
  logic [Depth-1:0]        valid_d, valid_q;
  logic [OffWidth-1:0]     head_d, head_q, tail_d, tail_q;
  logic [CountWidth-1:0]   count_d, count_q;

  always_comb begin
    full_o    = count_q == FullCount;
    empty_o   = count_q == '0;
    head_o    = ops_q[head_q*OpBits +: OpBits];
    peek_o    = ops_q[peek_slot_i*OpBits +: OpBits];

    ops_d   = ops_q;
    fps_d   = fps_q;
    valid_d = valid_q;
    head_d  = head_q;
    tail_d  = tail_q;
    count_d = count_q;
    if (pop_i) begin
      valid_d[head_q] = 1'b0;
      head_d = (head_q == LastSlot) ? '0 : head_q + 1'b1;
    end
    // The tail slot is free while the queue is not full, so it takes the
    // offered operation every cycle and push only marks it valid: the issue
    // stage's dispatch decision (its hazard checks) then drives a few pointer
    // bits instead of the enables of every bit of the wide entries, which was
    // the critical path on the FPGA.
    if (!full_o) begin
      ops_d[tail_q*OpBits +: OpBits] = push_op_i;
      fps_d[tail_q*FpBits +: FpBits] = push_fp_i;
    end
    if (push_i) begin
      valid_d[tail_q] = 1'b1;
      tail_d = (tail_q == LastSlot) ? '0 : tail_q + 1'b1;
    end
    if (push_i && !pop_i) count_d = count_q + 1'b1;
    if (pop_i && !push_i) count_d = count_q - 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ops_q   <= '0;
      fps_q   <= '0;
      valid_q <= '0;
      head_q  <= '0;
      tail_q  <= '0;
      count_q <= '0;
    end else begin
      ops_q   <= ops_d;
      fps_q   <= fps_d;
      valid_q <= valid_d;
      head_q  <= head_d;
      tail_q  <= tail_d;
      count_q <= count_d;
    end
  end

  assign count_o = count_q;
  assign valid_o = valid_q;
  assign fps_o   = fps_q;

`ifndef SYNTHESIS
  // Yosys, the formal tools' front end too, reads no $bits of a type.
`ifndef YOSYS
  if (OpBits != $bits(tpu_core_pkg::op_t) ||
      FpBits != $bits(tpu_core_pkg::footprint_t)) begin : g_bad_widths
    $error("tpu_op_queue: tpu_core_pkg width constants disagree with the types");
  end
`endif
  `TPU_ASSUME(a_no_push_when_full, !push_i || !full_o, "push into a full queue")
  `TPU_ASSUME(a_no_pop_when_empty, !pop_i || !empty_o, "pop from an empty queue")
`endif

endmodule
