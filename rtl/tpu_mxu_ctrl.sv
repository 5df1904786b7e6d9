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
  localparam int unsigned Latency   = Cols - 1 + MulStages + Rows * PsumStep;
  localparam int unsigned FreeWidth = (FreeDelay > 0) ? $clog2(FreeDelay + 1) : 1;

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
    last_row    = load_row_q == TagWidth'(Rows - 1);

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
      free_wait_d = FreeWidth'(FreeDelay);
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
  a_commit_has_full_tile: assert property (@(posedge clk_i) disable iff (!rst_ni)
      commit_o |-> next_full_q && load_row_q == '0)
    else $error("mxu: tile committed before all its weight rows entered");

  a_no_load_over_full_tile: assert property (@(posedge clk_i) disable iff (!rst_ni)
      wgt_fire_o |-> !next_full_q && free_wait_q == '0)
    else $error("mxu: weight beat entered while the next-weight buffer was busy");

  a_fire_only_when_advancing: assert property (@(posedge clk_i) disable iff (!rst_ni)
      (wgt_fire_o || act_fire) |-> advance_o)
    else $error("mxu: a stream fired while the array was frozen");
`endif

endmodule
