// The sequential core: the instruction set of tpu_top, one multiply-add at a
// time, for FPGAs too small for the array core (the iCE40UP5K of the
// iCEBreaker, docs/fpga.md). The same ports, registers (tpu_regs), programs
// and results bit for bit; what differs is time. The array core overlaps its
// units and streams rows through Dim x Dim multiply-add cells; this core
// fetches, checks and runs one instruction at a time and one lane at a time
// (tpu_seq_ctrl), with one multiplier, one adder and a sequential activation
// function (tpu_seq_act), over single-beat 32-bit bus transfers
// (tpu_seq_bus). HW_CORE.SEQUENTIAL tells software which core it talks to.
//
// Dim is the array size the instruction set sees: the length of a row, the
// size of a weight tile. The counters keep their meaning where it carries
// over: ARRAY_ACTIVE counts MATMUL rows completed, NON_MATRIX the other cycles,
// and the four stall counters stay zero.
module tpu_seq_top #(
  parameter int unsigned Dim         = 4,      // row length and tile size, a power of two 1..16
  parameter int unsigned UbDepth     = 256,    // unified-buffer rows, power of two
  parameter int unsigned AccDepth    = 256,    // accumulator rows, power of two
  parameter int unsigned WeightTiles = 2,      // weight tiles READ_WEIGHTS may load ahead, 2..16
  parameter int unsigned CounterWidth = 64,    // bits of each performance counter, 32..64
  localparam int unsigned IdWidth    = 2,
  localparam int unsigned BusBytes   = 4,
  localparam int unsigned BusBits    = BusBytes * 8,
  localparam int unsigned RegAddrWidth = tpu_regs_pkg::RegAddrWidth
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,

  // AXI4-Lite slave: registers.
  input  logic [RegAddrWidth-1:0] s_axil_awaddr,
  input  logic [2:0]              s_axil_awprot,
  input  logic                    s_axil_awvalid,
  output logic                    s_axil_awready,
  input  logic [31:0]             s_axil_wdata,
  input  logic [3:0]              s_axil_wstrb,
  input  logic                    s_axil_wvalid,
  output logic                    s_axil_wready,
  output logic [1:0]              s_axil_bresp,
  output logic                    s_axil_bvalid,
  input  logic                    s_axil_bready,
  input  logic [RegAddrWidth-1:0] s_axil_araddr,
  input  logic [2:0]              s_axil_arprot,
  input  logic                    s_axil_arvalid,
  output logic                    s_axil_arready,
  output logic [31:0]             s_axil_rdata,
  output logic [1:0]              s_axil_rresp,
  output logic                    s_axil_rvalid,
  input  logic                    s_axil_rready,

  // AXI4 master: host memory.
  output logic [IdWidth-1:0]      m_axi_arid,
  output logic [31:0]             m_axi_araddr,
  output logic [7:0]              m_axi_arlen,
  output logic [2:0]              m_axi_arsize,
  output logic [1:0]              m_axi_arburst,
  output logic [3:0]              m_axi_arcache,
  output logic [2:0]              m_axi_arprot,
  output logic                    m_axi_arvalid,
  input  logic                    m_axi_arready,
  input  logic [IdWidth-1:0]      m_axi_rid,
  input  logic [BusBits-1:0]      m_axi_rdata,
  input  logic [1:0]              m_axi_rresp,
  input  logic                    m_axi_rlast,
  input  logic                    m_axi_rvalid,
  output logic                    m_axi_rready,
  output logic [IdWidth-1:0]      m_axi_awid,
  output logic [31:0]             m_axi_awaddr,
  output logic [7:0]              m_axi_awlen,
  output logic [2:0]              m_axi_awsize,
  output logic [1:0]              m_axi_awburst,
  output logic [3:0]              m_axi_awcache,
  output logic [2:0]              m_axi_awprot,
  output logic                    m_axi_awvalid,
  input  logic                    m_axi_awready,
  output logic [BusBits-1:0]      m_axi_wdata,
  output logic [BusBytes-1:0]     m_axi_wstrb,
  output logic                    m_axi_wlast,
  output logic                    m_axi_wvalid,
  input  logic                    m_axi_wready,
  input  logic [IdWidth-1:0]      m_axi_bid,
  input  logic [1:0]              m_axi_bresp,
  input  logic                    m_axi_bvalid,
  output logic                    m_axi_bready,

  output logic                    irq_o
);

  // ---------------------------------------------------------------------------
  // Parameter checks
  // ---------------------------------------------------------------------------
  if (Dim < 1 || Dim > 16 || (Dim & (Dim - 1)) != 0) begin : g_bad_dim
    $error("tpu_seq_top: Dim must be a power of two in 1..16");
  end
  if (UbDepth < 4 || UbDepth > 65536 || (UbDepth & (UbDepth - 1)) != 0) begin : g_bad_ub
    $error("tpu_seq_top: UbDepth must be a power of two in 4..65536");
  end
  if (AccDepth < 4 || AccDepth > 65536 || (AccDepth & (AccDepth - 1)) != 0) begin : g_bad_acc
    $error("tpu_seq_top: AccDepth must be a power of two in 4..65536");
  end
  if (WeightTiles < 2 || WeightTiles > 16) begin : g_bad_tiles
    $error("tpu_seq_top: WeightTiles must be in 2..16");
  end

  // Illegal values have raised an error above; the internals are built from
  // legal stand-ins so that elaboration reports that error, not a follow-on.
  localparam int unsigned DimL =
      (Dim >= 1 && Dim <= 16 && (Dim & (Dim - 1)) == 0) ? Dim : 1;
  localparam int unsigned UbDepthL =
      (UbDepth >= 4 && UbDepth <= 65536 && (UbDepth & (UbDepth - 1)) == 0) ? UbDepth : 4;
  localparam int unsigned AccDepthL =
      (AccDepth >= 4 && AccDepth <= 65536 && (AccDepth & (AccDepth - 1)) == 0) ? AccDepth : 4;
  localparam int unsigned WeightTilesL = (WeightTiles >= 2 && WeightTiles <= 16) ? WeightTiles : 2;

  localparam int unsigned DimLog2      = $clog2(DimL);
  localparam int unsigned UbAddrWidth  = $clog2(UbDepthL) + DimLog2;
  localparam int unsigned AccAddrWidth = $clog2(AccDepthL) + DimLog2;
  localparam int unsigned WgtAddrWidth = $clog2(WeightTilesL + 1) + 2 * DimLog2;
  localparam int unsigned NumCounters  = tpu_regs_pkg::CounterCount;

  // ---------------------------------------------------------------------------
  // Registers, and the core reset that START and RESET pulse
  // ---------------------------------------------------------------------------
  logic                      core_reset_req, core_rst_n, start;
  logic [31:0]               prog_addr;
  logic [23:0]               prog_count, pc, error_pc;
  logic                      busy, done, error, issued, row_done, mac;
  logic [7:0]                error_code;
  logic [NumCounters*18-1:0] counter_add;
  logic                      unused_axil_prot;

  assign unused_axil_prot = ^{s_axil_awprot, s_axil_arprot};

  tpu_regs #(
    .Dim(DimL), .MulStages(0), .AddStages(0), .ActLanes(1), .UbDepth(UbDepthL),
    .AccDepth(AccDepthL), .BusBytes(BusBytes), .WeightTiles(WeightTilesL), .Sequential(1'b1),
    // Counters in block RAM: in flip-flops, with their adders, they crowd the iCE40 UP5K.
    .CounterWidth(CounterWidth), .CounterRam(1'b1), .CounterAddWidth(1)
  ) u_regs (
    .clk_i, .rst_ni,
    .s_awaddr_i  (s_axil_awaddr),
    .s_awvalid_i (s_axil_awvalid),
    .s_awready_o (s_axil_awready),
    .s_wdata_i   (s_axil_wdata),
    .s_wstrb_i   (s_axil_wstrb),
    .s_wvalid_i  (s_axil_wvalid),
    .s_wready_o  (s_axil_wready),
    .s_bresp_o   (s_axil_bresp),
    .s_bvalid_o  (s_axil_bvalid),
    .s_bready_i  (s_axil_bready),
    .s_araddr_i  (s_axil_araddr),
    .s_arvalid_i (s_axil_arvalid),
    .s_arready_o (s_axil_arready),
    .s_rdata_o   (s_axil_rdata),
    .s_rresp_o   (s_axil_rresp),
    .s_rvalid_o  (s_axil_rvalid),
    .s_rready_i  (s_axil_rready),
    .core_reset_req_o(core_reset_req),
    .start_o     (start),
    .prog_addr_o (prog_addr),
    .prog_count_o(prog_count),
    .irq_o,
    .busy_i      (busy),
    .done_i      (done),
    .error_i     (error),
    .error_code_i(error_code),
    .error_pc_i  (error_pc),
    .pc_i        (pc),
    .counter_add_i(counter_add)
  );

  // The register block and the bus master stay out of the core reset.
  tpu_reset_copy u_core_reset (
    .clk_i, .rst_ni,
    .reset_i(core_reset_req),
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
    .m_axi_arid, .m_axi_araddr, .m_axi_arlen, .m_axi_arsize, .m_axi_arburst, .m_axi_arcache,
    .m_axi_arprot, .m_axi_arvalid, .m_axi_arready,
    .m_axi_rid, .m_axi_rdata, .m_axi_rresp, .m_axi_rlast, .m_axi_rvalid, .m_axi_rready,
    .m_axi_awid, .m_axi_awaddr, .m_axi_awlen, .m_axi_awsize, .m_axi_awburst, .m_axi_awcache,
    .m_axi_awprot, .m_axi_awvalid, .m_axi_awready,
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

  tpu_seq_ram #(.Width(16), .Depth(UbDepthL * DimL)) u_ub (
    .clk_i,
    .wr_en_i(ub_wr_en), .rd_en_i(ub_rd_en), .addr_i(ub_addr),
    .wr_data_i(ub_wr_data), .rd_data_o(ub_rd_data)
  );
  tpu_seq_ram #(.Width(32), .Depth(AccDepthL * DimL)) u_acc (
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
    .Dim(DimL), .UbDepth(UbDepthL), .AccDepth(AccDepthL), .WeightTiles(WeightTilesL)
  ) u_ctrl (
    .clk_i, .rst_ni(core_rst_n),
    .start_i        (start),
    .prog_addr_i    (prog_addr),
    .prog_count_i   (prog_count),
    .busy_o         (busy),
    .done_o         (done),
    .error_o        (error),
    .error_code_o   (error_code),
    .error_pc_o     (error_pc),
    .pc_o           (pc),
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
  // sequential core's ARRAY_ACTIVE cycle; every other cycle is NON_MATRIX.
  // ---------------------------------------------------------------------------
  always_comb begin
    counter_add = '0;
    counter_add[tpu_regs_pkg::CntCyclesIndex*18 +: 18] = 18'd1;
    // A multiply-add takes dozens of cycles, so USEFUL_MACS counts each as it
    // completes: its total is the array core's, k_valid * n_valid a row.
    counter_add[tpu_regs_pkg::CntUsefulMacsIndex*18 +: 18] = 18'(mac);
    if (row_done) begin
      counter_add[tpu_regs_pkg::CntArrayActiveIndex*18 +: 18] = 18'd1;
    end else begin
      counter_add[tpu_regs_pkg::CntNonMatrixIndex*18 +: 18] = 18'd1;
    end
    counter_add[tpu_regs_pkg::CntDmaReadBeatsIndex*18 +: 18]  = 18'(m_axi_rvalid && m_axi_rready);
    counter_add[tpu_regs_pkg::CntDmaWriteBeatsIndex*18 +: 18] = 18'(m_axi_wvalid && m_axi_wready);
    counter_add[tpu_regs_pkg::CntInstructionsIndex*18 +: 18]  = 18'(issued);
  end

endmodule
