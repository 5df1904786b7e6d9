// Matrix unit: a Rows x Cols weight-stationary systolic array of bf16 x bf16 ->
// fp32 MAC cells (and, with Int8, int8 x int8 -> int32) with its input skew,
// output de-skew and stream control.
//
// Streams (valid/ready; data must hold while valid is high and ready low):
//   weights  one row of a weight tile per beat, Cols bf16 lanes, rows 0..Rows-1
//            in order; Rows beats make a tile. The next tile loads while the
//            current one computes (double-buffered weights).
//   acts     one row of activations per beat, Rows bf16 lanes (lane k meets
//            weight row k); `last` marks the final row that uses the current
//            tile, the next row uses the next tile; `int8` makes the row an
//            int8 one (Q-MAC): the low bytes of its lanes and of the weight
//            lanes are int8, its seeds and results int32.
//   seeds    one row of fp32 partial-sum seeds per activation row, Cols lanes;
//            joined with acts (a seed of +0 is the same as no seed, N-ORDER).
//   results  one row of Cols fp32 sums per activation row, in order:
//            res[j] = fold_k mac(seed[j], act[k], w[k][j]) for k = 0..Rows-1.
// Lane i of a W-bit lane vector is bits [i*W +: W].
//
// Latency from an activation entering to its result leaving:
//   Cols + MulStages + Rows * (AddStages + 1) cycles.
`include "tpu_assert.svh"

module tpu_mxu #(
  parameter int unsigned Rows      = 16,
  parameter int unsigned Cols      = 16,
  parameter int unsigned MulStages = 0,  // pipeline registers in each multiplier, 0..2
  parameter int unsigned AddStages = 0,  // pipeline registers in each adder, 0..3
  parameter bit          Int8      = 1'b0,  // int8 rows exist
  parameter bit          Float     = 1'b1   // bf16 rows exist (without: every row is int8)
) (
  input  logic               clk_i,
  input  logic               rst_ni,

  input  logic               wgt_valid_i,
  output logic               wgt_ready_o,
  input  logic [Cols*16-1:0] wgt_data_i,

  input  logic               act_valid_i,
  output logic               act_ready_o,
  input  logic [Rows*16-1:0] act_data_i,
  input  logic               act_last_i,
  input  logic               act_int8_i,

  input  logic               seed_valid_i,
  output logic               seed_ready_o,
  input  logic [Cols*32-1:0] seed_data_i,

  output logic               res_valid_o,
  input  logic               res_ready_i,
  output logic [Cols*32-1:0] res_data_o,
  output logic               res_last_o
);

  if (Rows < 1 || Rows > tpu_pkg::ArrayDimMax) begin : g_bad_rows
    $error("tpu_mxu: Rows must be in 1..256");
  end
  if (Cols < 1 || Cols > tpu_pkg::ArrayDimMax) begin : g_bad_cols
    $error("tpu_mxu: Cols must be in 1..256");
  end
  if (MulStages > tpu_pkg::MulStagesMax) begin : g_bad_mul_stages
    $error("tpu_mxu: MulStages must be in 0..2");
  end
  if (AddStages > tpu_pkg::AddStagesMax) begin : g_bad_add_stages
    $error("tpu_mxu: AddStages must be in 0..3");
  end
  if (!Int8 && !Float) begin : g_no_mode
    $error("tpu_mxu: at least one of Int8 and Float must be set");
  end

  // Illegal values have raised an error above. The internals are built from
  // clamped copies so that elaboration stops at once instead of first building
  // an oversized array; the ports keep the requested sizes.
  localparam int unsigned RowsChecked = (Rows >= 1 && Rows <= tpu_pkg::ArrayDimMax) ? Rows : 1;
  localparam int unsigned ColsChecked = (Cols >= 1 && Cols <= tpu_pkg::ArrayDimMax) ? Cols : 1;
  localparam int unsigned MulChecked  = (MulStages <= tpu_pkg::MulStagesMax) ? MulStages : 0;
  localparam int unsigned AddChecked  = (AddStages <= tpu_pkg::AddStagesMax) ? AddStages : 0;

  localparam int unsigned TagWidth = (RowsChecked > 1) ? $clog2(RowsChecked) : 1;
  localparam int unsigned PsumStep = AddChecked + 1;
  localparam int unsigned WgtWidth = 1 + TagWidth + 16;

  logic                advance, wgt_fire, commit;
  logic [TagWidth-1:0] wgt_tag;

  tpu_mxu_ctrl #(
    .Rows(RowsChecked), .Cols(ColsChecked), .MulStages(MulChecked), .AddStages(AddChecked),
    .TagWidth(TagWidth)
  ) u_ctrl (
    .clk_i, .rst_ni,
    .wgt_valid_i, .wgt_ready_o,
    .act_valid_i, .act_ready_o, .act_last_i,
    .seed_valid_i, .seed_ready_o,
    .res_valid_o, .res_ready_i, .res_last_o,
    .advance_o (advance),
    .wgt_fire_o(wgt_fire),
    .wgt_tag_o (wgt_tag),
    .commit_o  (commit)
  );

  // ---------------------------------------------------------------------------
  // Input skew: activation row r enters r * PsumStep cycles late so it meets the
  // partial sums coming down; weight and seed column c enter c cycles late (and
  // seeds MulChecked more, to meet the multiplier's output). Every lane is one
  // register longer than that: the array's inputs then all leave registers, so
  // no cell hangs on this unit's input ports and a simulator evaluates the
  // cells once per cycle, not again for every change of an input.
  // ---------------------------------------------------------------------------
  logic [RowsChecked*16-1:0]       act_skewed;
  logic [RowsChecked-1:0]          commit_skewed, int8_skewed;
  logic [ColsChecked-1:0]          wvld_skewed;
  logic [ColsChecked*TagWidth-1:0] wtag_skewed;
  logic [ColsChecked*16-1:0]       wgt_skewed;
  logic [ColsChecked*32-1:0]       seed_skewed, psum_bottom;

  for (genvar r = 0; r < RowsChecked; r++) begin : g_act_skew
    tpu_delay #(.Width(18), .Depth(1 + r * PsumStep)) u_delay (
      .clk_i, .rst_ni,
      .en_i  (advance),
      .data_i({commit, act_int8_i, act_data_i[r*16 +: 16]}),
      .data_o({commit_skewed[r], int8_skewed[r], act_skewed[r*16 +: 16]})
    );
  end

  for (genvar c = 0; c < ColsChecked; c++) begin : g_col_skew
    tpu_delay #(.Width(WgtWidth), .Depth(1 + c)) u_wgt_delay (
      .clk_i, .rst_ni,
      .en_i  (advance),
      .data_i({wgt_fire, wgt_tag, wgt_data_i[c*16 +: 16]}),
      .data_o({wvld_skewed[c], wtag_skewed[c*TagWidth +: TagWidth], wgt_skewed[c*16 +: 16]})
    );

    tpu_delay #(.Width(32), .Depth(1 + c + MulChecked)) u_seed_delay (
      .clk_i, .rst_ni,
      .en_i  (advance),
      .data_i(seed_data_i[c*32 +: 32]),
      .data_o(seed_skewed[c*32 +: 32])
    );

    // Output de-skew: column c leaves the array c cycles after column 0.
    tpu_delay #(.Width(32), .Depth(ColsChecked - 1 - c)) u_res_delay (
      .clk_i, .rst_ni,
      .en_i  (advance),
      .data_i(psum_bottom[c*32 +: 32]),
      .data_o(res_data_o[c*32 +: 32])
    );
  end

  tpu_systolic_array #(
    .Rows(RowsChecked), .Cols(ColsChecked), .TagWidth(TagWidth),
    .MulStages(MulChecked), .AddStages(AddChecked), .Int8(Int8), .Float(Float)
  ) u_array (
    .clk_i, .rst_ni,
    .en_i       (advance),
    .act_i      (act_skewed),
    .act_int8_i (int8_skewed),
    .commit_i   (commit_skewed),
    .wgt_valid_i(wvld_skewed),
    .wgt_tag_i  (wtag_skewed),
    .wgt_i      (wgt_skewed),
    .psum_i     (seed_skewed),
    .psum_o     (psum_bottom)
  );

  // Stream obligations of the environment: a beat that is offered stays offered,
  // unchanged, until it is taken.
  `TPU_ASSUME_NEXT(a_wgt_stable, wgt_valid_i && !wgt_ready_o, wgt_valid_i && $stable(wgt_data_i),
                   "weight beat changed or withdrawn before it was taken")
  `TPU_ASSUME_NEXT(a_act_stable, act_valid_i && !act_ready_o,
                   act_valid_i && $stable(act_data_i) && $stable(act_last_i) && $stable(act_int8_i),
                   "activation beat changed or withdrawn before it was taken")
  `TPU_ASSUME_NEXT(a_seed_stable, seed_valid_i && !seed_ready_o,
                   seed_valid_i && $stable(seed_data_i),
                   "seed beat changed or withdrawn before it was taken")

  // The unit's own obligation on the result stream.
  `TPU_ASSERT_NEXT(a_res_stable, res_valid_o && !res_ready_i,
                   res_valid_o && $stable(res_data_o) && $stable(res_last_o),
                   "result changed or withdrawn before it was taken")

endmodule
