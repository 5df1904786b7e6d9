// DMA write engine: writes "rows rows of 2^row_bytes_log2 bytes, stride bytes
// apart, to host address addr" with AXI4 INCR bursts (tpu_axi_bursts), taking
// the rows in order from the row stream. Rows narrower than the bus go out as
// narrow beats on the byte lanes of their address, with WSTRB marking them.
//
// cmd_done_o pulses when the
// last write response of a command has arrived, so a command is done only once
// host memory holds its data.
//
// Abort stops new bursts; bursts already announced are completed with
// all-zero strobes (nothing is written) and their responses are collected.
`include "tpu_assert.svh"

module tpu_axi_writer #(
  parameter int unsigned BusBytes        = 16,
  parameter int unsigned MaxRowBytes     = 64,
  parameter int unsigned MaxBurst        = 16,
  parameter int unsigned MaxOutstanding  = 8,   // bursts announced, response not yet back
  parameter int unsigned RowsWidth       = 16,
  localparam int unsigned BusBits        = BusBytes * 8,
  localparam int unsigned RowBits        = MaxRowBytes * 8
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 abort_i,

  input  logic                 cmd_valid_i,
  output logic                 cmd_ready_o,
  input  logic [31:0]          cmd_addr_i,
  input  logic [31:0]          cmd_stride_i,
  input  logic [RowsWidth-1:0] cmd_rows_i,        // >= 1
  input  logic [3:0]           cmd_row_bytes_log2_i,

  input  logic                 row_valid_i,
  output logic                 row_ready_o,
  input  logic [RowBits-1:0]   row_data_i,        // the row's bytes from bit 0

  output logic                 aw_valid_o,
  input  logic                 aw_ready_i,
  output logic [31:0]          aw_addr_o,
  output logic [7:0]           aw_len_o,
  output logic [2:0]           aw_size_o,

  output logic                 w_valid_o,
  input  logic                 w_ready_i,
  output logic [BusBits-1:0]   w_data_o,
  output logic [BusBytes-1:0]  w_strb_o,
  output logic                 w_last_o,

  input  logic                 b_valid_i,
  output logic                 b_ready_o,
  input  logic [1:0]           b_resp_i,

  output logic                 cmd_done_o,
  output logic                 bus_error_o,
  output logic                 idle_o
);

  localparam int unsigned BusLog2        = $clog2(BusBytes);
  localparam int unsigned BeatsPerRowMax = (MaxRowBytes > BusBytes) ? MaxRowBytes / BusBytes : 1;
  localparam int unsigned BeatIdxWidth   = (BeatsPerRowMax > 1) ? $clog2(BeatsPerRowMax) : 1;
  localparam int unsigned RunWidth       = RowsWidth + BeatIdxWidth + 1;

  if (BusBytes < 4 || BusBytes > 64 || (BusBytes & (BusBytes - 1)) != 0) begin : g_bad_bus
    $error("tpu_axi_writer: BusBytes must be a power of two in 4..64");
  end
  if (MaxRowBytes < 2 || MaxRowBytes > 1024 || (MaxRowBytes & (MaxRowBytes - 1)) != 0)
  begin : g_bad_row
    $error("tpu_axi_writer: MaxRowBytes must be a power of two in 2..1024");
  end

  typedef struct packed {
    logic [31:0]          addr;
    logic [31:0]          stride;
    logic [RowsWidth-1:0] rows;
    logic [3:0]           row_log2;
  } cmd_t;

  // ---------------------------------------------------------------------------
  // Addresses: bursts go out on AW; their lengths follow to the W side and
  // their "last of the command" marks to the response side.
  // ---------------------------------------------------------------------------
  cmd_t                cmd_in, wcmd;
  logic                bursts_cmd_ready, wcmd_in_ready, wcmd_valid, wcmd_pop;
  logic                burst_valid, burst_last, take_burst;
  logic [31:0]         burst_addr;
  logic [RunWidth-1:0] burst_beats;
  logic [2:0]          burst_size;
  logic                wlen_in_ready, wlen_valid, wlen_pop;
  logic [7:0]          wlen;
  logic                resp_in_ready, resp_valid, resp_last;
  logic                aw_valid_d, aw_valid_q;
  logic [31:0]         aw_addr_d, aw_addr_q;
  logic [7:0]          aw_len_d, aw_len_q;
  logic [2:0]          aw_size_d, aw_size_q;
  logic [1:0]          unused_wcmd_count, unused_wlen_count;
  logic [$clog2(MaxOutstanding+1)-1:0] unused_resp_count;

  // Fields in declaration order (Yosys reads no assignment patterns).
  assign cmd_in = {cmd_addr_i, cmd_stride_i, cmd_rows_i, cmd_row_bytes_log2_i};

  always_comb begin
    cmd_ready_o = bursts_cmd_ready && wcmd_in_ready;
    take_burst  = burst_valid && (!aw_valid_q || aw_ready_i) && wlen_in_ready && resp_in_ready;
  end

  tpu_axi_bursts #(
    .BusBytes(BusBytes), .MaxBurst(MaxBurst), .RowsWidth(RowsWidth), .RunWidth(RunWidth)
  ) u_bursts (
    .clk_i, .rst_ni, .abort_i,
    .cmd_valid_i   (cmd_valid_i && wcmd_in_ready),
    .cmd_ready_o   (bursts_cmd_ready),
    .cmd_addr_i,
    .cmd_stride_i,
    .cmd_rows_i,
    .cmd_row_log2_i(cmd_row_bytes_log2_i),
    .burst_valid_o (burst_valid),
    .burst_take_i  (take_burst),
    .burst_addr_o  (burst_addr),
    .burst_beats_o (burst_beats),
    .burst_size_o  (burst_size),
    .burst_last_o  (burst_last)
  );

  always_comb begin
    aw_valid_d = aw_valid_q && !aw_ready_i;
    aw_addr_d  = aw_addr_q;
    aw_len_d   = aw_len_q;
    aw_size_d  = aw_size_q;
    if (take_burst) begin
      aw_valid_d = 1'b1;
      aw_addr_d  = burst_addr;
      aw_len_d   = 8'(burst_beats - 1'b1);
      aw_size_d  = burst_size;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      aw_valid_q <= 1'b0;
      aw_addr_q  <= '0;
      aw_len_q   <= '0;
      aw_size_q  <= '0;
    end else begin
      aw_valid_q <= aw_valid_d;
      aw_addr_q  <= aw_addr_d;
      aw_len_q   <= aw_len_d;
      aw_size_q  <= aw_size_d;
    end
  end

  assign aw_valid_o = aw_valid_q;
  assign aw_addr_o  = aw_addr_q;
  assign aw_len_o   = aw_len_q;
  assign aw_size_o  = aw_size_q;

  // Ready from registers: the command and length FIFOs' pops depend on the
  // data path, their pushes lead into the burst splitter's state.
  tpu_fifo #(.Width(32 + 32 + RowsWidth + 4), .Depth(2), .InReadyRegistered(1'b1)) u_wcmds (
    .clk_i, .rst_ni,
    .in_valid_i (cmd_valid_i && cmd_ready_o),
    .in_ready_o (wcmd_in_ready),
    .in_data_i  (cmd_in),
    .out_valid_o(wcmd_valid),
    .out_ready_i(wcmd_pop),
    .out_data_o (wcmd),
    .count_o    (unused_wcmd_count)
  );

  // Burst lengths, for WLAST. (Data may reach the slave before the address, as
  // AXI4 allows; a slave that needs the address first holds WREADY low.)
  tpu_fifo #(.Width(8), .Depth(2), .InReadyRegistered(1'b1)) u_wlens (
    .clk_i, .rst_ni,
    .in_valid_i (take_burst),
    .in_ready_o (wlen_in_ready),
    .in_data_i  (8'(burst_beats - 1'b1)),
    .out_valid_o(wlen_valid),
    .out_ready_i(wlen_pop),
    .out_data_o (wlen),
    .count_o    (unused_wlen_count)
  );

  tpu_fifo #(.Width(1), .Depth(MaxOutstanding)) u_resps (
    .clk_i, .rst_ni,
    .in_valid_i (take_burst),
    .in_ready_o (resp_in_ready),
    .in_data_i  (burst_last),
    .out_valid_o(resp_valid),
    .out_ready_i(b_valid_i),
    .out_data_o (resp_last),
    .count_o    (unused_resp_count)
  );

  // ---------------------------------------------------------------------------
  // Data: rows cut into beats, one registered beat at a time.
  // ---------------------------------------------------------------------------
  logic                    w_valid_d, w_valid_q, w_last_d, w_last_q;
  logic [BusBits-1:0]      w_data_d, w_data_q, beat_data, row_piece;
  logic [BusBytes-1:0]     w_strb_d, w_strb_q, beat_strb, row_lanes;
  logic [7:0]              burst_beat_d, burst_beat_q;
  logic [BeatIdxWidth-1:0] row_beat_d, row_beat_q, row_last_beat;
  logic [RowsWidth-1:0]    rows_done_d, rows_done_q;
  logic [31:0]             next_addr_d, next_addr_q, row_addr;
  logic [2:0]              beat_log2;
  logic                    send_beat, final_row_beat, narrow;

  // A narrow row goes to the byte lanes of its address; a wide row is sent one
  // bus-wide piece per beat.
  if (RowBits > BusBits) begin : g_multi_beat_rows
    assign row_piece = row_data_i[row_beat_q*BusBits +: BusBits];
  end else begin : g_single_beat_rows
    assign row_piece = BusBits'(row_data_i);
  end

  always_comb begin
    beat_log2      = (wcmd.row_log2 < 4'(BusLog2)) ? wcmd.row_log2[2:0] : BusLog2[2:0];
    narrow         = wcmd.row_log2 < 4'(BusLog2);
    row_last_beat  = BeatIdxWidth'((RunWidth'(1) << (wcmd.row_log2 - {1'b0, beat_log2})) - 1'b1);
    final_row_beat = row_beat_q == row_last_beat;
    row_addr       = (rows_done_q == '0) ? wcmd.addr : next_addr_q;
    for (int b = 0; b < BusBytes; b++) row_lanes[b] = b < (1 << wcmd.row_log2);

    if (narrow) begin
      beat_data = row_piece << {row_addr[BusLog2-1:0], 3'b000};
      beat_strb = row_lanes << row_addr[BusLog2-1:0];
    end else begin
      beat_data = row_piece;
      beat_strb = '1;
    end

    // After an abort, announced bursts are finished without data.
    send_beat   = wlen_valid && (!w_valid_q || w_ready_i) &&
                  (abort_i || (wcmd_valid && row_valid_i));
    row_ready_o = send_beat && !abort_i && final_row_beat;
    wlen_pop    = send_beat && burst_beat_q == wlen;
    wcmd_pop    = row_ready_o && rows_done_q == wcmd.rows - 1'b1;

    w_valid_d = w_valid_q && !w_ready_i;
    w_data_d  = w_data_q;
    w_strb_d  = w_strb_q;
    w_last_d  = w_last_q;
    if (send_beat) begin
      w_valid_d = 1'b1;
      w_data_d  = abort_i ? '0 : beat_data;
      w_strb_d  = abort_i ? '0 : beat_strb;
      w_last_d  = burst_beat_q == wlen;
    end

    burst_beat_d = burst_beat_q;
    if (send_beat) burst_beat_d = (burst_beat_q == wlen) ? '0 : burst_beat_q + 1'b1;

    row_beat_d  = row_beat_q;
    rows_done_d = rows_done_q;
    next_addr_d = next_addr_q;
    if (send_beat && !abort_i) begin
      row_beat_d = final_row_beat ? '0 : row_beat_q + 1'b1;
      if (final_row_beat) begin
        rows_done_d = wcmd_pop ? '0 : rows_done_q + 1'b1;
        next_addr_d = row_addr + wcmd.stride;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      w_valid_q    <= 1'b0;
      w_data_q     <= '0;
      w_strb_q     <= '0;
      w_last_q     <= 1'b0;
      burst_beat_q <= '0;
      row_beat_q   <= '0;
      rows_done_q  <= '0;
      next_addr_q  <= '0;
    end else begin
      w_valid_q    <= w_valid_d;
      w_data_q     <= w_data_d;
      w_strb_q     <= w_strb_d;
      w_last_q     <= w_last_d;
      burst_beat_q <= burst_beat_d;
      row_beat_q   <= row_beat_d;
      rows_done_q  <= rows_done_d;
      next_addr_q  <= next_addr_d;
    end
  end

  assign w_valid_o = w_valid_q;
  assign w_data_o  = w_data_q;
  assign w_strb_o  = w_strb_q;
  assign w_last_o  = w_last_q;

  // ---------------------------------------------------------------------------
  // Responses
  // ---------------------------------------------------------------------------
  assign b_ready_o   = 1'b1;
  assign cmd_done_o  = b_valid_i && resp_last;
  assign bus_error_o = b_valid_i && b_resp_i != 2'b00;
  assign idle_o      = !burst_valid && !aw_valid_q && !wlen_valid && !w_valid_q && !resp_valid;

`ifndef SYNTHESIS
  logic [63:0] w_fold;
  tpu_fold64 #(.Width(BusBits)) u_w_fold (.value_i(w_data_o), .fold_o(w_fold));
  `TPU_ASSUME(a_no_unexpected_response, !b_valid_i || resp_valid,
              "write response for no outstanding burst")
  `TPU_ASSERT_NEXT(a_aw_stable, aw_valid_o && !aw_ready_i,
                   aw_valid_o && $stable(aw_addr_o) && $stable(aw_len_o) && $stable(aw_size_o),
                   "AW changed or withdrawn before it was accepted")
  `TPU_ASSERT_NEXT(a_w_stable, w_valid_o && !w_ready_i,
                   w_valid_o && $stable(w_fold) && $stable(w_strb_o) && $stable(w_last_o),
                   "W changed or withdrawn before it was accepted")
`endif

endmodule
