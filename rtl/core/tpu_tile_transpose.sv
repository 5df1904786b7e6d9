// Transposes weight tiles on their way into the weight FIFO (READ_WEIGHTS T):
// takes a tile's Dim rows, then gives its Dim columns, each as a row: output
// row k holds lane k of input rows 0 .. Dim-1. A matrix that a product left in
// memory as rows (attention's K) so enters the array as the columns of its
// weight tiles (K^T) without the host rearranging it.
//
// One buffer of Dim x Dim lanes, filled a row a cycle, then emptied a column
// a cycle by shifting every row down one lane, so that lane 0 of the rows is
// always the next column: no Dim-to-1 multiplexer per lane. Filling and
// emptying alternate (2 Dim cycles a tile); the AXI reader keeps reading into
// its buffer meanwhile, so a tile read over a bus narrower than a row loses
// little to it. The unit only ever holds whole tiles between operations.
`include "tpu_assert.svh"

module tpu_tile_transpose #(
  parameter int unsigned Dim = 16,
  localparam int unsigned RowBits = Dim * 16
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               abort_i,  // drops a partial tile

  input  logic               in_valid_i,
  output logic               in_ready_o,
  input  logic [RowBits-1:0] in_data_i,

  output logic               out_valid_o,
  input  logic               out_ready_i,
  output logic [RowBits-1:0] out_data_o,

  output logic               empty_o  // holds no row of a tile
);

  localparam int unsigned CountWidth = (Dim > 1) ? $clog2(Dim) : 1;
  localparam int unsigned LastIdx    = Dim - 1;
  localparam logic [CountWidth-1:0] LastCount = LastIdx[CountWidth-1:0];

  logic                  draining_d, draining_q, fill, drain;
  logic [CountWidth-1:0] count_d, count_q;

  assign in_ready_o  = !draining_q;
  assign out_valid_o = draining_q;
  assign fill        = in_valid_i && in_ready_o;
  assign drain       = out_valid_o && out_ready_i;
  assign empty_o     = !draining_q && count_q == '0;

  always_comb begin
    count_d    = count_q;
    draining_d = draining_q;
    if (abort_i) begin
      count_d    = '0;
      draining_d = 1'b0;
    end else if (fill || drain) begin
      count_d = count_q + 1'b1;
      if (count_q == LastCount) begin
        count_d    = '0;
        draining_d = !draining_q;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      count_q    <= '0;
      draining_q <= 1'b0;
    end else begin
      count_q    <= count_d;
      draining_q <= draining_d;
    end
  end

  // The tile's rows: data only, written where enabled, so no reset.
  for (genvar r = 0; r < Dim; r++) begin : g_row
    logic               write;
    logic [RowBits-1:0] row_d, row_q;

    assign write = drain || (fill && count_q == CountWidth'(r));
    assign row_d = drain ? row_q >> 16 : in_data_i;

    always_ff @(posedge clk_i) begin
      if (write) row_q <= row_d;
    end

    assign out_data_o[r*16 +: 16] = row_q[15:0];
  end

  `TPU_ASSERT(a_one_side_at_a_time, !(fill && drain), "filled and emptied in one cycle")
  `TPU_ASSERT_NEXT(a_out_stable, out_valid_o && !out_ready_i && !abort_i,
                   out_valid_o && $stable(out_data_o), "a column changed before it was taken")

endmodule
