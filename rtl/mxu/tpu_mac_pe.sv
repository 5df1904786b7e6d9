// One processing element of the weight-stationary systolic array (N-MAC).
//
// Activations travel left to right, partial sums top to bottom, weights top to
// bottom. The weight is double buffered: weight beats travelling down the
// column are captured into `wgt_next` by the PE whose row they are tagged for,
// while the PE keeps multiplying with `wgt_active`. The first activation of a
// new tile carries `commit`; it uses `wgt_next` and makes it the active weight.
// Because commit travels with the activation wavefront, consecutive tiles run
// back to back with no bubble.
//
// Timing: an activation at the input in cycle t meets the partial sum at the
// input in cycle t + MulStages; the new partial sum leaves AddStages + 1 cycles
// after the old one arrived.
module tpu_mac_pe #(
  parameter int unsigned RowIndex  = 0,
  parameter int unsigned TagWidth  = 1,
  parameter int unsigned MulStages = 0,
  parameter int unsigned AddStages = 0
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  input  logic                en_i,       // the whole array advances together

  input  logic [15:0]         act_i,
  input  logic                commit_i,
  output logic [15:0]         act_o,
  output logic                commit_o,

  input  logic                wgt_valid_i,
  input  logic [TagWidth-1:0] wgt_tag_i,  // array row the weight belongs to
  input  logic [15:0]         wgt_i,
  output logic                wgt_valid_o,
  output logic [TagWidth-1:0] wgt_tag_o,
  output logic [15:0]         wgt_o,

  input  logic [31:0]         psum_i,
  output logic [31:0]         psum_o
);

  if (TagWidth < 1 || RowIndex >= (1 << TagWidth)) begin : g_bad_row
    $error("tpu_mac_pe: RowIndex does not fit in TagWidth bits");
  end

  // ---------------------------------------------------------------------------
  // Double-buffered weight
  // ---------------------------------------------------------------------------
  localparam logic [TagWidth-1:0] RowTag = RowIndex[TagWidth-1:0];

  logic        capture;
  logic [15:0] wgt_next_d, wgt_next_q, wgt_active_d, wgt_active_q, wgt_used;

  always_comb begin
    capture    = wgt_valid_i && (wgt_tag_i == RowTag);
    wgt_next_d = wgt_next_q;
    if (en_i && capture) wgt_next_d = wgt_i;

    wgt_used     = commit_i ? wgt_next_q : wgt_active_q;
    wgt_active_d = wgt_active_q;
    if (en_i && commit_i) wgt_active_d = wgt_next_q;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wgt_next_q   <= '0;
      wgt_active_q <= '0;
    end else begin
      wgt_next_q   <= wgt_next_d;
      wgt_active_q <= wgt_active_d;
    end
  end

  // ---------------------------------------------------------------------------
  // Systolic forwarding registers
  // ---------------------------------------------------------------------------
  tpu_pipe_reg #(.Width(17)) u_act_reg (
    .clk_i, .rst_ni, .en_i,
    .data_i({commit_i, act_i}),
    .data_o({commit_o, act_o})
  );

  tpu_pipe_reg #(.Width(1 + TagWidth + 16)) u_wgt_reg (
    .clk_i, .rst_ni, .en_i,
    .data_i({wgt_valid_i, wgt_tag_i, wgt_i}),
    .data_o({wgt_valid_o, wgt_tag_o, wgt_o})
  );

  // ---------------------------------------------------------------------------
  // Multiply-accumulate, unfused: S' = add(S, mul(a, w))
  // ---------------------------------------------------------------------------
  logic [31:0] product, sum;

  tpu_bf16_mul #(.PipeStages(MulStages)) u_mul (
    .clk_i, .rst_ni, .en_i,
    .a_i(act_i),
    .b_i(wgt_used),
    .product_o(product)
  );

  tpu_fp32_add #(.PipeStages(AddStages)) u_add (
    .clk_i, .rst_ni, .en_i,
    .x_i(psum_i),
    .y_i(product),
    .sum_o(sum)
  );

  tpu_pipe_reg #(.Width(32)) u_psum_reg (
    .clk_i, .rst_ni, .en_i,
    .data_i(sum),
    .data_o(psum_o)
  );

`ifndef SYNTHESIS
  // Shadow state for the double-buffer invariants: a tile's weight is captured
  // once and committed once, in that order, and never overwritten unused.
  logic next_pending_d, next_pending_q;

  always_comb begin
    next_pending_d = next_pending_q;
    if (en_i && commit_i)  next_pending_d = 1'b0;
    if (en_i && capture)   next_pending_d = 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) next_pending_q <= 1'b0;
    else         next_pending_q <= next_pending_d;
  end

  // A new weight may land in the same cycle as the commit that reads the old one.
  a_capture_not_over_pending: assert property (@(posedge clk_i) disable iff (!rst_ni)
      en_i && capture |-> !next_pending_q || commit_i)
    else $error("PE row %0d: weight overwritten before it was committed", RowIndex);

  a_commit_needs_weight: assert property (@(posedge clk_i) disable iff (!rst_ni)
      en_i && commit_i |-> next_pending_q)
    else $error("PE row %0d: tile committed before its weight arrived", RowIndex);
`endif

endmodule
