// DMA read engine: reads "rows rows of 2^row_bytes_log2 bytes, stride bytes
// apart, from host address addr" with AXI4 INCR bursts (tpu_axi_bursts) and
// hands the rows out in order, one row per handshake.
//
// Credits. A burst is requested only when the beat buffer has room for it and
// for every beat still outstanding, so read data are always accepted
// (RREADY stays high) and one client can never block the shared R channel.
//
// Abort stops new requests; beats still in flight are accepted and dropped.
`include "tpu_assert.svh"

module tpu_axi_reader #(
  parameter int unsigned BusBytes    = 16,
  parameter int unsigned MaxRowBytes = 64,
  parameter int unsigned BufBeats    = 32,
  parameter int unsigned RowsWidth   = 16,
  localparam int unsigned BusBits    = BusBytes * 8,
  localparam int unsigned RowBits    = MaxRowBytes * 8
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

  output logic                 ar_valid_o,
  input  logic                 ar_ready_i,
  output logic [31:0]          ar_addr_o,
  output logic [7:0]           ar_len_o,
  output logic [2:0]           ar_size_o,

  input  logic                 r_valid_i,
  output logic                 r_ready_o,
  input  logic [BusBits-1:0]   r_data_i,
  input  logic [1:0]           r_resp_i,

  output logic                 row_valid_o,
  input  logic                 row_ready_i,
  output logic [RowBits-1:0]   row_data_o,    // the row's bytes from bit 0, zero above
  output logic                 row_last_o,    // last row of its command
  output logic                 row_error_o,   // a beat of the row came back with an error

  output logic                 bus_error_o,   // a beat came back with SLVERR or DECERR
  output logic                 quiet_o,       // no burst requested and not yet returned
  output logic                 idle_o         // nothing requested, buffered or in flight
);

  localparam int unsigned BusLog2       = $clog2(BusBytes);
  localparam int unsigned MaxBurst      = (BufBeats / 2 > 256) ? 256 :
                                          (BufBeats / 2 < 1) ? 1 : BufBeats / 2;
  localparam int unsigned BeatsPerRowMax = (MaxRowBytes > BusBytes) ? MaxRowBytes / BusBytes : 1;
  localparam int unsigned BeatIdxWidth  = (BeatsPerRowMax > 1) ? $clog2(BeatsPerRowMax) : 1;
  // Beats in one run: up to 2^RowsWidth rows of up to BeatsPerRowMax beats.
  localparam int unsigned RunWidth      = RowsWidth + BeatIdxWidth + 1;
  localparam int unsigned CreditWidth   = $clog2(BufBeats + 1) + 1;
  localparam logic [CreditWidth-1:0] CreditLimit = BufBeats[CreditWidth-1:0];

  if (BusBytes < 4 || BusBytes > 64 || (BusBytes & (BusBytes - 1)) != 0) begin : g_bad_bus
    $error("tpu_axi_reader: BusBytes must be a power of two in 4..64");
  end
  if (MaxRowBytes < 2 || MaxRowBytes > 1024 || (MaxRowBytes & (MaxRowBytes - 1)) != 0)
  begin : g_bad_row
    $error("tpu_axi_reader: MaxRowBytes must be a power of two in 2..1024");
  end
  if (BufBeats < 2 || BufBeats < BeatsPerRowMax) begin : g_bad_buf
    $error("tpu_axi_reader: BufBeats must be >= 2 and hold a whole row");
  end

  // ---------------------------------------------------------------------------
  // Commands: the request generator takes one; the row assembler follows it
  // through a small queue, so requests for the next command can start while
  // the data of this one still arrive.
  // ---------------------------------------------------------------------------
  typedef struct packed {
    logic [31:0]          addr;
    logic [31:0]          stride;
    logic [RowsWidth-1:0] rows;
    logic [3:0]           row_log2;
  } cmd_t;

  cmd_t cmd_in, asm_cmd;
  logic asm_cmd_valid, asm_cmd_pop, asm_cmd_in_ready, take_cmd;
  logic [1:0] unused_asm_count;

  // Fields in declaration order (Yosys reads no assignment patterns).
  assign cmd_in = {cmd_addr_i, cmd_stride_i, cmd_rows_i, cmd_row_bytes_log2_i};

  // ---------------------------------------------------------------------------
  // Requests: bursts from tpu_axi_bursts, issued when the buffer has room.
  // ---------------------------------------------------------------------------
  logic                   bursts_cmd_ready, burst_valid, unused_burst_last, issue_burst;
  logic [31:0]            burst_addr;
  logic [RunWidth-1:0]    burst_beats;
  logic [2:0]             burst_size;
  logic                   ar_valid_d, ar_valid_q;
  logic [31:0]            ar_addr_d, ar_addr_q;
  logic [7:0]             ar_len_d, ar_len_q;
  logic [2:0]             ar_size_d, ar_size_q;
  logic [CreditWidth-1:0] credits_used_d, credits_used_q;  // outstanding + buffered beats
  logic [CreditWidth-1:0] outstanding_d, outstanding_q;    // requested, not yet arrived
  logic                   beat_in, beat_pop, burst_fits;

  always_comb begin
    cmd_ready_o = bursts_cmd_ready && asm_cmd_in_ready;
    take_cmd    = cmd_valid_i && cmd_ready_o;
  end

  tpu_axi_bursts #(
    .BusBytes(BusBytes), .MaxBurst(MaxBurst), .RowsWidth(RowsWidth), .RunWidth(RunWidth)
  ) u_bursts (
    .clk_i, .rst_ni, .abort_i,
    .cmd_valid_i   (cmd_valid_i && asm_cmd_in_ready),
    .cmd_ready_o   (bursts_cmd_ready),
    .cmd_addr_i,
    .cmd_stride_i,
    .cmd_rows_i,
    .cmd_row_log2_i(cmd_row_bytes_log2_i),
    .burst_valid_o (burst_valid),
    .burst_take_i  (issue_burst),
    .burst_addr_o  (burst_addr),
    .burst_beats_o (burst_beats),
    .burst_size_o  (burst_size),
    .burst_last_o  (unused_burst_last)
  );

  always_comb begin
    burst_fits  = ({1'b0, credits_used_q} + {1'b0, burst_beats[CreditWidth-1:0]})
                  <= {1'b0, CreditLimit};
    issue_burst = burst_valid && (!ar_valid_q || ar_ready_i) && burst_fits;

    ar_valid_d = ar_valid_q && !ar_ready_i;
    ar_addr_d  = ar_addr_q;
    ar_len_d   = ar_len_q;
    ar_size_d  = ar_size_q;
    if (issue_burst) begin
      ar_valid_d = 1'b1;
      ar_addr_d  = burst_addr;
      ar_len_d   = 8'(burst_beats - 1'b1);
      ar_size_d  = burst_size;
    end

    // Beats arriving are buffered, except after an abort, when they are dropped.
    r_ready_o = 1'b1;
    beat_in   = r_valid_i && !abort_i;

    outstanding_d = outstanding_q;
    if (issue_burst) outstanding_d = outstanding_d + CreditWidth'(burst_beats);
    if (r_valid_i)   outstanding_d = outstanding_d - 1'b1;

    credits_used_d = credits_used_q;
    if (issue_burst) credits_used_d = credits_used_d + CreditWidth'(burst_beats);
    if (beat_pop)    credits_used_d = credits_used_d - 1'b1;
    if (abort_i)     credits_used_d = outstanding_d;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ar_valid_q     <= 1'b0;
      ar_addr_q      <= '0;
      ar_len_q       <= '0;
      ar_size_q      <= '0;
      credits_used_q <= '0;
      outstanding_q  <= '0;
    end else begin
      ar_valid_q     <= ar_valid_d;
      ar_addr_q      <= ar_addr_d;
      ar_len_q       <= ar_len_d;
      ar_size_q      <= ar_size_d;
      credits_used_q <= credits_used_d;
      outstanding_q  <= outstanding_d;
    end
  end

  assign ar_valid_o = ar_valid_q;
  assign ar_addr_o  = ar_addr_q;
  assign ar_len_o   = ar_len_q;
  assign ar_size_o  = ar_size_q;

  // Ready from registers: the assembler's pop depends on the data path, the
  // push leads into the burst splitter's state.
  tpu_fifo #(.Width(32 + 32 + RowsWidth + 4), .Depth(2), .InReadyRegistered(1'b1)) u_asm_cmds (
    .clk_i, .rst_ni,
    .in_valid_i (take_cmd),
    .in_ready_o (asm_cmd_in_ready),
    .in_data_i  (cmd_in),
    .out_valid_o(asm_cmd_valid),
    .out_ready_i(asm_cmd_pop),
    .out_data_o (asm_cmd),
    .count_o    (unused_asm_count)
  );

  // ---------------------------------------------------------------------------
  // Beat buffer
  // ---------------------------------------------------------------------------
  logic               buf_valid, buf_in_ready;
  logic [BusBits-1:0] buf_beat;
  logic               buf_beat_error;
  logic [$clog2(BufBeats+1)-1:0] unused_buf_count;

  tpu_ram_fifo #(.Width(BusBits + 1), .Depth(BufBeats)) u_beats (
    .clk_i, .rst_ni,
    .in_valid_i (beat_in),
    .in_ready_o (buf_in_ready),
    .in_data_i  ({r_resp_i != 2'b00, r_data_i}),
    .out_valid_o(buf_valid),
    .out_ready_i(beat_pop),
    .out_data_o ({buf_beat_error, buf_beat}),
    .ram_count_o(unused_buf_count)
  );

  // ---------------------------------------------------------------------------
  // Row assembler: beats in, rows out.
  // ---------------------------------------------------------------------------
  logic [RowBits-1:0]      asm_row_d, asm_row_q;    // beats of a row received so far
  logic [BeatIdxWidth-1:0] asm_beat_d, asm_beat_q;  // next beat within the row
  logic [RowsWidth-1:0]    asm_rows_done_d, asm_rows_done_q;
  logic [31:0]             asm_next_addr_d, asm_next_addr_q;  // address of row asm_rows_done_q
  logic                    out_valid_d, out_valid_q, out_last_d, out_last_q;
  logic                    asm_error_d, asm_error_q, out_error_d, out_error_q;
  logic [RowBits-1:0]      out_row_d, out_row_q;

  logic [2:0]              asm_beat_log2;
  logic [BeatIdxWidth-1:0] asm_last_beat;
  logic [31:0]             row_addr;
  logic [RowBits-1:0]      row_next, row_mask, row_from_beat, row_with_beat;
  logic [BusBits-1:0]      lane_shifted;
  logic                    final_beat, out_free, row_is_last;

  // A row of at most one beat sits on the byte lanes of its address; a wider row
  // is the concatenation of its beats.
  assign lane_shifted = buf_beat >> {row_addr[BusLog2-1:0], 3'b000};
  if (RowBits > BusBits) begin : g_multi_beat_rows
    assign row_from_beat = RowBits'(lane_shifted);
    always_comb begin
      row_with_beat = asm_row_q;
      row_with_beat[asm_beat_q*BusBits +: BusBits] = buf_beat;
    end
  end else begin : g_single_beat_rows
    logic unused_upper_lanes;
    assign row_from_beat = lane_shifted[RowBits-1:0];
    assign row_with_beat = row_from_beat;
    if (RowBits < BusBits) begin : g_upper
      assign unused_upper_lanes = ^lane_shifted[BusBits-1:RowBits];
    end else begin : g_none
      assign unused_upper_lanes = 1'b0;
    end
  end

  assign asm_beat_log2 = (asm_cmd.row_log2 < 4'(BusLog2)) ? asm_cmd.row_log2[2:0] : BusLog2[2:0];
  assign asm_last_beat =
      BeatIdxWidth'((RunWidth'(1) << (asm_cmd.row_log2 - {1'b0, asm_beat_log2})) - 1'b1);
  assign final_beat    = asm_beat_q == asm_last_beat;
  assign row_is_last   = asm_rows_done_q == asm_cmd.rows - 1'b1;
  assign out_free      = !out_valid_q || row_ready_i;
  assign row_addr      = (asm_rows_done_q == '0) ? asm_cmd.addr : asm_next_addr_q;

  always_comb begin
    row_next      = (asm_cmd.row_log2 <= 4'(BusLog2)) ? row_from_beat : row_with_beat;
    for (int b = 0; b < MaxRowBytes; b++) begin
      row_mask[b*8 +: 8] = (b < (1 << asm_cmd.row_log2)) ? 8'hFF : 8'h00;
    end

    beat_pop = buf_valid && asm_cmd_valid && (!final_beat || out_free) && !abort_i;

    asm_row_d       = asm_row_q;
    asm_beat_d      = asm_beat_q;
    asm_rows_done_d = asm_rows_done_q;
    asm_next_addr_d = asm_next_addr_q;
    asm_cmd_pop     = 1'b0;
    out_valid_d     = out_valid_q && !row_ready_i;
    out_row_d       = out_row_q;
    out_last_d      = out_last_q;
    asm_error_d     = asm_error_q;
    out_error_d     = out_error_q;

    if (beat_pop) begin
      if (final_beat) begin
        out_valid_d     = 1'b1;
        out_row_d       = row_next & row_mask;
        out_last_d      = row_is_last;
        out_error_d     = asm_error_q || buf_beat_error;
        asm_error_d     = 1'b0;
        asm_beat_d      = '0;
        asm_rows_done_d = row_is_last ? '0 : asm_rows_done_q + 1'b1;
        asm_next_addr_d = row_addr + asm_cmd.stride;
        asm_cmd_pop     = row_is_last;
      end else begin
        asm_row_d   = row_next;
        asm_beat_d  = asm_beat_q + 1'b1;
        asm_error_d = asm_error_q || buf_beat_error;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      asm_row_q       <= '0;
      asm_beat_q      <= '0;
      asm_rows_done_q <= '0;
      asm_next_addr_q <= '0;
      out_valid_q     <= 1'b0;
      out_row_q       <= '0;
      out_last_q      <= 1'b0;
      asm_error_q     <= 1'b0;
      out_error_q     <= 1'b0;
    end else begin
      asm_row_q       <= asm_row_d;
      asm_beat_q      <= asm_beat_d;
      asm_rows_done_q <= asm_rows_done_d;
      asm_next_addr_q <= asm_next_addr_d;
      out_valid_q     <= out_valid_d;
      out_row_q       <= out_row_d;
      out_last_q      <= out_last_d;
      asm_error_q     <= asm_error_d;
      out_error_q     <= out_error_d;
    end
  end

  assign row_valid_o = out_valid_q;
  assign row_data_o  = out_row_q;
  assign row_last_o  = out_last_q;
  assign row_error_o = out_error_q;
  assign bus_error_o = r_valid_i && r_resp_i != 2'b00;
  assign quiet_o     = !burst_valid && !ar_valid_q && outstanding_q == '0;
  assign idle_o      = !burst_valid && !ar_valid_q && outstanding_q == '0 &&
                       credits_used_q == '0 && !asm_cmd_valid && !out_valid_q;

`ifndef SYNTHESIS
  logic [63:0] row_fold;
  tpu_fold64 #(.Width(RowBits)) u_row_fold (.value_i(row_data_o), .fold_o(row_fold));
  `TPU_ASSERT(a_beat_has_room, !beat_in || buf_in_ready,
              "read data arrived with no buffer room (credit error)")
  // Credits count what is requested and not yet taken from the buffer: never
  // more than the buffer holds, never less than what is still on the way.
  `TPU_ASSERT(a_credits_in_limit, credits_used_q <= CreditLimit && outstanding_q <= credits_used_q,
              "credits out of step with the buffer (credit error)")
  `TPU_ASSUME(a_no_unrequested_beat, !r_valid_i || (outstanding_q != '0),
              "read data arrived that were never requested")
  `TPU_ASSERT_NEXT(a_ar_stable, ar_valid_o && !ar_ready_i,
                   ar_valid_o && $stable(ar_addr_o) && $stable(ar_len_o) && $stable(ar_size_o),
                   "AR changed or withdrawn before it was accepted")
  `TPU_ASSERT_NEXT(a_row_stable, row_valid_o && !row_ready_i,
                   row_valid_o && $stable(row_fold) && $stable(row_last_o),
                   "row changed or withdrawn before it was taken")
`endif

endmodule
