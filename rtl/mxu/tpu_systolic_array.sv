// Rows x Cols grid of multiply-add cells (N-MAC), weight-stationary. A cell
// multiplies bf16 and adds fp32, or, for an activation marked int8, multiplies
// the int8 low bytes of its lanes and adds int32 (Q-MAC): tpu_mac_pkg.
//
// Activations travel left to right, partial sums and weights top to bottom.
// Each cell's weight is double buffered: weight beats travelling down a column
// are captured into `wgt_next` by the cell whose row they are tagged for, while
// the cell keeps multiplying with `wgt_active`. The first activation of a new
// tile carries `commit`; it uses `wgt_next` and makes it the active weight.
// Because commit travels with the activation wavefront, consecutive tiles run
// back to back with no bubble.
//
// The cell is written once: one loop over all cells computes every cell's next
// state from arrays of cell state ([r][c] is the cell in row r, column c),
// with the arithmetic of tpu_fp_pkg, and one loop registers it. Synthesis
// unrolls the loops into Rows x Cols cells; a simulator runs them as loops
// over plain arrays, so its code does not grow with the array and every cell
// costs the same (docs/perf.md).
//
// The int8 mark travels with the activation, and with its product through the
// pipeline registers, so rows of both modes can follow each other closely.
//
// Inputs must arrive already skewed (row r of activations r * (AddStages + 1)
// cycles late, column c of partial sums c + MulStages cycles late, column c of
// weights c cycles late) and from registers; tpu_mxu does that. An activation
// at the input in cycle t meets the partial sum at the input in cycle
// t + MulStages; a row's new partial sum leaves AddStages + 1 cycles after the
// old one arrived. Outputs leave column c of the bottom row skewed by c. Lane i
// of a W-bit lane vector is bits [i*W +: W].
`include "tpu_assert.svh"

module tpu_systolic_array #(
  parameter int unsigned Rows      = 16,
  parameter int unsigned Cols      = 16,
  parameter int unsigned TagWidth  = 4,
  parameter int unsigned MulStages = 0,
  parameter int unsigned AddStages = 0,
  parameter bit          Int8      = 1'b0,  // the int8 mode exists
  parameter bit          Float     = 1'b1   // the bf16 mode exists
) (
  input  logic                     clk_i,
  input  logic                     rst_ni,
  input  logic                     en_i,       // the whole array advances together

  input  logic [Rows*16-1:0]       act_i,
  input  logic [Rows-1:0]          act_int8_i,  // each row's activation is int8
  input  logic [Rows-1:0]          commit_i,

  input  logic [Cols-1:0]          wgt_valid_i,
  input  logic [Cols*TagWidth-1:0] wgt_tag_i,  // array row each weight belongs to
  input  logic [Cols*16-1:0]       wgt_i,

  input  logic [Cols*32-1:0]       psum_i,
  output logic [Cols*32-1:0]       psum_o
);

  if (Rows < 1 || Cols < 1) begin : g_bad_size
    $error("tpu_systolic_array: Rows and Cols must be >= 1");
  end
  if (TagWidth < 1 || Rows > (1 << TagWidth)) begin : g_bad_tag
    $error("tpu_systolic_array: TagWidth too narrow to number Rows rows");
  end
  if (MulStages > tpu_pkg::MulStagesMax || AddStages > tpu_pkg::AddStagesMax) begin : g_bad_stages
    $error("tpu_systolic_array: MulStages must be in 0..2, AddStages in 0..3");
  end
  if (!Int8 && !Float) begin : g_no_mode
    $error("tpu_systolic_array: at least one of Int8 and Float must be set");
  end

  // Where the pipeline registers are (tpu_bf16_mul, tpu_fp32_add): after the
  // significand multiply, the product, the operand swap, the add, the normalisation.
  localparam bit MulSigReg   = MulStages >= 1;
  localparam bit ProductReg  = MulStages >= 2;
  localparam bit AddOrderReg = AddStages >= 2;
  localparam bit AddSumReg   = AddStages >= 1;
  localparam bit AddNormReg  = AddStages >= 3;

  localparam int unsigned MulProductBits = tpu_fp_pkg::MulProductBits;
  localparam int unsigned AddOrderedBits = tpu_fp_pkg::AddOrderedBits;
  localparam int unsigned AddSumBits     = tpu_fp_pkg::AddSumBits;
  localparam int unsigned AddNormBits    = tpu_fp_pkg::AddNormalisedBits;

  // ---------------------------------------------------------------------------
  // Cell state, one element per cell, in unpacked arrays of plain vectors
  // (Yosys reads those, not arrays of structs; only the functions look
  // inside). Data registers have no reset: only what the valid bits (commit,
  // weight valid) let through is ever used, and those are reset.
  // ---------------------------------------------------------------------------
  // Forwarding registers: what the cell passes right (activation, commit) and
  // down (weight beat).
  (* mem2reg *) logic [15:0]         act_d [Rows][Cols];
  (* mem2reg *) logic [15:0]         act_q [Rows][Cols];
  (* mem2reg *) logic                int8_d [Rows][Cols];
  (* mem2reg *) logic                int8_q [Rows][Cols];
  (* mem2reg *) logic                commit_d [Rows][Cols];
  (* mem2reg *) logic                commit_q [Rows][Cols];
  (* mem2reg *) logic                wvld_d [Rows][Cols];
  (* mem2reg *) logic                wvld_q [Rows][Cols];
  (* mem2reg *) logic [TagWidth-1:0] wtag_d [Rows][Cols];
  (* mem2reg *) logic [TagWidth-1:0] wtag_q [Rows][Cols];
  (* mem2reg *) logic [15:0]         wgt_d [Rows][Cols];
  (* mem2reg *) logic [15:0]         wgt_q [Rows][Cols];
  // The double-buffered weight.
  (* mem2reg *) logic                capture [Rows][Cols];
  (* mem2reg *) logic [15:0]         wgt_next_d [Rows][Cols];
  (* mem2reg *) logic [15:0]         wgt_next_q [Rows][Cols];
  (* mem2reg *) logic [15:0]         wgt_active_d [Rows][Cols];
  (* mem2reg *) logic [15:0]         wgt_active_q [Rows][Cols];
  // Multiply-add, unfused: S' = add(S, mul(a, w)): the pipeline registers,
  // each with the int8 mark of the value it holds.
  (* mem2reg *) logic [MulProductBits-1:0] mul_sig_d [Rows][Cols];
  (* mem2reg *) logic [MulProductBits-1:0] mul_sig_q [Rows][Cols];
  (* mem2reg *) logic [31:0]               product_d [Rows][Cols];
  (* mem2reg *) logic [31:0]               product_q [Rows][Cols];
  (* mem2reg *) logic [AddOrderedBits-1:0] add_ord_d [Rows][Cols];
  (* mem2reg *) logic [AddOrderedBits-1:0] add_ord_q [Rows][Cols];
  (* mem2reg *) logic [AddSumBits-1:0]     add_sum_d [Rows][Cols];
  (* mem2reg *) logic [AddSumBits-1:0]     add_sum_q [Rows][Cols];
  (* mem2reg *) logic [AddNormBits-1:0]    add_norm_d [Rows][Cols];
  (* mem2reg *) logic [AddNormBits-1:0]    add_norm_q [Rows][Cols];
  (* mem2reg *) logic                      mul_sig_int8_d [Rows][Cols];
  (* mem2reg *) logic                      mul_sig_int8_q [Rows][Cols];
  (* mem2reg *) logic                      product_int8_d [Rows][Cols];
  (* mem2reg *) logic                      product_int8_q [Rows][Cols];
  (* mem2reg *) logic                      add_ord_int8_d [Rows][Cols];
  (* mem2reg *) logic                      add_ord_int8_q [Rows][Cols];
  (* mem2reg *) logic                      add_sum_int8_d [Rows][Cols];
  (* mem2reg *) logic                      add_sum_int8_q [Rows][Cols];
  (* mem2reg *) logic                      add_norm_int8_d [Rows][Cols];
  (* mem2reg *) logic                      add_norm_int8_q [Rows][Cols];
  // Partial sums passed down; the bottom row's go out through psum_out_q.
  (* mem2reg *) logic [31:0]               psum_d [Rows][Cols];
  (* mem2reg *) logic [31:0]               psum_q [Rows][Cols];
  logic [Cols-1:0][31:0]                   psum_out_d, psum_out_q;

  // ---------------------------------------------------------------------------
  // The cell
  // ---------------------------------------------------------------------------
  always_comb begin
    for (int unsigned r = 0; r < Rows; r++) begin
      for (int unsigned c = 0; c < Cols; c++) begin
        // One cell's values between its pipeline stages.
        logic [MulProductBits-1:0] mul_sig;
        logic [31:0]               product;
        logic [AddOrderedBits-1:0] add_ord;
        logic [AddSumBits-1:0]     add_sum;
        logic [AddNormBits-1:0]    add_norm;
        logic                      int8;  // of the value between the current stages

        // Take in the neighbours' forwarded values, or the edge inputs.
        if (c == 0) begin
          act_d[r][c]    = act_i[r*16 +: 16];
          int8_d[r][c]   = act_int8_i[r];
          commit_d[r][c] = commit_i[r];
        end else begin
          act_d[r][c]    = act_q[r][c-1];
          int8_d[r][c]   = int8_q[r][c-1];
          commit_d[r][c] = commit_q[r][c-1];
        end
        if (r == 0) begin
          wvld_d[r][c] = wgt_valid_i[c];
          wtag_d[r][c] = wgt_tag_i[c*TagWidth +: TagWidth];
          wgt_d[r][c]  = wgt_i[c*16 +: 16];
        end else begin
          wvld_d[r][c] = wvld_q[r-1][c];
          wtag_d[r][c] = wtag_q[r-1][c];
          wgt_d[r][c]  = wgt_q[r-1][c];
        end

        // Capture this row's weight; a commit multiplies with the captured
        // weight and makes it the active one.
        capture[r][c]      = wvld_d[r][c] && wtag_d[r][c] == TagWidth'(r);
        wgt_next_d[r][c]   = capture[r][c] ? wgt_d[r][c] : wgt_next_q[r][c];
        wgt_active_d[r][c] = commit_d[r][c] ? wgt_next_q[r][c] : wgt_active_q[r][c];

        // Multiply, add the partial sum from above, pass it down. Each stage
        // hands its result to its register (_d); where the parameters put a
        // register, the next stage goes on from the register's output, and
        // with the mark that register holds. A core with one mode only has a
        // constant mark.
        int8            = !Float || (Int8 && int8_d[r][c]);
        mul_sig         = tpu_mac_pkg::multiply(act_d[r][c], wgt_active_d[r][c], int8);
        mul_sig_d[r][c] = mul_sig;
        mul_sig_int8_d[r][c] = int8;
        if (MulSigReg) begin
          mul_sig = mul_sig_q[r][c];
          int8    = !Float || (Int8 && mul_sig_int8_q[r][c]);
        end

        product         = tpu_mac_pkg::product(mul_sig, int8);
        product_d[r][c] = product;
        product_int8_d[r][c] = int8;
        if (ProductReg) begin
          product = product_q[r][c];
          int8    = !Float || (Int8 && product_int8_q[r][c]);
        end

        add_ord         = tpu_mac_pkg::add_order(r == 0 ? psum_i[c*32 +: 32] : psum_q[r-1][c],
                                                 product, int8);
        add_ord_d[r][c] = add_ord;
        add_ord_int8_d[r][c] = int8;
        if (AddOrderReg) begin
          add_ord = add_ord_q[r][c];
          int8    = !Float || (Int8 && add_ord_int8_q[r][c]);
        end

        add_sum         = tpu_mac_pkg::add_align(add_ord, int8);
        add_sum_d[r][c] = add_sum;
        add_sum_int8_d[r][c] = int8;
        if (AddSumReg) begin
          add_sum = add_sum_q[r][c];
          int8    = !Float || (Int8 && add_sum_int8_q[r][c]);
        end

        add_norm         = tpu_mac_pkg::add_normalise(add_sum, int8);
        add_norm_d[r][c] = add_norm;
        add_norm_int8_d[r][c] = int8;
        if (AddNormReg) begin
          add_norm = add_norm_q[r][c];
          int8     = !Float || (Int8 && add_norm_int8_q[r][c]);
        end

        psum_d[r][c] = tpu_mac_pkg::add_round(add_norm, int8);
      end
    end
    for (int unsigned c = 0; c < Cols; c++) psum_out_d[c] = psum_d[Rows-1][c];
  end

  // The registers are written with blocking assignments in loops, the one
  // place in the design that does so: Verilator 5.006 turns a non-blocking
  // write to an unpacked array into one delayed assignment per element, code
  // that grows with the array (and refuses one inside a loop). Here it means
  // the same: only the combinational block above reads these registers, and
  // what leaves the array leaves through the non-blocking psum_out_q.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        for (int unsigned c = 0; c < Cols; c++) begin
          commit_q[r][c] = 1'b0;
          wvld_q[r][c]   = 1'b0;
        end
      end
    end else if (en_i) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        for (int unsigned c = 0; c < Cols; c++) begin
          commit_q[r][c] = commit_d[r][c];
          wvld_q[r][c]   = wvld_d[r][c];
        end
      end
    end
  end

  always_ff @(posedge clk_i) begin
    if (en_i) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        for (int unsigned c = 0; c < Cols; c++) begin
          act_q[r][c]        = act_d[r][c];
          int8_q[r][c]       = int8_d[r][c];
          wtag_q[r][c]       = wtag_d[r][c];
          wgt_q[r][c]        = wgt_d[r][c];
          wgt_next_q[r][c]   = wgt_next_d[r][c];
          wgt_active_q[r][c] = wgt_active_d[r][c];
          if (MulSigReg) begin
            mul_sig_q[r][c]      = mul_sig_d[r][c];
            mul_sig_int8_q[r][c] = mul_sig_int8_d[r][c];
          end
          if (ProductReg) begin
            product_q[r][c]      = product_d[r][c];
            product_int8_q[r][c] = product_int8_d[r][c];
          end
          if (AddOrderReg) begin
            add_ord_q[r][c]      = add_ord_d[r][c];
            add_ord_int8_q[r][c] = add_ord_int8_d[r][c];
          end
          if (AddSumReg) begin
            add_sum_q[r][c]      = add_sum_d[r][c];
            add_sum_int8_q[r][c] = add_sum_int8_d[r][c];
          end
          if (AddNormReg) begin
            add_norm_q[r][c]      = add_norm_d[r][c];
            add_norm_int8_q[r][c] = add_norm_int8_d[r][c];
          end
          psum_q[r][c]       = psum_d[r][c];
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni)   psum_out_q <= '0;
    else if (en_i) psum_out_q <= psum_out_d;
  end

  assign psum_o = psum_out_q;

  // What leaves the right edge and the bottom of the weight chain has no consumer.
  logic [Rows-1:0] unused_right_edge;
  logic [Cols-1:0] unused_bottom_edge;
  always_comb begin
    for (int unsigned r = 0; r < Rows; r++) begin
      unused_right_edge[r] = ^{commit_q[r][Cols-1], act_q[r][Cols-1], int8_q[r][Cols-1]};
    end
    for (int unsigned c = 0; c < Cols; c++) begin
      unused_bottom_edge[c] = ^{wvld_q[Rows-1][c], wtag_q[Rows-1][c], wgt_q[Rows-1][c],
                                psum_q[Rows-1][c]};
    end
  end
  logic unused_edges;
  assign unused_edges = ^{unused_right_edge, unused_bottom_edge};

`ifndef SYNTHESIS
  // Shadow state for the double-buffer invariants: a tile's weight is captured
  // once and committed once, in that order, and never overwritten unused. A new
  // weight may land in the same cycle as the commit that reads the old one. One
  // check over all cells.
  (* mem2reg *) logic next_pending_d [Rows][Cols];
  (* mem2reg *) logic next_pending_q [Rows][Cols];
  logic               overwrite, empty_commit;
  // The first cell (r * Cols + c) where each check fails, for its message.
  int unsigned        overwrite_cell, empty_commit_cell;

  always_comb begin
    overwrite         = 1'b0;
    empty_commit      = 1'b0;
    overwrite_cell    = 0;
    empty_commit_cell = 0;
    for (int unsigned r = 0; r < Rows; r++) begin
      for (int unsigned c = 0; c < Cols; c++) begin
        next_pending_d[r][c] = capture[r][c] || (next_pending_q[r][c] && !commit_d[r][c]);
        if (!overwrite && capture[r][c] && next_pending_q[r][c] && !commit_d[r][c]) begin
          overwrite      = 1'b1;
          overwrite_cell = r * Cols + c;
        end
        if (!empty_commit && commit_d[r][c] && !next_pending_q[r][c]) begin
          empty_commit      = 1'b1;
          empty_commit_cell = r * Cols + c;
        end
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        for (int unsigned c = 0; c < Cols; c++) next_pending_q[r][c] = 1'b0;
      end
    end else if (en_i) begin
      for (int unsigned r = 0; r < Rows; r++) begin
        for (int unsigned c = 0; c < Cols; c++) next_pending_q[r][c] = next_pending_d[r][c];
      end
    end
  end

  `TPU_ASSUME(a_capture_not_over_pending, !en_i || !overwrite,
              $sformatf("weight overwritten before it was committed (cell %0d, %0d)",
                        overwrite_cell / Cols, overwrite_cell % Cols))

  `TPU_ASSUME(a_commit_needs_weight, !en_i || !empty_commit,
              $sformatf("tile committed before its weight arrived (cell %0d, %0d)",
                        empty_commit_cell / Cols, empty_commit_cell % Cols))
`endif

endmodule
