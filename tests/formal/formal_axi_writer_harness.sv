// Proof harness for tpu_axi_writer, the AXI4 DMA write engine (docs/verification.md); by
// default a 4-byte bus, rows of 2 to 8 bytes, up to 3 rows a command, bursts of up to 2 beats
// and 2 bursts awaiting their response (the AXI4 rules alone are proved at the store unit's own
// sizes). Every property is written from AXI4's rules at the engine's ports; the harness keeps
// its own account of the bursts, beats, rows, commands and responses. The engine's own checks,
// and those of tpu_axi_bursts and its FIFOs, are proved with them.
//
// The environment, as a real one guarantees it: commands legal (1 or more rows of 2 to
// MaxRowBytes bytes, address and stride multiples of the beat: HOST_ALIGN) and held until
// taken; a row held until taken and, while rows are owed, one offered within Patience cycles;
// a slave that raises AWREADY within AwPatience cycles of valid (longer than W's, so data can
// run ahead of its address) and WREADY within Patience, and answers B only for a burst whose
// address and last beat it has taken, within Patience cycles; abort, once raised, held until
// reset (the core stops). AWBURST is no port of the engine: tpu_top ties it to INCR.
//
// Checked (Account = 0: the AXI4 rules alone, those k-induction proves for every reachable
// state; Account = 1: all):
//   AW   len + 1 <= MaxBurst; 2^size <= BusBytes; the address aligned to 2^size; the burst in
//        its 4 KiB page (addr[11:0] + (len + 1) * 2^size <= 4096); held until taken.
//   W    held until taken. Account: no beat before its burst is offered on AW (AXI4 allows
//        it, this engine does not need it); each burst's beats, in AW order, are exactly
//        len + 1 with WLAST on the last and only there, so the W beats are the sum of the AW
//        lengths, none dropped, none repeated; WSTRB only on the byte lanes of the beat.
//   B    always ready (a response is taken in the cycle it comes). Account: at most
//        MaxOutstanding bursts announced and unanswered; cmd_done_o only on a response and
//        only for a command taken; idle_o only when every burst has its data and its response
//        (and, without abort, every command is done and every row taken); no row taken beyond
//        those commanded.
//   Time (Account) the data of an announced burst offered within Patience + 1 cycles; a
//        command offered to an idle engine taken at once, its first burst on AW the cycle
//        after.
`include "tpu_assert.svh"

module formal_axi_writer_harness #(
  parameter int unsigned BusBytes       = 4,
  parameter int unsigned MaxRowBytes    = 8,
  parameter int unsigned MaxBurst       = 2,
  parameter int unsigned MaxOutstanding = 2,
  parameter int unsigned RowsWidth      = 2,
  parameter int unsigned Patience       = 1,  // W, B and rows come within this many cycles
  parameter int unsigned AwPatience     = 2,  // AW is taken within this many: data may lead
  parameter bit          Account        = 1'b1
) (
  input  logic                     clk_i,
  input  logic                     rst_ni,
  input  logic                     abort_i,
  input  logic                     cmd_valid_i,
  input  logic [31:0]              cmd_addr_i,
  input  logic [31:0]              cmd_stride_i,
  input  logic [RowsWidth-1:0]     cmd_rows_i,
  input  logic [3:0]               cmd_row_bytes_log2_i,
  input  logic                     row_valid_i,
  input  logic [MaxRowBytes*8-1:0] row_data_i,
  input  logic                     aw_ready_i,
  input  logic                     w_ready_i,
  input  logic                     b_valid_i,
  input  logic [1:0]               b_resp_i
);

  localparam int unsigned BusLog2  = $clog2(BusBytes);
  localparam int unsigned RowLog2  = $clog2(MaxRowBytes);
  localparam int unsigned MaxRows  = (1 << RowsWidth) - 1;
  // Commands the engine holds with rows still to send (its command queue); taken and not done:
  // those, and one for each burst whose response is outstanding.
  localparam int unsigned QueuedCmds = 2;
  localparam int unsigned MaxOpen    = QueuedCmds + MaxOutstanding;
  // AW bursts the harness can hold ahead of their data.
  localparam int unsigned AheadDepth = 4;

  logic                    cmd_ready, row_ready;
  logic                    aw_valid, w_valid, w_last, b_ready, cmd_done, bus_error, idle;
  logic [31:0]             aw_addr;
  logic [7:0]              aw_len;
  logic [2:0]              aw_size;
  logic [BusBytes*8-1:0]   w_data;
  logic [BusBytes-1:0]     w_strb;

  tpu_axi_writer #(
    .BusBytes(BusBytes), .MaxRowBytes(MaxRowBytes), .MaxBurst(MaxBurst),
    .MaxOutstanding(MaxOutstanding), .RowsWidth(RowsWidth)
  ) u_dut (
    .clk_i, .rst_ni, .abort_i,
    .cmd_valid_i, .cmd_ready_o(cmd_ready), .cmd_addr_i, .cmd_stride_i, .cmd_rows_i,
    .cmd_row_bytes_log2_i,
    .row_valid_i, .row_ready_o(row_ready), .row_data_i,
    .aw_valid_o(aw_valid), .aw_ready_i, .aw_addr_o(aw_addr), .aw_len_o(aw_len),
    .aw_size_o(aw_size),
    .w_valid_o(w_valid), .w_ready_i, .w_data_o(w_data), .w_strb_o(w_strb), .w_last_o(w_last),
    .b_valid_i, .b_ready_o(b_ready), .b_resp_i,
    .cmd_done_o(cmd_done), .bus_error_o(bus_error), .idle_o(idle)
  );

  // Reset in the first cycle, then none.
  logic started_q = 1'b0;
  always_ff @(posedge clk_i) started_q <= 1'b1;
  always_comb assume (rst_ni == started_q);

  logic cmd_fire, row_fire, aw_fire, w_fire, w_last_fire, b_fire;
  assign cmd_fire    = cmd_valid_i && cmd_ready;
  assign row_fire    = row_valid_i && row_ready;
  assign aw_fire     = aw_valid && aw_ready_i;
  assign w_fire      = w_valid && w_ready_i;
  assign w_last_fire = w_fire && w_last;
  assign b_fire      = b_valid_i && b_ready;

  // ---------------------------------------------------------------------------------------------
  // The environment
  // ---------------------------------------------------------------------------------------------
  // The command source (the store unit): legal commands, held until taken; abort is sticky.
  logic [3:0] beat_log2;
  assign beat_log2 = (cmd_row_bytes_log2_i < 4'(BusLog2)) ? cmd_row_bytes_log2_i : 4'(BusLog2);
  `TPU_ASSUME(p_cmd_legal,
              !cmd_valid_i || (cmd_rows_i != '0 && cmd_row_bytes_log2_i >= 4'd1 &&
                               cmd_row_bytes_log2_i <= 4'(RowLog2) &&
                               (cmd_addr_i[7:0] & ((8'd1 << beat_log2) - 1'b1)) == '0 &&
                               (cmd_stride_i[7:0] & ((8'd1 << beat_log2) - 1'b1)) == '0),
              "command with no rows, a row out of range, or an address or stride off its beat")
  `TPU_ASSUME_NEXT(p_cmd_held, cmd_valid_i && !cmd_ready,
                   cmd_valid_i && $stable(cmd_addr_i) && $stable(cmd_stride_i) &&
                   $stable(cmd_rows_i) && $stable(cmd_row_bytes_log2_i),
                   "command changed or withdrawn before it was taken")
  `TPU_ASSUME_NEXT(p_abort_stays, abort_i, abort_i, "abort withdrawn before reset")

  // Rows commanded and not yet taken.
  logic [RowsWidth+2:0] rows_owed_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) rows_owed_q <= '0;
    else         rows_owed_q <= rows_owed_q + (cmd_fire ? (RowsWidth+3)'(cmd_rows_i) : '0)
                                            - (row_fire ? (RowsWidth+3)'(1) : '0);
  end

  // The row producer (the store unit's staging FIFO): a row held until taken, and one offered
  // within Patience cycles while rows are owed.
  `TPU_ASSUME_NEXT(p_row_held, row_valid_i && !row_ready,
                   row_valid_i && $stable(row_data_i),
                   "row changed or withdrawn before it was taken")
  `TPU_ASSUME_WITHIN(p_row_comes, rows_owed_q != '0 && !row_valid_i, Patience,
                     "the producer left an owed row out too long")

  // The slave: AWREADY within AwPatience cycles, WREADY within Patience; B only for a burst it
  // has the address and the last beat of, and within Patience cycles of that.
  logic [3:0] b_owed_q;
  `TPU_ASSUME_WITHIN(p_aw_ready, aw_valid && !aw_ready_i, AwPatience, "AW not taken in time")
  `TPU_ASSUME_WITHIN(p_w_ready, w_valid && !w_ready_i, Patience, "W not taken in time")
  `TPU_ASSUME(p_b_for_a_burst, !b_valid_i || b_owed_q != '0, "B for no complete burst")
  `TPU_ASSUME_WITHIN(p_b_comes, b_owed_q != '0 && !b_valid_i, Patience, "B not sent in time")

  // ---------------------------------------------------------------------------------------------
  // The account of bursts: AW bursts taken whose data is not complete (oldest first), and
  // whether the burst offered on AW already has all its data. The W burst in progress is the
  // oldest of those, else the one on offer: AXI4 lets data come before its address, and this
  // engine sends none before the burst is offered on AW (a_w_announced).
  // ---------------------------------------------------------------------------------------------
  // A burst as the harness keeps it: its length, beat size and the byte lane of its address
  // ({len, size, lane}; plain vectors, which Yosys reads in arrays).
  localparam int unsigned EntryBits = 8 + 3 + BusLog2;
  typedef logic [EntryBits-1:0] burst_t;

  logic [AheadDepth*EntryBits-1:0] ahead_d, ahead_q;
  logic [2:0]                      ahead_n_d, ahead_n_q;        // entries in ahead_q
  logic                            led_done_d, led_done_q;      // AW offered, its data all taken
  logic [8:0]                      w_beat_d, w_beat_q;          // beats taken of this W burst
  logic [3:0]                      unanswered_q;                // AW taken, B not yet
  logic [3:0]                      cmds_open_q;                 // commands taken, not done
  logic                            cur_known;                   // this W burst has its AW
  burst_t                          cur, aw_now;
  logic [7:0]                      cur_len;
  logic [2:0]                      cur_size;
  logic [BusLog2-1:0]              cur_lane;
  logic [1:0]                      completed;                   // bursts with AW and data

  // The byte lanes beat `beat` of a burst of 2^size-byte beats from lane `lane` may use: those
  // of the beat's 2^size-byte container on the bus (all of them for a size as wide as the bus).
  function automatic logic [BusBytes-1:0] lanes(input logic [BusLog2-1:0] lane,
                                                input logic [2:0] size, input logic [8:0] beat);
    logic [BusLog2-1:0] first, inside;
    for (int j = 0; j < BusLog2; j++) inside[j] = 32'(size) > j;   // the offset in the container
    first  = (lane + BusLog2'(beat << size)) & ~inside;
    for (int b = 0; b < BusBytes; b++) lanes[b] = (BusLog2'(b) & ~inside) == first;
  endfunction

  always_comb begin
    aw_now    = {aw_len, aw_size, aw_addr[BusLog2-1:0]};
    cur_known = ahead_n_q != '0 || (aw_valid && !led_done_q);
    cur       = (ahead_n_q != '0) ? ahead_q[0 +: EntryBits] : aw_now;
    {cur_len, cur_size, cur_lane} = cur;

    ahead_d    = ahead_q;
    ahead_n_d  = ahead_n_q;
    led_done_d = led_done_q;
    completed  = '0;
    if (aw_fire && !led_done_q) begin
      for (int i = 0; i < AheadDepth; i++) begin
        if (3'(i) == ahead_n_q) ahead_d[i*EntryBits +: EntryBits] = aw_now;
      end
      ahead_n_d = ahead_n_q + 1'b1;
    end
    if (aw_fire && led_done_q) begin
      led_done_d = 1'b0;
      completed  = completed + 1'b1;
    end
    if (w_last_fire) begin
      if (ahead_n_d != '0) begin
        ahead_d   = ahead_d >> EntryBits;
        ahead_n_d = ahead_n_d - 1'b1;
        completed = completed + 1'b1;
      end else begin
        led_done_d = 1'b1;
      end
    end

    w_beat_d = w_beat_q;
    if (w_fire) w_beat_d = w_last ? '0 : w_beat_q + 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ahead_q      <= '0;
      ahead_n_q    <= '0;
      led_done_q   <= 1'b0;
      w_beat_q     <= '0;
      b_owed_q     <= '0;
      unanswered_q <= '0;
      cmds_open_q  <= '0;
    end else begin
      ahead_q      <= ahead_d;
      ahead_n_q    <= ahead_n_d;
      led_done_q   <= led_done_d;
      w_beat_q     <= w_beat_d;
      b_owed_q     <= b_owed_q + 4'(completed) - 4'(b_fire);
      unanswered_q <= unanswered_q + 4'(aw_fire) - 4'(b_fire);
      cmds_open_q  <= cmds_open_q + 4'(cmd_fire) - 4'(cmd_done);
    end
  end

  // ---------------------------------------------------------------------------------------------
  // AXI4's rules: AW legal and inside 4 KiB, AW and W held until taken, B always taken
  // ---------------------------------------------------------------------------------------------
  `TPU_ASSERT(a_aw_len, !aw_valid || 32'(aw_len) + 1 <= MaxBurst, "burst longer than MaxBurst")
  `TPU_ASSERT(a_aw_size, !aw_valid || 32'(aw_size) <= BusLog2, "beat wider than the bus")
  `TPU_ASSERT(a_aw_aligned, !aw_valid || (aw_addr[7:0] & ((8'd1 << aw_size) - 1'b1)) == '0,
              "burst address not aligned to its beat")
  // Bytes: the offset in the 4 KiB page plus (len + 1) beats of 2^size bytes (17 bits hold it).
  `TPU_ASSERT(a_aw_in_4k,
              !aw_valid || 17'(aw_addr[11:0]) + ((17'(aw_len) + 1'b1) << aw_size) <= 17'd4096,
              "burst crosses a 4 KiB boundary")
  `TPU_ASSERT_NEXT(a_aw_held, aw_valid && !aw_ready_i,
                   aw_valid && $stable(aw_addr) && $stable(aw_len) && $stable(aw_size),
                   "AW changed or withdrawn before it was taken")
  `TPU_ASSERT_NEXT(a_w_held, w_valid && !w_ready_i,
                   w_valid && $stable(w_data) && $stable(w_strb) && $stable(w_last),
                   "W changed or withdrawn before it was taken")
  `TPU_ASSERT(a_b_ready, b_ready, "a write response refused")

  if (Account) begin : g_account
    // -------------------------------------------------------------------------------------------
    // W against the account: each beat checked while it is offered (it is held until taken)
    // -------------------------------------------------------------------------------------------
    `TPU_ASSERT(a_w_announced, !(w_valid || w_beat_q != '0) || cur_known,
                "W data for a burst not yet offered on AW")
    `TPU_ASSERT(a_wlast, !w_valid || w_last == (w_beat_q == 9'(cur_len)),
                "WLAST not on exactly the last beat of its burst")
    `TPU_ASSERT(a_wstrb, !w_valid || (w_strb & ~lanes(cur_lane, cur_size, w_beat_q)) == '0,
                "WSTRB outside the beat's byte lanes")
    `TPU_ASSERT(a_w_in_burst, !cur_known || w_beat_q <= 9'(cur_len),
                "more beats than the burst's length")
    `TPU_ASSERT(a_led_on_aw, !led_done_q || (aw_valid && ahead_n_q == '0),
                "data complete ahead of an AW no longer offered")
    // The bursts kept are ones that passed the AW checks (an invariant of the account).
    logic ahead_legal;
    always_comb begin
      ahead_legal = 1'b1;
      for (int i = 0; i < AheadDepth; i++) begin
        if (3'(i) < ahead_n_q) begin
          ahead_legal &= 32'(ahead_q[i*EntryBits + 3 + BusLog2 +: 8]) + 1 <= MaxBurst &&
                         32'(ahead_q[i*EntryBits + BusLog2 +: 3]) <= BusLog2 &&
                         (8'(ahead_q[i*EntryBits +: BusLog2]) &
                          ((8'd1 << ahead_q[i*EntryBits + BusLog2 +: 3]) - 1'b1)) == '0;
        end
      end
    end
    `TPU_ASSERT(a_ahead_legal, ahead_legal, "a burst kept that failed the AW checks")
    // The engine's queues: two burst lengths for W, and the beat being sent.
    `TPU_ASSERT(a_aw_ahead, 32'(ahead_n_q) + 32'(aw_valid && !led_done_q) <= 3,
                "too many bursts announced ahead of their data")

    // -------------------------------------------------------------------------------------------
    // B, commands, rows, idle
    // -------------------------------------------------------------------------------------------
    `TPU_ASSERT(a_outstanding, 32'(unanswered_q) + 32'(aw_valid) <= MaxOutstanding,
                "more than MaxOutstanding bursts announced and unanswered")
    `TPU_ASSERT(a_b_account, 32'(unanswered_q) == 32'(b_owed_q) + 32'(ahead_n_q),
                "bursts taken on AW are neither complete nor waiting for data")
    `TPU_ASSERT(a_done_on_b, !cmd_done || b_fire, "command done without a response")
    `TPU_ASSERT(a_done_for_cmd, !cmd_done || cmds_open_q != '0,
                "command done that was not taken")
    `TPU_ASSERT(a_cmds_open, 32'(cmds_open_q) <= MaxOpen, "commands pile up without completing")
    `TPU_ASSERT(a_row_commanded, !row_fire || rows_owed_q != '0,
                "row taken beyond those commanded")
    `TPU_ASSERT(a_rows_owed, 32'(rows_owed_q) <= QueuedCmds * MaxRows, "rows owed pile up")
    // Data of an announced burst not yet sent comes from a row not yet taken (unless aborted).
    logic [2:0] bursts_known;
    logic       data_unsent;
    assign bursts_known = ahead_n_q + 3'(aw_valid && !led_done_q);
    assign data_unsent  = bursts_known >= 3'd2 || (bursts_known == 3'd1 && !(w_valid && w_last));
    `TPU_ASSERT(a_rows_for_data, abort_i || !data_unsent || rows_owed_q != '0,
                "data owed but no row owed")
    `TPU_ASSERT(a_idle_bursts,
                !idle || (!aw_valid && !w_valid && ahead_n_q == '0 && w_beat_q == '0 &&
                          unanswered_q == '0),
                "idle with a burst missing data or its response")
    `TPU_ASSERT(a_idle_cmds, !idle || abort_i || (cmds_open_q == '0 && rows_owed_q == '0),
                "idle with a command not done or a row not taken")

    // -------------------------------------------------------------------------------------------
    // Bounded response
    // -------------------------------------------------------------------------------------------
    // The row comes within Patience cycles and the beat is registered in the next.
    `TPU_ASSERT_WITHIN(a_w_offered, cur_known && !w_valid, Patience + 1,
                       "data of an announced burst not offered in time")
    `TPU_ASSERT(a_cmd_when_idle, !idle || abort_i || cmd_ready,
                "an idle engine refuses a command")
    logic cmd_to_idle_q;
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) cmd_to_idle_q <= 1'b0;
      else         cmd_to_idle_q <= cmd_fire && idle;
    end
    `TPU_ASSERT_NEXT(a_first_burst, cmd_to_idle_q && !abort_i, aw_valid,
                     "an idle engine's command has no burst on AW two cycles later")
  end

  logic unused;
  assign unused = ^{bus_error, b_resp_i};

endmodule
