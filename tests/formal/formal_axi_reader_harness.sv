// Proof harness for tpu_axi_reader, the AXI4 DMA read engine (docs/verification.md), with a
// 4-byte bus, rows of up to 8 bytes and a 4-beat buffer (bursts of up to 2 beats). Its own
// checks (AR and rows held until taken, credits within the buffer, no beat without room)
// are proved, and with them, from AXI4's rules at its AR and R ports:
//   - every burst is INCR-shaped and legal: at most MaxBurst beats, a beat size the bus
//     has, an address aligned to it, and no 4 KiB boundary crossed;
//   - R is always ready and the engine's count of beats on the way matches the bus's: a beat
//     is neither dropped nor taken twice;
//   - each command gives exactly its rows, the last one marked, in order.
// The environment: commands held until taken, 1 to 3 rows of 2 to 8 bytes at addresses
// aligned to the beat, and a slave that returns exactly the beats it was asked for. With
// Abort = 0 there is no abort; with Abort = 1 an abort may come in any cycle and stays (the
// core stops), and then the AXI rules still hold, no burst starts after it, and the engine is
// quiet only once the slave owes nothing (the rows of an aborted command are not checked).
`include "tpu_assert.svh"

module formal_axi_reader_harness #(
  parameter int unsigned BusBytes    = 4,
  parameter int unsigned MaxRowBytes = 8,
  parameter int unsigned BufBeats    = 4,
  parameter int unsigned RowsWidth   = 2,
  parameter bit          Abort       = 1'b0
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 abort_i,
  input  logic                 cmd_valid_i,
  input  logic [31:0]          cmd_addr_i,
  input  logic [31:0]          cmd_stride_i,
  input  logic [RowsWidth-1:0] cmd_rows_i,
  input  logic [3:0]           cmd_row_bytes_log2_i,
  input  logic                 ar_ready_i,
  input  logic                 r_valid_i,
  input  logic [31:0]          r_data_i,
  input  logic [1:0]           r_resp_i,
  input  logic                 row_ready_i
);

  localparam int unsigned MaxBurst = BufBeats / 2;
  localparam int unsigned BusLog2  = $clog2(BusBytes);

  logic                 cmd_ready, ar_valid, r_ready, row_valid, row_last, row_error;
  logic                 bus_error, quiet, idle;
  logic [31:0]          ar_addr;
  logic [7:0]           ar_len;
  logic [2:0]           ar_size;
  logic [MaxRowBytes*8-1:0] row_data;

  tpu_axi_reader #(
    .BusBytes(BusBytes), .MaxRowBytes(MaxRowBytes), .BufBeats(BufBeats), .RowsWidth(RowsWidth)
  ) u_dut (
    .clk_i, .rst_ni, .abort_i,
    .cmd_valid_i, .cmd_ready_o(cmd_ready), .cmd_addr_i, .cmd_stride_i, .cmd_rows_i,
    .cmd_row_bytes_log2_i,
    .ar_valid_o(ar_valid), .ar_ready_i, .ar_addr_o(ar_addr), .ar_len_o(ar_len),
    .ar_size_o(ar_size),
    .r_valid_i, .r_ready_o(r_ready), .r_data_i, .r_resp_i,
    .row_valid_o(row_valid), .row_ready_i, .row_data_o(row_data), .row_last_o(row_last),
    .row_error_o(row_error), .bus_error_o(bus_error), .quiet_o(quiet), .idle_o(idle)
  );

  // Reset in the first cycle, then none.
  logic started_q = 1'b0;
  always_ff @(posedge clk_i) started_q <= 1'b1;
  always_comb assume (rst_ni == started_q);

  // Abort: never, or once raised held until reset.
  if (Abort) begin : g_abort
    `TPU_ASSUME_NEXT(m_abort_stays, abort_i, abort_i, "abort withdrawn before reset")
    `TPU_ASSERT_NEXT(a_no_burst_after_abort, abort_i && !ar_valid, !ar_valid,
                     "a burst requested after the abort")
  end else begin : g_no_abort
    `TPU_ASSUME(m_no_abort, !abort_i, "no abort in this proof")
  end

  // Commands: held until taken, 1 to 3 rows of 2 to MaxRowBytes bytes, the address and the
  // stride aligned to the beat (a row, or the bus where a row is wider: tpu_axi_bursts).
  logic [31:0] cmd_beat_mask;
  assign cmd_beat_mask = (cmd_row_bytes_log2_i < 4'(BusLog2) ? 32'd1 << cmd_row_bytes_log2_i
                                                              : 32'(BusBytes)) - 32'd1;
  `TPU_ASSUME_NEXT(m_cmd_held, cmd_valid_i && !cmd_ready,
                   cmd_valid_i && $stable(cmd_addr_i) && $stable(cmd_stride_i) &&
                   $stable(cmd_rows_i) && $stable(cmd_row_bytes_log2_i),
                   "command withdrawn or changed before it was taken")
  `TPU_ASSUME(m_cmd_legal, !cmd_valid_i || (cmd_rows_i != '0 && cmd_row_bytes_log2_i >= 4'd1 &&
              cmd_row_bytes_log2_i <= 4'($clog2(MaxRowBytes)) &&
              (cmd_addr_i & cmd_beat_mask) == '0 && (cmd_stride_i & cmd_beat_mask) == '0),
              "command out of range")

  // The slave: beats only for bursts it took, as many as they asked for.
  logic [7:0] slave_owed_d, slave_owed_q;
  logic       ar_taken, beat_taken;
  assign ar_taken   = ar_valid && ar_ready_i;
  assign beat_taken = r_valid_i && r_ready;
  always_comb begin
    slave_owed_d = slave_owed_q;
    if (ar_taken)   slave_owed_d = slave_owed_d + ar_len + 1'b1;
    if (beat_taken) slave_owed_d = slave_owed_d - 1'b1;
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) slave_owed_q <= '0;
    else         slave_owed_q <= slave_owed_d;
  end
  `TPU_ASSUME(m_beats_owed, !r_valid_i || slave_owed_q != '0, "a beat nobody asked for")

  // AXI4's burst rules at AR.
  logic [12:0] burst_end;
  assign burst_end = 13'(ar_addr[11:0]) + (13'(ar_len) + 13'd1) * (13'd1 << ar_size);
  `TPU_ASSERT(a_burst_length, !ar_valid || 32'(ar_len) < MaxBurst, "burst longer than MaxBurst")
  `TPU_ASSERT(a_burst_size, !ar_valid || 32'(ar_size) <= BusLog2, "beat wider than the bus")
  `TPU_ASSERT(a_burst_aligned, !ar_valid || (ar_addr & ((32'd1 << ar_size) - 32'd1)) == '0,
              "burst address not aligned to its beat size")
  `TPU_ASSERT(a_burst_in_4k, !ar_valid || burst_end <= 13'd4096, "burst crosses 4 KiB")

  // No beat dropped or taken twice: R is always ready, the engine owes nothing the slave does
  // not, and the slave never owes more than the buffer holds.
  `TPU_ASSERT(a_r_ready, r_ready, "R not ready: a beat could be held up or lost")
  `TPU_ASSERT(a_quiet_means_paid, !quiet || slave_owed_q == '0,
              "quiet with beats still on the way")
  `TPU_ASSERT(a_owed_in_buffer, slave_owed_q <= 8'(BufBeats), "more beats owed than buffer room")

  // Rows: a queue of the row counts of the commands taken, and the rows given of the head.
  localparam int unsigned QueueDepth = 4;
  logic [RowsWidth-1:0] queue_q [QueueDepth];
  logic [2:0]           queue_count_q;
  logic [RowsWidth-1:0] rows_given_q;
  logic                 cmd_taken, row_taken;
  assign cmd_taken = cmd_valid_i && cmd_ready;
  assign row_taken = row_valid && row_ready_i;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      queue_count_q <= '0;
      rows_given_q  <= '0;
      for (int i = 0; i < QueueDepth; i++) queue_q[i] <= '0;
    end else begin
      if (row_taken) begin
        rows_given_q <= row_last ? '0 : rows_given_q + 1'b1;
        if (row_last) begin
          for (int i = 0; i < QueueDepth - 1; i++) queue_q[i] <= queue_q[i + 1];
        end
      end
      if (cmd_taken) queue_q[queue_count_q - 3'(row_taken && row_last)] <= cmd_rows_i;
      queue_count_q <= queue_count_q + 3'(cmd_taken) - 3'(row_taken && row_last);
    end
  end
  `TPU_ASSERT(a_queue_fits, queue_count_q < 3'(QueueDepth), "more commands open than expected")
  `TPU_ASSERT(a_row_for_a_command, abort_i || !row_valid || queue_count_q != '0,
              "a row with no command")
  `TPU_ASSERT(a_row_last,
              abort_i || !row_valid || row_last == (rows_given_q + 1'b1 == queue_q[0]),
              "the last row of a command not marked, or a row marked last too early")

  logic unused;
  assign unused = ^{row_data, row_error, bus_error, idle, r_data_i, r_resp_i};

endmodule
