// READ_WEIGHTS (and the weight half of MATMUL with FETCH): reads weight tiles
// from host memory into the weight FIFO, which feeds the systolic array's
// weight stream. A tile is Dim rows of Dim bf16 weights; an operation reads
// `rows` rows per tile and fills the rest of the tile with +0. The FIFO holds
// WeightTiles tiles, and the array's second weight buffer one more, so tiles
// load while the array computes with earlier ones. An operation is complete
// once its last tile is in the FIFO. With Transpose, READ_WEIGHTS T passes its
// tiles through tpu_tile_transpose, so that the rows read become the tiles'
// columns; the other operations' rows go straight into the FIFO, which the
// transposer never holds a tile of between operations.
`include "tpu_assert.svh"

module tpu_weight_unit #(
  parameter int unsigned Dim         = 16,
  parameter int unsigned BusBytes    = 16,
  parameter int unsigned WeightTiles = 4,
  parameter int unsigned QueueDepth  = 4,
  parameter int unsigned BufBeats    = 32,
  parameter bit          Int8        = 1'b0,
  parameter bit          Transpose   = 1'b0,  // READ_WEIGHTS T (a core with a vector unit)
  localparam int unsigned QOffWidth  = (QueueDepth > 1) ? $clog2(QueueDepth) : 1
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic                        abort_i,

  input  logic                        push_i,
  input  tpu_core_pkg::op_t           push_op_i,
  input  logic [tpu_core_pkg::FootprintBits-1:0] push_fp_i,
  output logic                        full_o,
  output logic [QueueDepth-1:0]       fp_valid_o,
  output logic [QueueDepth*tpu_core_pkg::FootprintBits-1:0] fps_o,

  output logic                        ar_valid_o,
  input  logic                        ar_ready_i,
  output logic [31:0]                 ar_addr_o,
  output logic [7:0]                  ar_len_o,
  output logic [2:0]                  ar_size_o,
  input  logic                        r_valid_i,
  output logic                        r_ready_o,
  input  logic [BusBytes*8-1:0]       r_data_i,
  input  logic [1:0]                  r_resp_i,

  // Weight rows to the matrix unit, tile row 0 first.
  output logic                        wgt_valid_o,
  input  logic                        wgt_ready_i,
  output logic [Dim*16-1:0]           wgt_data_o,
  output logic                        fifo_empty_o,

  output logic                        bus_error_o,
  output logic [23:0]                 pc_o,
  output logic                        axi_quiet_o,  // no AXI burst in flight
  output logic                        idle_o
);

  localparam int unsigned DimLog2    = $clog2(Dim);
  localparam int unsigned FifoRows   = WeightTiles * Dim;
  localparam int unsigned LastRowIdx = Dim - 1;
  localparam logic [15:0] LastTileRow = LastRowIdx[15:0];

  if (WeightTiles < 2 || WeightTiles > 16) begin : g_bad_tiles
    $error("tpu_weight_unit: WeightTiles must be in 2..16");
  end

  tpu_core_pkg::op_t head, unused_peek;
  logic head_valid, queue_empty, pop;
  logic [$clog2(QueueDepth+1)-1:0] unused_count;

  tpu_op_queue #(.Depth(QueueDepth)) u_queue (
    .clk_i, .rst_ni,
    .push_i, .push_op_i, .push_fp_i, .full_o,
    .empty_o    (queue_empty),
    .count_o    (unused_count),
    .head_o     (head),
    .peek_slot_i(QOffWidth'(0)),
    .peek_o     (unused_peek),
    .pop_i      (pop),
    .valid_o    (fp_valid_o),
    .fps_o
  );

  assign head_valid = !queue_empty;

  // ---------------------------------------------------------------------------
  // One read command per tile.
  // ---------------------------------------------------------------------------
  logic        op_start, cmd_valid, cmd_ready;
  logic [31:0] cmd_addr, cmd_stride;
  logic [15:0] cmd_rows, last_iter;
  logic [3:0]  cmd_row_log2;

  tpu_dma_iterations u_iterations (
    .clk_i, .rst_ni, .abort_i,
    .op_valid_i    (head_valid),
    .done_i        (pop),
    .host_addr_i   (head.host_addr),
    .host_step_i   (head.host_step),
    .count_i       (head.count),
    .stride_i      (head.host_stride),
    .rows_i        (head.rows),
    .row_log2_i    (int8_rows ? 4'(DimLog2) : 4'(DimLog2 + 1)),
    .start_o       (op_start),
    .cmd_valid_o   (cmd_valid),
    .cmd_ready_i   (cmd_ready),
    .cmd_addr_o    (cmd_addr),
    .cmd_stride_o  (cmd_stride),
    .cmd_rows_o    (cmd_rows),
    .cmd_row_log2_o(cmd_row_log2),
    .last_iter_o   (last_iter)
  );

  // ---------------------------------------------------------------------------
  // Tile rows: `rows` rows from memory, then +0 rows, into the FIFO (or, with
  // T, into the transposer, whose columns go into the FIFO).
  // ---------------------------------------------------------------------------
  logic              row_valid, row_ready, unused_row_last, unused_row_error, reader_idle;
  logic [Dim*16-1:0] row_data, row_lanes, fifo_in_data, source_data, columns_data;
  logic              fifo_in_valid, fifo_in_ready, from_memory, int8_rows, transposed;
  logic              source_valid, source_ready, source_ready_transposed;
  logic              columns_valid, columns_ready, transposer_empty;

  assign int8_rows  = Int8 && head.flags[tpu_isa_pkg::ReadWeightsFlagI8];
  assign transposed = Transpose && head.flags[tpu_isa_pkg::ReadWeightsFlagT];
  // Rows into the tile at the source (source_row) and into the FIFO (tile_row): the same
  // but with T, where the transposer holds a tile between them.
  logic [15:0]       source_row_d, source_row_q, tile_row_d, tile_row_q, tile_d, tile_q;
  logic [$clog2(FifoRows+1)-1:0] unused_fifo_count;

  tpu_axi_reader #(
    .BusBytes(BusBytes), .MaxRowBytes(Dim * 2), .BufBeats(BufBeats), .RowsWidth(16)
  ) u_reader (
    .clk_i, .rst_ni, .abort_i,
    .cmd_valid_i         (cmd_valid),
    .cmd_ready_o         (cmd_ready),
    .cmd_addr_i          (cmd_addr),
    .cmd_stride_i        (cmd_stride),
    .cmd_rows_i          (cmd_rows),
    .cmd_row_bytes_log2_i(cmd_row_log2),
    .ar_valid_o, .ar_ready_i, .ar_addr_o, .ar_len_o, .ar_size_o,
    .r_valid_i, .r_ready_o, .r_data_i, .r_resp_i,
    .row_valid_o         (row_valid),
    .row_ready_i         (row_ready),
    .row_data_o          (row_data),
    .row_last_o          (unused_row_last),
    .row_error_o         (unused_row_error),
    .bus_error_o,
    .quiet_o             (axi_quiet_o),
    .idle_o              (reader_idle)
  );

  // int8 tile rows (the flag I8, or MATMUL's I8 with FETCH) come as Dim bytes.
  tpu_int8_widen #(.Lanes(Dim)) u_widen (
    .int8_i (int8_rows),
    .row_i  (row_data),
    .lanes_o(row_lanes)
  );

  assign from_memory  = source_row_q < cmd_rows;
  assign source_valid = head_valid && !op_start && (from_memory ? row_valid : 1'b1) && !abort_i;
  assign source_data  = from_memory ? row_lanes : '0;
  assign row_ready    = from_memory && source_valid && source_ready;

  if (Transpose) begin : g_transpose
    tpu_tile_transpose #(.Dim(Dim)) u_transpose (
      .clk_i, .rst_ni, .abort_i,
      .in_valid_i (source_valid && transposed),
      .in_ready_o (source_ready_transposed),
      .in_data_i  (source_data),
      .out_valid_o(columns_valid),
      .out_ready_i(columns_ready),
      .out_data_o (columns_data),
      .empty_o    (transposer_empty)
    );
  end else begin : g_no_transpose
    assign source_ready_transposed = 1'b0;
    assign columns_valid           = 1'b0;
    assign columns_data            = '0;
    assign transposer_empty        = 1'b1;
    logic unused_transpose;
    assign unused_transpose = columns_ready;
  end

  assign source_ready  = transposed ? source_ready_transposed : fifo_in_ready;
  assign fifo_in_valid = transposed ? columns_valid : source_valid;
  assign fifo_in_data  = transposed ? columns_data : source_data;
  assign columns_ready = transposed && fifo_in_ready;

  always_comb begin
    source_row_d = source_row_q;
    if (op_start) begin
      source_row_d = '0;
    end else if (source_valid && source_ready) begin
      source_row_d = source_row_q == LastTileRow ? '0 : source_row_q + 1'b1;
    end
  end

  always_comb begin
    tile_row_d = tile_row_q;
    tile_d     = tile_q;
    pop        = 1'b0;
    if (op_start) begin
      tile_row_d = '0;
      tile_d     = '0;
    end else if (fifo_in_valid && fifo_in_ready) begin
      tile_row_d = tile_row_q + 1'b1;
      if (tile_row_q == LastTileRow) begin
        tile_row_d = '0;
        tile_d     = tile_q + 1'b1;
        pop        = tile_q == last_iter;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      source_row_q <= '0;
      tile_row_q   <= '0;
      tile_q       <= '0;
    end else begin
      source_row_q <= source_row_d;
      tile_row_q   <= tile_row_d;
      tile_q       <= tile_d;
    end
  end

  tpu_ram_fifo #(.Width(Dim * 16), .Depth(FifoRows)) u_fifo (
    .clk_i, .rst_ni,
    .in_valid_i (fifo_in_valid),
    .in_ready_o (fifo_in_ready),
    .in_data_i  (fifo_in_data),
    .out_valid_o(wgt_valid_o),
    .out_ready_i(wgt_ready_i),
    .out_data_o (wgt_data_o),
    .ram_count_o(unused_fifo_count)
  );

  assign fifo_empty_o = !wgt_valid_o;
  assign pc_o         = head.pc;
  assign idle_o       = queue_empty && reader_idle;

  // An operation starts with no tile of the one before in the transposer (tiles are whole),
  // and the FIFO's rows of a tile are as many as the source's.
  `TPU_ASSERT(a_transposer_empty_at_start, !op_start || transposer_empty,
              "an operation starts with rows of another in the transposer")
  `TPU_ASSERT(a_rows_in_step, !head_valid || transposed || source_row_q == tile_row_q,
              "rows into the FIFO and from the source apart without T")

endmodule
