// Cuts a DMA transfer into AXI4 INCR bursts; shared by the read and write
// engines. A transfer is `rows` rows of 2^row_log2 bytes, `stride` bytes
// apart, from byte address `addr`.
//
// A beat carries min(row bytes, bus bytes): rows narrower than the bus use
// narrow transfers (size below the bus width), so a beat is always one whole
// row or one bus-wide piece of one. Rows that follow each other in memory
// (stride = row bytes, or a single row) form one run; otherwise each row is a
// run. Runs are cut at MaxBurst beats and at 4 KiB boundaries, as AXI4
// requires. Addresses must be aligned to the beat size.
//
// The next burst is offered on burst_*; the engine takes it with burst_take_i
// when its own conditions (credits, a free address slot) allow.
`include "tpu_assert.svh"

module tpu_axi_bursts #(
  parameter int unsigned BusBytes  = 16,
  parameter int unsigned MaxBurst  = 16,   // 1..256 beats
  parameter int unsigned RowsWidth = 16,
  parameter int unsigned RunWidth  = 24    // enough bits for rows x beats per row
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,
  input  logic                 abort_i,

  input  logic                 cmd_valid_i,
  output logic                 cmd_ready_o,
  input  logic [31:0]          cmd_addr_i,
  input  logic [31:0]          cmd_stride_i,
  input  logic [RowsWidth-1:0] cmd_rows_i,        // >= 1
  input  logic [3:0]           cmd_row_log2_i,    // up to 2^15 bytes

  output logic                 burst_valid_o,
  input  logic                 burst_take_i,
  output logic [31:0]          burst_addr_o,
  output logic [RunWidth-1:0]  burst_beats_o,     // 1..MaxBurst
  output logic [2:0]           burst_size_o,      // log2 bytes per beat
  output logic                 burst_last_o       // last burst of its transfer
);

  localparam int unsigned BusLog2 = $clog2(BusBytes);
  localparam logic [RunWidth-1:0] MaxBurstBeats = MaxBurst[RunWidth-1:0];
  // Lengths are counted in bytes, so that the distance to a 4 KiB boundary
  // needs no shift before it is compared. A run of up to 2^RunWidth - 1 beats
  // of up to BusBytes bytes; MaxBurst beats of the widest size take 15 bits.
  localparam int unsigned RunBytesWidth = RunWidth + BusLog2;
  localparam int unsigned BytesWidth    = (RunBytesWidth > 15) ? RunBytesWidth : 15;
  typedef logic [BytesWidth-1:0] bytes_t;

  if (MaxBurst < 1 || MaxBurst > 256) begin : g_bad_burst
    $error("tpu_axi_bursts: MaxBurst must be in 1..256");
  end
  if (BusBytes < 1 || BusBytes > 64 || (BusBytes & (BusBytes - 1)) != 0) begin : g_bad_bus
    $error("tpu_axi_bursts: BusBytes must be a power of two in 1..64");
  end

  logic                 active_d, active_q;
  logic [2:0]           size_d, size_q;
  bytes_t               run_bytes_d, run_bytes_q;    // bytes in each run
  logic [31:0]          stride_d, stride_q;
  logic [RowsWidth-1:0] runs_left_d, runs_left_q;    // runs after the current one
  logic [31:0]          next_run_d, next_run_q;      // start of the next run
  logic [31:0]          addr_d, addr_q;              // next byte to request

  // The position in the run and the burst offered from it: bytes to the next
  // 4 KiB boundary and left in the run, the burst's length in bytes and beats,
  // whether it ends its run and, if not, whether MaxBurst (rather than the
  // boundary) cut it.
  typedef struct packed {
    logic [12:0]         to_4k;
    bytes_t              run_left;
    bytes_t              bytes;
    logic [RunWidth-1:0] beats;
    logic                fits;
    logic                at_max;
  } offer_t;

  offer_t      offer_d, offer_q;
  // Each kind of step (a new command, a burst cut short of its run's end, the
  // next run) is worked out before the step is chosen, so the engine's decision
  // to take a burst ends in a multiplexer.
  offer_t      offer_cmd, offer_cut, offer_run;
  logic        contiguous;
  logic [2:0]  new_size;
  bytes_t      cmd_run_bytes;

  assign cmd_ready_o = !active_q && !abort_i;

  // Shifts by the beat size, written as a choice between constant shifts:
  // Yosys's resource sharing would merge variable shifters of the three steps
  // into one behind the choice of step, which puts the engine's decision to
  // take a burst in front of the comparisons.
  function automatic bytes_t bytes_to_beats(input bytes_t bytes, input logic [2:0] size);
    bytes_to_beats = bytes;
    for (int s = 1; s <= BusLog2; s++) begin
      if (size == 3'(s)) bytes_to_beats = bytes >> s;
    end
  endfunction

  // MaxBurst beats of 2^size bytes: a constant for each size.
  function automatic bytes_t max_bytes(input logic [2:0] size);
    max_bytes = bytes_t'(MaxBurst);
    for (int s = 1; s <= BusLog2; s++) begin
      if (size == 3'(s)) max_bytes = bytes_t'(MaxBurst) << s;
    end
  endfunction

  // The burst offered at to_4k bytes from the boundary with run_left bytes of
  // the run to go: three comparisons side by side, then a choice.
  function automatic offer_t offer(input logic [12:0] to_4k, input bytes_t run_left,
                                   input logic [2:0] size);
    logic                fits, at_max;
    bytes_t              bytes;
    logic [RunWidth-1:0] beats;
    fits   = run_left <= bytes_t'(to_4k) && run_left <= max_bytes(size);
    at_max = bytes_t'(to_4k) > max_bytes(size);
    if (fits) begin
      bytes = run_left;
      beats = RunWidth'(bytes_to_beats(run_left, size));
    end else if (at_max) begin
      bytes = max_bytes(size);
      beats = MaxBurstBeats;
    end else begin
      bytes = bytes_t'(to_4k);
      beats = RunWidth'(bytes_to_beats(bytes_t'(to_4k), size));
    end
    // Fields in declaration order (Yosys reads no assignment patterns).
    offer = {to_4k, run_left, bytes, beats, fits, at_max};
  endfunction

  function automatic logic [12:0] to_boundary(input logic [11:0] addr_low);
    to_boundary = 13'h1000 - {1'b0, addr_low};
  endfunction

  always_comb begin
    new_size      = (cmd_row_log2_i < 4'(BusLog2)) ? cmd_row_log2_i[2:0] : BusLog2[2:0];
    contiguous    = cmd_rows_i == RowsWidth'(1) ||
                    cmd_stride_i == (32'd1 << cmd_row_log2_i);
    // rows x row bytes, a power of two: a shift, not a multiplier.
    cmd_run_bytes = contiguous ? bytes_t'(cmd_rows_i) << cmd_row_log2_i
                               : bytes_t'(1) << cmd_row_log2_i;
    offer_cmd     = offer(to_boundary(cmd_addr_i[11:0]), cmd_run_bytes, new_size);
    // A burst cut short at MaxBurst leaves the rest of the way to the boundary;
    // one cut at the boundary starts a whole 4 KiB page.
    offer_cut     = offer(offer_q.at_max ? offer_q.to_4k - 13'(offer_q.bytes) : 13'h1000,
                          offer_q.run_left - offer_q.bytes, size_q);
    offer_run     = offer(to_boundary(next_run_q[11:0]), run_bytes_q, size_q);
    burst_valid_o = active_q && !abort_i;
    burst_addr_o  = addr_q;
    burst_beats_o = offer_q.beats;
    burst_size_o  = size_q;
    burst_last_o  = offer_q.fits && runs_left_q == '0;
  end

  // Next state, in its own block: it depends on burst_take_i, which the engine
  // derives from the burst offered above.
  always_comb begin
    active_d    = active_q;
    size_d      = size_q;
    run_bytes_d = run_bytes_q;
    stride_d    = stride_q;
    runs_left_d = runs_left_q;
    next_run_d  = next_run_q;
    addr_d      = addr_q;
    offer_d     = offer_q;

    if (cmd_valid_i && cmd_ready_o) begin
      active_d    = 1'b1;
      size_d      = new_size;
      stride_d    = cmd_stride_i;
      next_run_d  = cmd_addr_i + cmd_stride_i;
      addr_d      = cmd_addr_i;
      run_bytes_d = cmd_run_bytes;
      runs_left_d = contiguous ? '0 : cmd_rows_i - 1'b1;
      offer_d     = offer_cmd;
    end else if (burst_valid_o && burst_take_i) begin
      if (!offer_q.fits) begin
        addr_d  = addr_q + 32'(offer_q.bytes);
        offer_d = offer_cut;
      end else if (runs_left_q == '0) begin
        active_d = 1'b0;
      end else begin
        runs_left_d = runs_left_q - 1'b1;
        addr_d      = next_run_q;
        next_run_d  = next_run_q + stride_q;
        offer_d     = offer_run;
      end
    end
    if (abort_i) active_d = 1'b0;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      active_q    <= 1'b0;
      size_q      <= '0;
      run_bytes_q <= '0;
      stride_q    <= '0;
      runs_left_q <= '0;
      next_run_q  <= '0;
      addr_q      <= '0;
      offer_q     <= '0;
    end else begin
      active_q    <= active_d;
      size_q      <= size_d;
      run_bytes_q <= run_bytes_d;
      stride_q    <= stride_d;
      runs_left_q <= runs_left_d;
      next_run_q  <= next_run_d;
      addr_q      <= addr_d;
      offer_q     <= offer_d;
    end
  end

  `TPU_ASSERT(a_burst_in_4k,
              !burst_valid_o || (({20'h0, burst_addr_o[11:0]} +
                                  (32'(burst_beats_o) << burst_size_o)) <= 32'h1000),
              "burst would cross a 4 KiB boundary")
  `TPU_ASSERT(a_burst_aligned,
              !burst_valid_o || ((burst_addr_o & ((32'd1 << burst_size_o) - 1)) == '0),
              "burst address not aligned to its beat size")
  `TPU_ASSERT(a_to_4k_tracks_addr, !active_q || (offer_q.to_4k == to_boundary(addr_q[11:0])),
              "distance to the 4 KiB boundary lost track of the address")
  `TPU_ASSERT(a_burst_tracks_run,
              !active_q || (offer_q == offer(offer_q.to_4k, offer_q.run_left, size_q)),
              "the burst offered lost track of the run and the boundary")
  `TPU_ASSERT(a_burst_nonempty,
              !burst_valid_o || (burst_beats_o != '0 && burst_beats_o <= MaxBurstBeats),
              "burst length out of range")
  // Whole beats: with the address and stride aligned to the beat (the callers' HOST_ALIGN), so
  // are the run, what is left of it, the burst's bytes and the next run's start; none is empty.
  // (Makes the checks above inductive: tests/formal/formal_axi_writer_harness.sv.)
  `TPU_ASSERT(a_run_whole_beats,
              !active_q || (size_q <= 3'(BusLog2) && run_bytes_q != '0 && offer_q.run_left != '0 &&
                            ((8'(run_bytes_q) | 8'(offer_q.run_left) | 8'(offer_q.bytes) |
                              addr_q[7:0] | (runs_left_q != '0 ? next_run_q[7:0] | stride_q[7:0]
                                                                : 8'h0)) &
                             ((8'd1 << size_q) - 8'd1)) == '0),
              "a run, burst or address not in whole beats")

endmodule
