// Rows x Cols grid of MAC processing elements. Inputs must arrive already
// skewed (row r of activations r * (AddStages + 1) cycles late, column c of
// partial sums c + MulStages cycles late, column c of weights c cycles late);
// tpu_mxu does that. Outputs leave column c of the bottom row skewed by c.
//
// Vectors are flat: element i of a W-bit lane vector is [i*W +: W].
module tpu_systolic_array #(
  parameter int unsigned Rows      = 16,
  parameter int unsigned Cols      = 16,
  parameter int unsigned TagWidth  = 4,
  parameter int unsigned MulStages = 0,
  parameter int unsigned AddStages = 0
) (
  input  logic                     clk_i,
  input  logic                     rst_ni,
  input  logic                     en_i,

  input  logic [Rows*16-1:0]       act_i,
  input  logic [Rows-1:0]          commit_i,

  input  logic [Cols-1:0]          wgt_valid_i,
  input  logic [Cols*TagWidth-1:0] wgt_tag_i,
  input  logic [Cols*16-1:0]       wgt_i,

  input  logic [Cols*32-1:0]       psum_i,
  output logic [Cols*32-1:0]       psum_o
);

  if (Rows < 1 || Cols < 1) begin : g_bad_size
    $error("tpu_systolic_array: Rows and Cols must be >= 1");
  end

  // Links between neighbours. Horizontal links: index r*(Cols+1)+c is the input
  // of PE (r, c), c = Cols the right edge. Vertical links: index r*Cols+c is the
  // input of PE (r, c), r = Rows the bottom edge.
  localparam int unsigned HLinks = Rows * (Cols + 1);
  localparam int unsigned VLinks = (Rows + 1) * Cols;

  logic [HLinks*16-1:0]       act_link;
  logic [HLinks-1:0]          commit_link;
  logic [VLinks-1:0]          wvld_link;
  logic [VLinks*TagWidth-1:0] wtag_link;
  logic [VLinks*16-1:0]       wgt_link;
  logic [VLinks*32-1:0]       psum_link;

  for (genvar r = 0; r < Rows; r++) begin : g_left_edge
    assign act_link[r*(Cols+1)*16 +: 16] = act_i[r*16 +: 16];
    assign commit_link[r*(Cols+1)]       = commit_i[r];
  end

  assign wvld_link[0 +: Cols]          = wgt_valid_i;
  assign wtag_link[0 +: Cols*TagWidth] = wgt_tag_i;
  assign wgt_link[0 +: Cols*16]        = wgt_i;
  assign psum_link[0 +: Cols*32]       = psum_i;
  assign psum_o = psum_link[Rows*Cols*32 +: Cols*32];

  for (genvar r = 0; r < Rows; r++) begin : g_row
    for (genvar c = 0; c < Cols; c++) begin : g_col
      localparam int unsigned H    = r * (Cols + 1) + c;  // this PE's left input
      localparam int unsigned V    = r * Cols + c;        // this PE's top input
      localparam int unsigned VOut = V + Cols;            // the PE below

      tpu_mac_pe #(
        .RowIndex (r),
        .TagWidth (TagWidth),
        .MulStages(MulStages),
        .AddStages(AddStages)
      ) u_pe (
        .clk_i, .rst_ni, .en_i,
        .act_i      (act_link[H*16 +: 16]),
        .commit_i   (commit_link[H]),
        .act_o      (act_link[(H+1)*16 +: 16]),
        .commit_o   (commit_link[H+1]),
        .wgt_valid_i(wvld_link[V]),
        .wgt_tag_i  (wtag_link[V*TagWidth +: TagWidth]),
        .wgt_i      (wgt_link[V*16 +: 16]),
        .wgt_valid_o(wvld_link[VOut]),
        .wgt_tag_o  (wtag_link[VOut*TagWidth +: TagWidth]),
        .wgt_o      (wgt_link[VOut*16 +: 16]),
        .psum_i     (psum_link[V*32 +: 32]),
        .psum_o     (psum_link[VOut*32 +: 32])
      );
    end
  end

  // What leaves the right edge and the bottom of the weight chain has no consumer.
  logic unused_edges;
  logic [Rows*17-1:0] right_edge;
  for (genvar r = 0; r < Rows; r++) begin : g_right_edge
    assign right_edge[r*17 +: 17] = {commit_link[r*(Cols+1)+Cols],
                                     act_link[(r*(Cols+1)+Cols)*16 +: 16]};
  end
  assign unused_edges = ^{right_edge,
                          wvld_link[Rows*Cols +: Cols],
                          wtag_link[Rows*Cols*TagWidth +: Cols*TagWidth],
                          wgt_link[Rows*Cols*16 +: Cols*16]};

endmodule
