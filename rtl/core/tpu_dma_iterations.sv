// The DMA commands of one operation: `count` transfers, one per iteration, the
// host address advancing by `host_step` each time. Shared by the units that
// move data between host memory and the core (READ_HOST, READ_WEIGHTS,
// WRITE_HOST). An operation starts when it reaches the head of its unit's
// queue (start_o, one cycle, for the unit to set up its own counters) and ends
// when the unit pops it (done_i).
//
// The command's fields all come from registers set at the start: the shape of
// a transfer (rows, their size and stride) is the head entry's, which stays
// put until the pop, so registering it changes no cycle, and the burst
// splitter's first step then starts from flops rather than from the queue.
// The unit counts its rows and iterations against the same registers
// (cmd_rows_o, last_iter_o), not against the queue's far-away entries.
`include "tpu_assert.svh"

module tpu_dma_iterations (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        abort_i,

  input  logic        op_valid_i,   // an operation is at the head of the queue
  input  logic        done_i,       // ... and leaves it this cycle
  input  logic [31:0] host_addr_i,
  input  logic [31:0] host_step_i,
  input  logic [15:0] count_i,
  input  logic [31:0] stride_i,     // the shape of each transfer
  input  logic [15:0] rows_i,
  input  logic [3:0]  row_log2_i,

  output logic        start_o,      // the head operation begins this cycle
  output logic        cmd_valid_o,
  input  logic        cmd_ready_i,
  output logic [31:0] cmd_addr_o,
  output logic [31:0] cmd_stride_o,
  output logic [15:0] cmd_rows_o,
  output logic [3:0]  cmd_row_log2_o,
  output logic [15:0] last_iter_o   // count - 1, from the start on
);

  logic        started_d, started_q, all_sent_d, all_sent_q;
  logic [15:0] sent_d, sent_q, last_iter_d, last_iter_q;
  logic [31:0] addr_d, addr_q, stride_d, stride_q;
  logic [15:0] rows_d, rows_q;
  logic [3:0]  row_log2_d, row_log2_q;

  assign start_o     = op_valid_i && !started_q;
  assign cmd_valid_o = op_valid_i && started_q && !all_sent_q && !abort_i;
  assign cmd_addr_o     = addr_q;
  assign cmd_stride_o   = stride_q;
  assign cmd_rows_o     = rows_q;
  assign cmd_row_log2_o = row_log2_q;
  assign last_iter_o    = last_iter_q;

  always_comb begin
    started_d  = started_q;
    all_sent_d = all_sent_q;
    sent_d     = sent_q;
    addr_d     = addr_q;
    stride_d   = stride_q;
    rows_d     = rows_q;
    row_log2_d  = row_log2_q;
    last_iter_d = last_iter_q;
    if (start_o) begin
      started_d  = 1'b1;
      all_sent_d = 1'b0;
      sent_d     = '0;
      addr_d     = host_addr_i;
      stride_d   = stride_i;
      rows_d     = rows_i;
      row_log2_d  = row_log2_i;
      last_iter_d = count_i - 1'b1;
    end else if (cmd_valid_o && cmd_ready_i) begin
      sent_d     = sent_q + 1'b1;
      addr_d     = addr_q + host_step_i;
      all_sent_d = sent_q == last_iter_q;
    end
    if (done_i) started_d = 1'b0;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      started_q  <= 1'b0;
      all_sent_q <= 1'b0;
      sent_q     <= '0;
      addr_q     <= '0;
      stride_q   <= '0;
      rows_q     <= '0;
      row_log2_q  <= '0;
      last_iter_q <= '0;
    end else begin
      started_q  <= started_d;
      all_sent_q <= all_sent_d;
      sent_q     <= sent_d;
      addr_q     <= addr_d;
      stride_q   <= stride_d;
      rows_q     <= rows_d;
      row_log2_q  <= row_log2_d;
      last_iter_q <= last_iter_d;
    end
  end

  `TPU_ASSUME(a_done_after_all_sent, !done_i || (started_q && all_sent_q),
              "operation done before all its transfers were requested")
  `TPU_ASSUME(a_shape_kept,
              !(op_valid_i && started_q) ||
              (cmd_stride_o == stride_i && cmd_rows_o == rows_i &&
               cmd_row_log2_o == row_log2_i && last_iter_o == count_i - 1'b1),
              "the head operation's transfer shape changed while it ran")

endmodule
