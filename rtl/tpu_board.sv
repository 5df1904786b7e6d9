// What an FPGA board holds, without its clock and pins: the TPU core, block RAM
// standing in for host memory (tpu_axi_ram), and the UART host link that lets a
// computer read and write the core's registers and that memory
// (tpu_link_bridge, docs/link.md). The board tops in fpga/ add the clock, the
// reset and the pins; the Verilator model of this module is the board the
// `serial` backend's simulation talks to.
module tpu_board #(
  // The core (rtl/tpu_top.sv).
  parameter int unsigned Dim          = 4,
  parameter int unsigned MulStages    = 1,
  parameter int unsigned AddStages    = 2,
  parameter int unsigned UbDepth      = 2048,
  parameter int unsigned AccDepth     = 1024,
  parameter int unsigned WeightTiles  = 2,
  parameter int unsigned BusBytes     = 8,
  parameter int unsigned ActLanes     = 1,
  parameter int unsigned QueueDepth   = 2,
  parameter int unsigned ReadBufBeats = 16,
  // The board.
  parameter int unsigned MemBytes     = 131072,      // board memory, a power of two
  parameter int unsigned ClockHz      = 50_000_000,
  parameter int unsigned Baud         = 1_000_000
) (
  input  logic clk_i,
  input  logic rst_ni,

  input  logic uart_rx_i,
  output logic uart_tx_o,

  output logic irq_o,         // the core's: DONE or ERROR with IRQ_ENABLE
  output logic rx_active_o,   // a character arrived
  output logic tx_active_o    // a character is going out
);

  // The UART's bit period in clock cycles, to the nearest cycle; the rate it
  // gives must be within 2 % of Baud, well inside what a UART tolerates.
  localparam int unsigned ClksPerBit = (ClockHz + Baud / 2) / Baud;
  localparam int unsigned BitRateHz  = ClksPerBit * Baud;
  localparam int unsigned RateError  =
      (BitRateHz > ClockHz) ? BitRateHz - ClockHz : ClockHz - BitRateHz;

  if (ClksPerBit < 4) begin : g_bad_baud
    $error("tpu_board: ClockHz must be at least 4 * Baud");
  end
  if (RateError > ClockHz / 50) begin : g_bad_rate
    $error("tpu_board: Baud is more than 2 percent off at a whole number of cycles per bit");
  end

  localparam int unsigned IdWidth      = 2;
  localparam int unsigned BusBits      = BusBytes * 8;
  localparam int unsigned RegAddrWidth = tpu_regs_pkg::RegAddrWidth;
  localparam int unsigned MemAddrWidth = $clog2(MemBytes);

  // ---------------------------------------------------------------------------
  // The core
  // ---------------------------------------------------------------------------
  logic [RegAddrWidth-1:0] axil_awaddr, axil_araddr;
  logic                    axil_awvalid, axil_awready, axil_wvalid, axil_wready;
  logic [31:0]             axil_wdata, axil_rdata;
  logic [3:0]              axil_wstrb;
  logic [1:0]              axil_bresp, axil_rresp;
  logic                    axil_bvalid, axil_bready, axil_arvalid, axil_arready;
  logic                    axil_rvalid, axil_rready;

  logic [IdWidth-1:0]  arid, rid, awid, bid;
  logic [31:0]         araddr, awaddr;
  logic [7:0]          arlen, awlen;
  logic [2:0]          arsize, awsize, arprot, awprot;
  logic [1:0]          arburst, awburst, rresp, bresp;
  logic [3:0]          arcache, awcache;
  logic                arvalid, arready, rlast, rvalid, rready;
  logic                awvalid, awready, wlast, wvalid, wready, bvalid, bready;
  logic [BusBits-1:0]  rdata, wdata;
  logic [BusBytes-1:0] wstrb;
  logic                unused_axi_attributes;

  assign unused_axi_attributes = ^{arcache, arprot, awcache, awprot};

  tpu_top #(
    .Dim(Dim), .MulStages(MulStages), .AddStages(AddStages), .UbDepth(UbDepth),
    .AccDepth(AccDepth), .WeightTiles(WeightTiles), .BusBytes(BusBytes), .ActLanes(ActLanes),
    .QueueDepth(QueueDepth), .ReadBufBeats(ReadBufBeats)
  ) u_core (
    .clk_i, .rst_ni,
    .s_axil_awaddr (axil_awaddr),
    .s_axil_awprot (3'b000),
    .s_axil_awvalid(axil_awvalid),
    .s_axil_awready(axil_awready),
    .s_axil_wdata  (axil_wdata),
    .s_axil_wstrb  (axil_wstrb),
    .s_axil_wvalid (axil_wvalid),
    .s_axil_wready (axil_wready),
    .s_axil_bresp  (axil_bresp),
    .s_axil_bvalid (axil_bvalid),
    .s_axil_bready (axil_bready),
    .s_axil_araddr (axil_araddr),
    .s_axil_arprot (3'b000),
    .s_axil_arvalid(axil_arvalid),
    .s_axil_arready(axil_arready),
    .s_axil_rdata  (axil_rdata),
    .s_axil_rresp  (axil_rresp),
    .s_axil_rvalid (axil_rvalid),
    .s_axil_rready (axil_rready),
    .m_axi_arid    (arid),
    .m_axi_araddr  (araddr),
    .m_axi_arlen   (arlen),
    .m_axi_arsize  (arsize),
    .m_axi_arburst (arburst),
    .m_axi_arcache (arcache),
    .m_axi_arprot  (arprot),
    .m_axi_arvalid (arvalid),
    .m_axi_arready (arready),
    .m_axi_rid     (rid),
    .m_axi_rdata   (rdata),
    .m_axi_rresp   (rresp),
    .m_axi_rlast   (rlast),
    .m_axi_rvalid  (rvalid),
    .m_axi_rready  (rready),
    .m_axi_awid    (awid),
    .m_axi_awaddr  (awaddr),
    .m_axi_awlen   (awlen),
    .m_axi_awsize  (awsize),
    .m_axi_awburst (awburst),
    .m_axi_awcache (awcache),
    .m_axi_awprot  (awprot),
    .m_axi_awvalid (awvalid),
    .m_axi_awready (awready),
    .m_axi_wdata   (wdata),
    .m_axi_wstrb   (wstrb),
    .m_axi_wlast   (wlast),
    .m_axi_wvalid  (wvalid),
    .m_axi_wready  (wready),
    .m_axi_bid     (bid),
    .m_axi_bresp   (bresp),
    .m_axi_bvalid  (bvalid),
    .m_axi_bready  (bready),
    .irq_o
  );

  // ---------------------------------------------------------------------------
  // Board memory
  // ---------------------------------------------------------------------------
  logic                    mem_req, mem_we, mem_gnt, mem_rvalid;
  logic [MemAddrWidth-1:0] mem_addr;
  logic [7:0]              mem_wdata, mem_rdata;

  tpu_axi_ram #(.BusBytes(BusBytes), .MemBytes(MemBytes), .IdWidth(IdWidth)) u_memory (
    .clk_i, .rst_ni,
    .s_axi_arid   (arid),
    .s_axi_araddr (araddr),
    .s_axi_arlen  (arlen),
    .s_axi_arsize (arsize),
    .s_axi_arburst(arburst),
    .s_axi_arvalid(arvalid),
    .s_axi_arready(arready),
    .s_axi_rid    (rid),
    .s_axi_rdata  (rdata),
    .s_axi_rresp  (rresp),
    .s_axi_rlast  (rlast),
    .s_axi_rvalid (rvalid),
    .s_axi_rready (rready),
    .s_axi_awid   (awid),
    .s_axi_awaddr (awaddr),
    .s_axi_awlen  (awlen),
    .s_axi_awsize (awsize),
    .s_axi_awburst(awburst),
    .s_axi_awvalid(awvalid),
    .s_axi_awready(awready),
    .s_axi_wdata  (wdata),
    .s_axi_wstrb  (wstrb),
    .s_axi_wlast  (wlast),
    .s_axi_wvalid (wvalid),
    .s_axi_wready (wready),
    .s_axi_bid    (bid),
    .s_axi_bresp  (bresp),
    .s_axi_bvalid (bvalid),
    .s_axi_bready (bready),
    .side_req_i   (mem_req),
    .side_we_i    (mem_we),
    .side_addr_i  (mem_addr),
    .side_wdata_i (mem_wdata),
    .side_gnt_o   (mem_gnt),
    .side_rvalid_o(mem_rvalid),
    .side_rdata_o (mem_rdata)
  );

  // ---------------------------------------------------------------------------
  // The host link
  // ---------------------------------------------------------------------------
  logic       rx_valid, rx_error, tx_valid, tx_ready;
  logic [7:0] rx_data, tx_data;

  tpu_uart_rx #(.ClksPerBit(ClksPerBit)) u_uart_rx (
    .clk_i, .rst_ni,
    .rx_i         (uart_rx_i),
    .valid_o      (rx_valid),
    .data_o       (rx_data),
    .frame_error_o(rx_error)
  );

  tpu_uart_tx #(.ClksPerBit(ClksPerBit)) u_uart_tx (
    .clk_i, .rst_ni,
    .valid_i(tx_valid),
    .ready_o(tx_ready),
    .data_i (tx_data),
    .tx_o   (uart_tx_o)
  );

  tpu_link_bridge #(
    .MemBytes(MemBytes), .ClksPerBit(ClksPerBit), .ClockHz(ClockHz), .Baud(Baud)
  ) u_bridge (
    .clk_i, .rst_ni,
    .rx_valid_i    (rx_valid),
    .rx_data_i     (rx_data),
    .rx_error_i    (rx_error),
    .tx_valid_o    (tx_valid),
    .tx_ready_i    (tx_ready),
    .tx_data_o     (tx_data),
    .m_axil_awaddr (axil_awaddr),
    .m_axil_awvalid(axil_awvalid),
    .m_axil_awready(axil_awready),
    .m_axil_wdata  (axil_wdata),
    .m_axil_wstrb  (axil_wstrb),
    .m_axil_wvalid (axil_wvalid),
    .m_axil_wready (axil_wready),
    .m_axil_bresp  (axil_bresp),
    .m_axil_bvalid (axil_bvalid),
    .m_axil_bready (axil_bready),
    .m_axil_araddr (axil_araddr),
    .m_axil_arvalid(axil_arvalid),
    .m_axil_arready(axil_arready),
    .m_axil_rdata  (axil_rdata),
    .m_axil_rresp  (axil_rresp),
    .m_axil_rvalid (axil_rvalid),
    .m_axil_rready (axil_rready),
    .mem_req_o     (mem_req),
    .mem_we_o      (mem_we),
    .mem_addr_o    (mem_addr),
    .mem_wdata_o   (mem_wdata),
    .mem_gnt_i     (mem_gnt),
    .mem_rvalid_i  (mem_rvalid),
    .mem_rdata_i   (mem_rdata)
  );

  assign rx_active_o = rx_valid;
  assign tx_active_o = !tx_ready;

endmodule
