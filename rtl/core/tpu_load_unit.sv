// READ_HOST: copies rows from host memory into the unified buffer (bf16 rows of
// Dim lanes, or int8 rows of Dim bytes widened to lanes) or the accumulators
// (fp32 or int32 rows of Dim lanes). Operations run one
// at a time, in order; within one, the read engine fetches iteration i + 1
// while the rows of iteration i are still being written. An operation is
// complete, and leaves the queue, when its last row is in on-chip memory.
`include "tpu_assert.svh"

module tpu_load_unit #(
  parameter int unsigned Dim        = 16,
  parameter int unsigned BusBytes   = 16,
  parameter int unsigned UbDepth    = 1024,
  parameter int unsigned AccDepth   = 1024,
  parameter int unsigned QueueDepth = 4,
  parameter int unsigned BufBeats   = 32,
  parameter bit          Int8       = 1'b0,
  localparam int unsigned UbAddrWidth  = $clog2(UbDepth),
  localparam int unsigned AccAddrWidth = $clog2(AccDepth),
  localparam int unsigned QOffWidth    = (QueueDepth > 1) ? $clog2(QueueDepth) : 1
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic                        abort_i,

  // Operations from the issue stage, and the queue's view for hazard checks.
  input  logic                        push_i,
  input  tpu_core_pkg::op_t           push_op_i,
  input  logic [tpu_core_pkg::FootprintBits-1:0] push_fp_i,
  output logic                        full_o,
  output logic [QueueDepth-1:0]       fp_valid_o,
  output logic [QueueDepth*tpu_core_pkg::FootprintBits-1:0] fps_o,

  // AXI4 read client.
  output logic                        ar_valid_o,
  input  logic                        ar_ready_i,
  output logic [31:0]                 ar_addr_o,
  output logic [7:0]                  ar_len_o,
  output logic [2:0]                  ar_size_o,
  input  logic                        r_valid_i,
  output logic                        r_ready_o,
  input  logic [BusBytes*8-1:0]       r_data_i,
  input  logic [1:0]                  r_resp_i,

  // Write ports of the unified buffer and the accumulators.
  output logic                        ub_wr_req_o,
  output logic [UbAddrWidth-1:0]      ub_wr_addr_o,
  output logic [Dim*16-1:0]           ub_wr_data_o,
  input  logic                        ub_wr_gnt_i,
  output logic                        acc_wr_req_o,
  output logic [AccAddrWidth-1:0]     acc_wr_addr_o,
  output logic [Dim*32-1:0]           acc_wr_data_o,
  input  logic                        acc_wr_gnt_i,

  output logic                        bus_error_o,
  output logic [23:0]                 pc_o,      // the operation at the head
  output logic                        axi_quiet_o,  // no AXI burst in flight
  output logic                        idle_o
);

  localparam int unsigned DimLog2 = $clog2(Dim);

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
  // Commands to the read engine: one per iteration.
  // ---------------------------------------------------------------------------
  logic        to_acc, int8_rows;
  logic        op_start, cmd_valid, cmd_ready;
  logic [31:0] cmd_addr, cmd_stride;
  logic [15:0] cmd_rows, last_iter;
  logic [3:0]  cmd_row_log2;

  assign to_acc    = head.flags[tpu_isa_pkg::ReadHostFlagAcc];
  assign int8_rows = Int8 && head.flags[tpu_isa_pkg::ReadHostFlagI8];

  tpu_dma_iterations u_iterations (
    .clk_i, .rst_ni, .abort_i,
    .op_valid_i    (head_valid),
    .done_i        (pop),
    .host_addr_i   (head.host_addr),
    .host_step_i   (head.host_step),
    .count_i       (head.count),
    .stride_i      (head.host_stride),
    .rows_i        (head.rows),
    .row_log2_i    (to_acc ? 4'(DimLog2 + 2) : int8_rows ? 4'(DimLog2) : 4'(DimLog2 + 1)),
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
  // Rows from the read engine into on-chip memory.
  // ---------------------------------------------------------------------------
  logic                 row_valid, row_ready, unused_row_last, unused_row_error, reader_idle;
  logic [Dim*32-1:0]    row_data;
  logic [15:0]          sink_row_d, sink_row_q, sink_iter_d, sink_iter_q;
  logic [15:0]          sink_base_d, sink_base_q;
  logic [15:0]          sink_addr;

  tpu_axi_reader #(
    .BusBytes(BusBytes), .MaxRowBytes(Dim * 4), .BufBeats(BufBeats), .RowsWidth(16)
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

  tpu_int8_widen #(.Lanes(Dim)) u_widen (
    .int8_i (int8_rows),
    .row_i  (row_data[Dim*16-1:0]),
    .lanes_o(ub_wr_data_o)
  );

  assign sink_addr     = sink_base_q + sink_row_q;
  assign ub_wr_req_o   = row_valid && !to_acc && head_valid;
  assign acc_wr_req_o  = row_valid && to_acc && head_valid;
  assign ub_wr_addr_o  = sink_addr[UbAddrWidth-1:0];
  assign acc_wr_addr_o = sink_addr[AccAddrWidth-1:0];
  assign acc_wr_data_o = row_data;
  assign row_ready     = to_acc ? acc_wr_gnt_i && acc_wr_req_o : ub_wr_gnt_i && ub_wr_req_o;

  always_comb begin
    sink_row_d  = sink_row_q;
    sink_iter_d = sink_iter_q;
    sink_base_d = sink_base_q;
    pop         = 1'b0;
    if (op_start) begin
      sink_row_d  = '0;
      sink_iter_d = '0;
      sink_base_d = head.addr_b;
    end else if (row_ready) begin
      sink_row_d = sink_row_q + 1'b1;
      if (sink_row_q == cmd_rows - 1'b1) begin
        sink_row_d  = '0;
        sink_iter_d = sink_iter_q + 1'b1;
        sink_base_d = sink_base_q + head.step_b;
        pop         = sink_iter_q == last_iter;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      sink_row_q  <= '0;
      sink_iter_q <= '0;
      sink_base_q <= '0;
    end else begin
      sink_row_q  <= sink_row_d;
      sink_iter_q <= sink_iter_d;
      sink_base_q <= sink_base_d;
    end
  end

  assign pc_o   = head.pc;
  assign idle_o = queue_empty && reader_idle;

  // The issue stage checked the whole operation against the memory's size.
  `TPU_ASSERT(a_row_in_memory,
              !(row_valid && head_valid) ||
              ({1'b0, sink_addr} < (to_acc ? 17'(AccDepth) : 17'(UbDepth))),
              "row address beyond the memory")

endmodule
