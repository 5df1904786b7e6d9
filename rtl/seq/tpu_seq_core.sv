// The sequential core inside tpu_top (with Sequential): the instruction set
// of the array core, one multiply-add at a time, for FPGAs too small for the
// array (the iCE40UP5K of the iCEBreaker, docs/fpga.md). The same registers,
// programs and results bit for bit; what differs is time. The array core
// overlaps its units and streams rows through Dim x Dim multiply-add cells;
// this core fetches, checks and runs one instruction at a time and one lane at
// a time (tpu_seq_ctrl), with one multiplier, one adder and a sequential
// activation function (tpu_seq_act), over single-beat 32-bit bus transfers
// (tpu_seq_bus). HW_CORE.SEQUENTIAL tells software which core it talks to.
//
// Dim is the array size the instruction set sees: the length of a row, the
// size of a weight tile. The counters keep their meaning where it carries
// over: ARRAY_ACTIVE counts MATMUL rows completed, NON_MATRIX the other cycles,
// and the four stall counters stay zero.
module tpu_seq_core #(
  parameter int unsigned Dim         = 4,      // row length and tile size, a power of two 1..16
  parameter int unsigned UbDepth     = 256,    // unified-buffer rows, power of two
  parameter int unsigned AccDepth    = 256,    // accumulator rows, power of two
  parameter int unsigned WeightTiles = 2,      // weight tiles READ_WEIGHTS may load ahead, 2..16
  localparam int unsigned IdWidth    = 2,
  localparam int unsigned NumCounters = tpu_regs_pkg::CounterCount
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,
  input  tpu_shell_pkg::core_ctrl_t   ctrl_i,
  output tpu_shell_pkg::core_status_t status_o,
  // This cycle's counter increments of 0 or 1 (the cycle's category, an issued instruction),
  // and a completed multiply-add.
  output logic [NumCounters-1:0] counter_event_o,
  output logic [17:0]            useful_macs_o,

  // AXI4 master: host memory, one 32-bit beat a transaction (tpu_top drives the constant
  // attributes).
  output logic [IdWidth-1:0]     m_axi_arid,
  output logic [31:0]            m_axi_araddr,
  output logic [7:0]             m_axi_arlen,
  output logic [2:0]             m_axi_arsize,
  output logic                   m_axi_arvalid,
  input  logic                   m_axi_arready,
  input  logic [IdWidth-1:0]     m_axi_rid,
  input  logic [31:0]            m_axi_rdata,
  input  logic [1:0]             m_axi_rresp,
  input  logic                   m_axi_rlast,
  input  logic                   m_axi_rvalid,
  output logic                   m_axi_rready,
  output logic [31:0]            m_axi_awaddr,
  output logic [7:0]             m_axi_awlen,
  output logic [2:0]             m_axi_awsize,
  output logic                   m_axi_awvalid,
  input  logic                   m_axi_awready,
  output logic [31:0]            m_axi_wdata,
  output logic [3:0]             m_axi_wstrb,
  output logic                   m_axi_wlast,
  output logic                   m_axi_wvalid,
  input  logic                   m_axi_wready,
  input  logic [IdWidth-1:0]     m_axi_bid,
  input  logic [1:0]             m_axi_bresp,
  input  logic                   m_axi_bvalid,
  output logic                   m_axi_bready
);

  localparam int unsigned DimLog2      = $clog2(Dim);
  localparam int unsigned UbAddrWidth  = $clog2(UbDepth) + DimLog2;
  localparam int unsigned AccAddrWidth = $clog2(AccDepth) + DimLog2;
  localparam int unsigned WgtAddrWidth = $clog2(WeightTiles + 1) + 2 * DimLog2;

  logic core_rst_n, issued, row_done, mac;

  // The sequential core has no inter-chip links: the pod registers read 0 and go unused.
  logic unused_pod;
  assign unused_pod = ^{ctrl_i.pod_id, ctrl_i.pod_size, ctrl_i.link_timeout};

  // The bus master stays out of the core reset: AXI4 cannot abandon a transaction.
  tpu_reset_copy u_core_reset (
    .clk_i, .rst_ni,
    .reset_i(ctrl_i.reset_req),
    .rst_no (core_rst_n)
  );

  // ---------------------------------------------------------------------------
  // Host memory
  // ---------------------------------------------------------------------------
  logic        bus_req_valid, bus_req_ready, bus_req_write, bus_rsp_valid, bus_rsp_error;
  logic [31:0] bus_req_addr, bus_req_wdata, bus_rsp_rdata;
  logic [3:0]  bus_req_wstrb;

  tpu_seq_bus u_bus (
    .clk_i, .rst_ni,
    .req_valid_i (bus_req_valid),
    .req_ready_o (bus_req_ready),
    .req_write_i (bus_req_write),
    .req_addr_i  (bus_req_addr),
    .req_wdata_i (bus_req_wdata),
    .req_wstrb_i (bus_req_wstrb),
    .rsp_valid_o (bus_rsp_valid),
    .rsp_rdata_o (bus_rsp_rdata),
    .rsp_error_o (bus_rsp_error),
    .m_axi_arid, .m_axi_araddr, .m_axi_arlen, .m_axi_arsize, .m_axi_arvalid, .m_axi_arready,
    .m_axi_rid, .m_axi_rdata, .m_axi_rresp, .m_axi_rlast, .m_axi_rvalid, .m_axi_rready,
    .m_axi_awaddr, .m_axi_awlen, .m_axi_awsize, .m_axi_awvalid, .m_axi_awready,
    .m_axi_wdata, .m_axi_wstrb, .m_axi_wlast, .m_axi_wvalid, .m_axi_wready,
    .m_axi_bid, .m_axi_bresp, .m_axi_bvalid, .m_axi_bready
  );

  // ---------------------------------------------------------------------------
  // On-chip memories, one lane per word
  // ---------------------------------------------------------------------------
  logic                    ub_wr_en, ub_rd_en, acc_wr_en, acc_rd_en, wgt_wr_en, wgt_rd_en;
  logic [UbAddrWidth-1:0]  ub_addr;
  logic [AccAddrWidth-1:0] acc_addr;
  logic [WgtAddrWidth-1:0] wgt_addr;
  logic [15:0]             ub_wr_data, ub_rd_data, wgt_wr_data, wgt_rd_data;
  logic [31:0]             acc_wr_data, acc_rd_data;

  tpu_seq_ram #(.Width(16), .Depth(UbDepth * Dim)) u_ub (
    .clk_i,
    .wr_en_i(ub_wr_en), .rd_en_i(ub_rd_en), .addr_i(ub_addr),
    .wr_data_i(ub_wr_data), .rd_data_o(ub_rd_data)
  );
  tpu_seq_ram #(.Width(32), .Depth(AccDepth * Dim)) u_acc (
    .clk_i,
    .wr_en_i(acc_wr_en), .rd_en_i(acc_rd_en), .addr_i(acc_addr),
    .wr_data_i(acc_wr_data), .rd_data_o(acc_rd_data)
  );
  tpu_seq_ram #(.Width(16), .Depth(2 ** WgtAddrWidth)) u_weights (
    .clk_i,
    .wr_en_i(wgt_wr_en), .rd_en_i(wgt_rd_en), .addr_i(wgt_addr),
    .wr_data_i(wgt_wr_data), .rd_data_o(wgt_rd_data)
  );

  // ---------------------------------------------------------------------------
  // The sequencer
  // ---------------------------------------------------------------------------
  tpu_seq_ctrl #(
    .Dim(Dim), .UbDepth(UbDepth), .AccDepth(AccDepth), .WeightTiles(WeightTiles)
  ) u_ctrl (
    .clk_i, .rst_ni(core_rst_n),
    .start_i        (ctrl_i.start),
    .prog_addr_i    (ctrl_i.prog_addr),
    .prog_count_i   (ctrl_i.prog_count),
    .busy_o         (status_o.busy),
    .done_o         (status_o.done),
    .error_o        (status_o.error),
    .error_code_o   (status_o.error_code),
    .error_pc_o     (status_o.error_pc),
    .pc_o           (status_o.pc),
    .issued_o       (issued),
    .row_done_o     (row_done),
    .mac_o          (mac),
    .bus_req_valid_o(bus_req_valid),
    .bus_req_ready_i(bus_req_ready),
    .bus_req_write_o(bus_req_write),
    .bus_req_addr_o (bus_req_addr),
    .bus_req_wdata_o(bus_req_wdata),
    .bus_req_wstrb_o(bus_req_wstrb),
    .bus_rsp_valid_i(bus_rsp_valid),
    .bus_rsp_rdata_i(bus_rsp_rdata),
    .bus_rsp_error_i(bus_rsp_error),
    .ub_wr_en_o     (ub_wr_en),
    .ub_wr_data_o   (ub_wr_data),
    .ub_rd_en_o     (ub_rd_en),
    .ub_addr_o      (ub_addr),
    .ub_rd_data_i   (ub_rd_data),
    .acc_wr_en_o    (acc_wr_en),
    .acc_wr_data_o  (acc_wr_data),
    .acc_rd_en_o    (acc_rd_en),
    .acc_addr_o     (acc_addr),
    .acc_rd_data_i  (acc_rd_data),
    .wgt_wr_en_o    (wgt_wr_en),
    .wgt_wr_data_o  (wgt_wr_data),
    .wgt_rd_en_o    (wgt_rd_en),
    .wgt_addr_o     (wgt_addr),
    .wgt_rd_data_i  (wgt_rd_data)
  );

  // ---------------------------------------------------------------------------
  // Performance counters (docs/core.md): a completed MATMUL row is the
  // sequential core's ARRAY_ACTIVE cycle; every other cycle is NON_MATRIX. A
  // multiply-add takes dozens of cycles, so USEFUL_MACS counts each as it
  // completes: its total is the array core's, k_valid * n_valid a row.
  // ---------------------------------------------------------------------------
  always_comb begin
    counter_event_o = '0;
    counter_event_o[tpu_regs_pkg::CntArrayActiveIndex]  = row_done;
    counter_event_o[tpu_regs_pkg::CntNonMatrixIndex]    = !row_done;
    counter_event_o[tpu_regs_pkg::CntInstructionsIndex] = issued;
    useful_macs_o = 18'(mac);
  end

endmodule
