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

  if (MaxBurst < 1 || MaxBurst > 256) begin : g_bad_burst
    $error("tpu_axi_bursts: MaxBurst must be in 1..256");
  end

  logic                 active_d, active_q;
  logic [2:0]           size_d, size_q;
  logic [RunWidth-1:0]  beats_per_run_d, beats_per_run_q;
  logic [31:0]          stride_d, stride_q;
  logic [RowsWidth-1:0] runs_left_d, runs_left_q;   // runs after the current one
  logic [31:0]          next_run_d, next_run_q;     // start of the next run
  logic [31:0]          addr_d, addr_q;             // next byte to request
  logic [12:0]          to_4k_d, to_4k_q;           // beats from addr_q to a 4 KiB boundary
  logic [12:0]          cap_d, cap_q;               // min(to_4k_q, MaxBurst): the longest burst
  logic [RunWidth-1:0]  run_left_d, run_left_q;     // beats left in the current run
  logic                 fits_d, fits_q;             // the rest of the run is one burst
  logic [RunWidth-1:0]  beats_d, beats_q;           // the burst offered: min(run_left_q, cap_q)

  logic                 contiguous;
  logic [2:0]           new_size;
  logic [3:0]           new_beats_log2;             // log2 beats per row
  logic [RunWidth-1:0]  new_beats_per_row;
  logic [12:0]          cap_bytes;
  logic [12:0]          to_4k_cmd, to_4k_cut, to_4k_run;  // to_4k after each kind of step
  logic [12:0]          cap_cmd, cap_cut, cap_run;        // ... and the longest burst then
  logic [RunWidth-1:0]  cmd_beats_per_run, run_left_cut;
  logic                 fits_cmd, fits_cut, fits_run;     // ... and the burst offered then
  logic [RunWidth-1:0]  beats_cmd, beats_cut, beats_run;

  assign cmd_ready_o = !active_q && !abort_i;

  always_comb begin
    new_size          = (cmd_row_log2_i < 4'(BusLog2)) ? cmd_row_log2_i[2:0] : BusLog2[2:0];
    new_beats_log2    = cmd_row_log2_i - {1'b0, new_size};
    new_beats_per_row = RunWidth'(1) << new_beats_log2;
    contiguous        = cmd_rows_i == RowsWidth'(1) ||
                        cmd_stride_i == (32'd1 << cmd_row_log2_i);
  end

  // The distance to the next 4 KiB boundary, the longest burst it allows and
  // the start of the next run are kept in registers, so the burst offered and
  // the state after it need no address arithmetic before the burst length is
  // known: these are the longest paths of a DMA engine at an FPGA's clock.
  // Each step's new distance is computed, and capped, before the step is
  // chosen; the burst it leads to is kept in a register too, so the engine's
  // decision to take it starts from flops.
  function automatic logic [12:0] capped(input logic [12:0] to_4k);
    capped = (to_4k > 13'(MaxBurst)) ? 13'(MaxBurst) : to_4k;
  endfunction

  // Whether the rest of a run is one burst, and that burst's length.
  function automatic logic [RunWidth:0] burst_of(input logic [RunWidth-1:0] run_left,
                                                 input logic [12:0]         cap);
    logic fits;
    fits     = run_left <= RunWidth'(cap);
    burst_of = {fits, fits ? run_left : RunWidth'(cap)};
  endfunction

  always_comb begin
    burst_beats_o = beats_q;
    // A burst cut short of its run's end is cap_q beats long; it reaches the
    // boundary exactly when the boundary is within MaxBurst beats.
    cap_bytes     = cap_q << size_q;
    to_4k_cut     = (to_4k_q == cap_q) ? 13'h1000 >> size_q : to_4k_q - cap_q;
    to_4k_run     = (13'h1000 - {1'b0, next_run_q[11:0]}) >> size_q;
    to_4k_cmd     = (13'h1000 - {1'b0, cmd_addr_i[11:0]}) >> new_size;
    cap_cut       = capped(to_4k_cut);
    cap_run       = capped(to_4k_run);
    cap_cmd       = capped(to_4k_cmd);
    // rows x beats per row, a power of two: a shift, not a multiplier.
    cmd_beats_per_run = contiguous ? RunWidth'(cmd_rows_i) << new_beats_log2 : new_beats_per_row;
    run_left_cut  = run_left_q - RunWidth'(cap_q);
    {fits_cmd, beats_cmd} = burst_of(cmd_beats_per_run, cap_cmd);
    {fits_cut, beats_cut} = burst_of(run_left_cut, cap_cut);
    {fits_run, beats_run} = burst_of(beats_per_run_q, cap_run);
    burst_valid_o = active_q && !abort_i;
    burst_addr_o  = addr_q;
    burst_size_o  = size_q;
    burst_last_o  = fits_q && runs_left_q == '0;
  end

  // Next state, in its own block: it depends on burst_take_i, which the engine
  // derives from the burst offered above.
  always_comb begin
    active_d        = active_q;
    size_d          = size_q;
    beats_per_run_d = beats_per_run_q;
    stride_d        = stride_q;
    runs_left_d     = runs_left_q;
    next_run_d      = next_run_q;
    addr_d          = addr_q;
    to_4k_d         = to_4k_q;
    cap_d           = cap_q;
    run_left_d      = run_left_q;
    fits_d          = fits_q;
    beats_d         = beats_q;

    if (cmd_valid_i && cmd_ready_o) begin
      active_d   = 1'b1;
      size_d     = new_size;
      stride_d   = cmd_stride_i;
      next_run_d = cmd_addr_i + cmd_stride_i;
      addr_d     = cmd_addr_i;
      to_4k_d    = to_4k_cmd;
      cap_d      = cap_cmd;
      beats_per_run_d = cmd_beats_per_run;
      runs_left_d     = contiguous ? '0 : cmd_rows_i - 1'b1;
      run_left_d = cmd_beats_per_run;
      fits_d     = fits_cmd;
      beats_d    = beats_cmd;
    end else if (burst_valid_o && burst_take_i) begin
      if (!fits_q) begin
        addr_d     = addr_q + {19'h0, cap_bytes};
        to_4k_d    = to_4k_cut;
        cap_d      = cap_cut;
        run_left_d = run_left_cut;
        fits_d     = fits_cut;
        beats_d    = beats_cut;
      end else if (runs_left_q == '0) begin
        active_d = 1'b0;
      end else begin
        runs_left_d = runs_left_q - 1'b1;
        addr_d      = next_run_q;
        to_4k_d     = to_4k_run;
        cap_d       = cap_run;
        next_run_d  = next_run_q + stride_q;
        run_left_d  = beats_per_run_q;
        fits_d      = fits_run;
        beats_d     = beats_run;
      end
    end
    if (abort_i) active_d = 1'b0;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      active_q        <= 1'b0;
      size_q          <= '0;
      beats_per_run_q <= '0;
      stride_q        <= '0;
      runs_left_q     <= '0;
      next_run_q      <= '0;
      addr_q          <= '0;
      to_4k_q         <= 13'h1000;
      cap_q           <= 13'(MaxBurst);
      run_left_q      <= '0;
      fits_q          <= 1'b1;
      beats_q         <= '0;
    end else begin
      active_q        <= active_d;
      size_q          <= size_d;
      beats_per_run_q <= beats_per_run_d;
      stride_q        <= stride_d;
      runs_left_q     <= runs_left_d;
      next_run_q      <= next_run_d;
      addr_q          <= addr_d;
      to_4k_q         <= to_4k_d;
      cap_q           <= cap_d;
      run_left_q      <= run_left_d;
      fits_q          <= fits_d;
      beats_q         <= beats_d;
    end
  end

`ifndef SYNTHESIS
  a_burst_in_4k: assert property (@(posedge clk_i) disable iff (!rst_ni)
      burst_valid_o |-> ({20'h0, burst_addr_o[11:0]} + (32'(burst_beats_o) << burst_size_o))
                        <= 32'h1000)
    else $error("tpu_axi_bursts: burst would cross a 4 KiB boundary");
  a_burst_aligned: assert property (@(posedge clk_i) disable iff (!rst_ni)
      burst_valid_o |-> (burst_addr_o & ((32'd1 << burst_size_o) - 1)) == '0)
    else $error("tpu_axi_bursts: burst address not aligned to its beat size");
  a_to_4k_tracks_addr: assert property (@(posedge clk_i) disable iff (!rst_ni)
      active_q |-> to_4k_q == (13'h1000 - {1'b0, addr_q[11:0]}) >> size_q)
    else $error("tpu_axi_bursts: distance to the 4 KiB boundary lost track of the address");
  a_burst_tracks_run: assert property (@(posedge clk_i) disable iff (!rst_ni)
      fits_q == (run_left_q <= RunWidth'(cap_q)) &&
      beats_q == (fits_q ? run_left_q : RunWidth'(cap_q)))
    else $error("tpu_axi_bursts: the burst offered lost track of the run and the boundary");
  a_cap_tracks_to_4k: assert property (@(posedge clk_i) disable iff (!rst_ni)
      cap_q == capped(to_4k_q))
    else $error("tpu_axi_bursts: the longest burst lost track of the distance to the boundary");
  a_burst_nonempty: assert property (@(posedge clk_i) disable iff (!rst_ni)
      burst_valid_o |-> burst_beats_o != '0 && burst_beats_o <= MaxBurstBeats)
    else $error("tpu_axi_bursts: burst length out of range");
`endif

endmodule
