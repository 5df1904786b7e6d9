// Control of the matrix unit: the handshakes of the weight, activation, seed and
// result streams, weight-tile bookkeeping for the double buffer, and the valid
// pipeline that marks which result rows are real.
//
// The array and every skew register advance together on `advance_o`; a result
// that is not taken freezes everything, so data stay aligned. Timing rules
// (in advancing cycles; derived in docs/architecture.md):
//   * a tile's first activation (its commit) may enter once all Rows weight
//     beats of that tile have entered;
//   * the next tile's first weight beat may enter FreeDelay cycles after the
//     commit, so that no PE's next-weight register is overwritten before the
//     commit wavefront has read it.
`include "tpu_assert.svh"

module tpu_mxu_ctrl #(
  parameter int unsigned Rows      = 16,
  parameter int unsigned Cols      = 16,
  parameter int unsigned MulStages = 0,
  parameter int unsigned AddStages = 0,
  parameter int unsigned TagWidth  = 4
) (
  input  logic                clk_i,
  input  logic                rst_ni,

  input  logic                wgt_valid_i,
  output logic                wgt_ready_o,
  input  logic                act_valid_i,
  output logic                act_ready_o,
  input  logic                act_last_i,
  input  logic                seed_valid_i,
  output logic                seed_ready_o,
  output logic                res_valid_o,
  input  logic                res_ready_i,
  output logic                res_last_o,

  output logic                advance_o,
  output logic                wgt_fire_o,
  output logic [TagWidth-1:0] wgt_tag_o,
  output logic                commit_o
);

  localparam int unsigned PsumStep  = AddStages + 1;  // cycles per row for partial sums
  localparam int unsigned FreeDelay = (PsumStep > 2) ? (Rows - 1) * (PsumStep - 2) : 0;
  localparam int unsigned Latency   = Cols + MulStages + Rows * PsumStep;
  localparam int unsigned FreeWidth = (FreeDelay > 0) ? $clog2(FreeDelay + 1) : 1;
  localparam int unsigned LastRow   = Rows - 1;
  localparam logic [TagWidth-1:0]  LastRowTag    = LastRow[TagWidth-1:0];
  localparam logic [FreeWidth-1:0] FreeDelayInit = FreeDelay[FreeWidth-1:0];

  if (Rows < 1 || (Rows > 1 && TagWidth < $clog2(Rows))) begin : g_bad_tag
    $error("tpu_mxu_ctrl: TagWidth too narrow to number Rows weight rows");
  end

  logic                 act_allowed, act_fire, last_row;
  logic [TagWidth-1:0]  load_row_d, load_row_q;
  logic                 next_full_d, next_full_q;
  logic                 tile_open_d, tile_open_q;
  logic [FreeWidth-1:0] free_wait_d, free_wait_q;

  always_comb begin
    advance_o   = !res_valid_o || res_ready_i;
    wgt_ready_o = advance_o && !next_full_q && free_wait_q == '0;
    wgt_fire_o  = wgt_valid_i && wgt_ready_o;
    wgt_tag_o   = load_row_q;
    last_row    = load_row_q == LastRowTag;

    // Activations and seeds are joined: one of each per row of results.
    act_allowed  = advance_o && (tile_open_q || next_full_q);
    act_ready_o  = act_allowed && seed_valid_i;
    seed_ready_o = act_allowed && act_valid_i;
    act_fire     = act_allowed && act_valid_i && seed_valid_i;
    commit_o     = act_fire && !tile_open_q;

    load_row_d  = load_row_q;
    next_full_d = next_full_q;
    if (wgt_fire_o) begin
      load_row_d = last_row ? '0 : load_row_q + 1'b1;
      if (last_row) next_full_d = 1'b1;
    end
    if (commit_o) next_full_d = 1'b0;

    free_wait_d = free_wait_q;
    if (commit_o) begin
      free_wait_d = FreeDelayInit;
    end else if (advance_o && free_wait_q != '0) begin
      free_wait_d = free_wait_q - 1'b1;
    end

    tile_open_d = tile_open_q;
    if (act_fire) tile_open_d = !act_last_i;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      load_row_q  <= '0;
      next_full_q <= 1'b0;
      tile_open_q <= 1'b0;
      free_wait_q <= '0;
    end else begin
      load_row_q  <= load_row_d;
      next_full_q <= next_full_d;
      tile_open_q <= tile_open_d;
      free_wait_q <= free_wait_d;
    end
  end

  // Which result rows are real, and which ends a tile.
  tpu_delay #(.Width(2), .Depth(Latency)) u_valid_pipe (
    .clk_i, .rst_ni,
    .en_i  (advance_o),
    .data_i({act_fire, act_fire && act_last_i}),
    .data_o({res_valid_o, res_last_o})
  );

`ifndef SYNTHESIS
  // Independent monitors of the two timing rules (docs/architecture.md). They
  // count the streams themselves rather than restating the ready logic.
  localparam int unsigned BeatWidth = $clog2(Rows + 1) + 1;
  localparam logic [BeatWidth-1:0] RowsBeats = Rows[BeatWidth-1:0];

  logic [BeatWidth-1:0]      beats_since_commit_d, beats_since_commit_q;
  logic [31:0]               cycles_since_commit_d, cycles_since_commit_q;
  logic                      committed_d, committed_q;

  always_comb begin
    beats_since_commit_d  = beats_since_commit_q;
    cycles_since_commit_d = cycles_since_commit_q;
    committed_d           = committed_q;
    if (advance_o && cycles_since_commit_q != '1) cycles_since_commit_d = cycles_since_commit_q + 1;
    if (wgt_fire_o) beats_since_commit_d = beats_since_commit_q + 1'b1;
    if (commit_o) begin
      beats_since_commit_d  = '0;
      cycles_since_commit_d = '0;
      committed_d           = 1'b1;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      beats_since_commit_q  <= '0;
      cycles_since_commit_q <= '0;
      committed_q           <= 1'b0;
    end else begin
      beats_since_commit_q  <= beats_since_commit_d;
      cycles_since_commit_q <= cycles_since_commit_d;
      committed_q           <= committed_d;
    end
  end

  // Rule 1: a tile commits with exactly Rows weight rows loaded since the last commit.
  `TPU_ASSERT(a_commit_after_whole_tile, !commit_o || (beats_since_commit_q == RowsBeats),
              "tile committed with the wrong number of weight rows")

  // Rule 2: the next tile's first weight row enters at least FreeDelay cycles
  // after the commit (the counter reads cycles since the commit, minus one).
  // With FreeDelay = 0 it always holds (and the comparison would be constant).
  if (FreeDelay > 0) begin : g_reload_waits
    `TPU_ASSERT(a_reload_waits,
                !(wgt_fire_o && committed_q && beats_since_commit_q == '0) ||
                (cycles_since_commit_q + 1 >= FreeDelay),
                "weights reloaded before the commit wavefront passed")
  end
`endif

endmodule
