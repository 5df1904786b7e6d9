// WRITE_HOST: copies unified-buffer (bf16, or int8: the low byte of each lane)
// or accumulator (fp32 or int32) rows to host memory. Operations run one at a time, in order. Rows are read from on-chip
// memory into a small staging FIFO that feeds the write engine; an operation
// is complete, and leaves the queue, once host memory has acknowledged its
// last burst.
`include "tpu_assert.svh"

module tpu_store_unit #(
  parameter int unsigned Dim        = 16,
  parameter int unsigned BusBytes   = 16,
  parameter int unsigned UbDepth    = 1024,
  parameter int unsigned AccDepth   = 1024,
  parameter int unsigned QueueDepth = 4,
  parameter bit          Int8       = 1'b0,
  localparam int unsigned UbAddrWidth  = $clog2(UbDepth),
  localparam int unsigned AccAddrWidth = $clog2(AccDepth),
  localparam int unsigned QOffWidth    = (QueueDepth > 1) ? $clog2(QueueDepth) : 1
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

  output logic                        aw_valid_o,
  input  logic                        aw_ready_i,
  output logic [31:0]                 aw_addr_o,
  output logic [7:0]                  aw_len_o,
  output logic [2:0]                  aw_size_o,
  output logic                        w_valid_o,
  input  logic                        w_ready_i,
  output logic [BusBytes*8-1:0]       w_data_o,
  output logic [BusBytes-1:0]         w_strb_o,
  output logic                        w_last_o,
  input  logic                        b_valid_i,
  output logic                        b_ready_o,
  input  logic [1:0]                  b_resp_i,

  // Read ports of the unified buffer and the accumulators (data the next cycle).
  output logic                        ub_rd_req_o,
  output logic [UbAddrWidth-1:0]      ub_rd_addr_o,
  input  logic                        ub_rd_gnt_i,
  input  logic [Dim*16-1:0]           ub_rd_data_i,
  output logic                        acc_rd_req_o,
  output logic [AccAddrWidth-1:0]     acc_rd_addr_o,
  input  logic                        acc_rd_gnt_i,
  input  logic [Dim*32-1:0]           acc_rd_data_i,

  output logic                        bus_error_o,
  output logic [23:0]                 pc_o,
  output logic                        axi_quiet_o,  // no AXI burst in flight
  output logic                        idle_o
);

  localparam int unsigned DimLog2    = $clog2(Dim);
  localparam int unsigned StageDepth = 4;
  localparam logic [3:0]  StageSlots = 4'(StageDepth);

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

  logic from_acc, int8_rows;
  assign from_acc  = head.flags[tpu_isa_pkg::WriteHostFlagAcc];
  assign int8_rows = Int8 && head.flags[tpu_isa_pkg::WriteHostFlagI8];

  // ---------------------------------------------------------------------------
  // Commands to the write engine, one per iteration, and their completions.
  // ---------------------------------------------------------------------------
  logic        op_start, cmd_valid, cmd_ready, cmd_done, writer_idle;
  logic [31:0] cmd_addr, cmd_stride;
  logic [15:0] cmd_rows, last_iter;
  logic [3:0]  cmd_row_log2;
  logic [15:0] done_iter_d, done_iter_q;

  tpu_dma_iterations u_iterations (
    .clk_i, .rst_ni, .abort_i,
    .op_valid_i    (head_valid),
    .done_i        (pop),
    .host_addr_i   (head.host_addr),
    .host_step_i   (head.host_step),
    .count_i       (head.count),
    .stride_i      (head.host_stride),
    .rows_i        (head.rows),
    .row_log2_i    (from_acc ? 4'(DimLog2 + 2) : int8_rows ? 4'(DimLog2) : 4'(DimLog2 + 1)),
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
  // Rows from on-chip memory into the staging FIFO.
  // ---------------------------------------------------------------------------
  logic        reads_done_d, reads_done_q, read_inflight_d, read_inflight_q;
  logic [15:0] rd_row_d, rd_row_q, rd_iter_d, rd_iter_q, rd_base_d, rd_base_q, rd_addr;
  logic        read_req, read_gnt;
  logic        stage_in_ready, stage_valid, stage_ready;
  logic [Dim*32-1:0] stage_in_data, stage_data;
  logic [$clog2(StageDepth+1)-1:0] stage_count;

  // Read only when the row will have a place in the staging FIFO.
  assign rd_addr       = rd_base_q + rd_row_q;
  assign read_req      = head_valid && !op_start && !reads_done_q && !abort_i &&
                         ({1'b0, stage_count} + {3'b0, read_inflight_q}) < StageSlots;
  assign ub_rd_req_o   = read_req && !from_acc;
  assign acc_rd_req_o  = read_req && from_acc;
  assign ub_rd_addr_o  = rd_addr[UbAddrWidth-1:0];
  assign acc_rd_addr_o = rd_addr[AccAddrWidth-1:0];
  assign read_gnt      = from_acc ? acc_rd_gnt_i && acc_rd_req_o : ub_rd_gnt_i && ub_rd_req_o;
  // An int8 row leaves as the low byte of each lane, Dim bytes.
  logic [Dim*8-1:0] int8_bytes;
  always_comb begin
    for (int unsigned l = 0; l < Dim; l++) int8_bytes[l*8 +: 8] = ub_rd_data_i[l*16 +: 8];
  end
  assign stage_in_data = from_acc  ? acc_rd_data_i :
                         int8_rows ? {{Dim*24{1'b0}}, int8_bytes} : {{Dim*16{1'b0}}, ub_rd_data_i};

  always_comb begin
    done_iter_d     = done_iter_q;
    reads_done_d    = reads_done_q;
    rd_row_d        = rd_row_q;
    rd_iter_d       = rd_iter_q;
    rd_base_d       = rd_base_q;
    read_inflight_d = read_gnt;
    pop             = 1'b0;

    if (op_start) begin
      done_iter_d  = '0;
      reads_done_d = 1'b0;
      rd_row_d     = '0;
      rd_iter_d    = '0;
      rd_base_d    = head.addr_a;
    end else begin
      if (read_gnt) begin
        rd_row_d = rd_row_q + 1'b1;
        if (rd_row_q == cmd_rows - 1'b1) begin
          rd_row_d     = '0;
          rd_iter_d    = rd_iter_q + 1'b1;
          rd_base_d    = rd_base_q + head.step_a;
          reads_done_d = rd_iter_q == last_iter;
        end
      end
      if (cmd_done) begin
        done_iter_d = done_iter_q + 1'b1;
        pop         = done_iter_q == last_iter;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      done_iter_q     <= '0;
      reads_done_q    <= 1'b0;
      read_inflight_q <= 1'b0;
      rd_row_q        <= '0;
      rd_iter_q       <= '0;
      rd_base_q       <= '0;
    end else begin
      done_iter_q     <= done_iter_d;
      reads_done_q    <= reads_done_d;
      read_inflight_q <= read_inflight_d;
      rd_row_q        <= rd_row_d;
      rd_iter_q       <= rd_iter_d;
      rd_base_q       <= rd_base_d;
    end
  end

  tpu_fifo #(.Width(Dim * 32), .Depth(StageDepth)) u_stage (
    .clk_i, .rst_ni,
    .in_valid_i (read_inflight_q),
    .in_ready_o (stage_in_ready),
    .in_data_i  (stage_in_data),
    .out_valid_o(stage_valid),
    .out_ready_i(stage_ready),
    .out_data_o (stage_data),
    .count_o    (stage_count)
  );

  tpu_axi_writer #(
    .BusBytes(BusBytes), .MaxRowBytes(Dim * 4), .MaxBurst(64), .MaxOutstanding(8),
    .RowsWidth(16)
  ) u_writer (
    .clk_i, .rst_ni, .abort_i,
    .cmd_valid_i         (cmd_valid),
    .cmd_ready_o         (cmd_ready),
    .cmd_addr_i          (cmd_addr),
    .cmd_stride_i        (cmd_stride),
    .cmd_rows_i          (cmd_rows),
    .cmd_row_bytes_log2_i(cmd_row_log2),
    .row_valid_i         (stage_valid),
    .row_ready_o         (stage_ready),
    .row_data_i          (stage_data),
    .aw_valid_o, .aw_ready_i, .aw_addr_o, .aw_len_o, .aw_size_o,
    .w_valid_o, .w_ready_i, .w_data_o, .w_strb_o, .w_last_o,
    .b_valid_i, .b_ready_o, .b_resp_i,
    .cmd_done_o          (cmd_done),
    .bus_error_o,
    .idle_o              (writer_idle)
  );

  assign pc_o        = head.pc;
  assign axi_quiet_o = writer_idle;
  assign idle_o      = queue_empty && writer_idle;

  `TPU_ASSERT(a_row_in_memory,
              !read_req || ({1'b0, rd_addr} < (from_acc ? 17'(AccDepth) : 17'(UbDepth))),
              "row address beyond the memory")
  `TPU_ASSERT(a_stage_has_room, !read_inflight_q || stage_in_ready,
              "a row read from memory found no room in the staging FIFO")

endmodule
