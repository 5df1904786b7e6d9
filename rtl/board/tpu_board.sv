// What an FPGA board holds, without its clock and pins: the TPU core (tpu_top:
// the array core, or with Sequential the sequential core), block RAM
// standing in for host memory (tpu_axi_ram), and the UART host link that lets a
// computer read and write the core's registers and that memory
// (tpu_link_bridge, docs/link.md). The board tops in fpga/ add the clock, the
// reset and the pins; the Verilator model of this module is the board the
// `serial` backend's simulation talks to.
module tpu_board #(
  // The core (rtl/top/tpu_top.sv; the sequential core takes Dim, UbDepth, AccDepth,
  // WeightTiles and CounterWidth and needs BusBytes = 4).
  parameter int unsigned Sequential   = 0,     // 1: the sequential core
  parameter int unsigned CounterWidth = 64,
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
  parameter int unsigned Int8         = 0,     // 1: the int8 datapath (array, Dim >= 4)
  parameter int unsigned Float        = 1,     // 0: without the float one (int8 only)
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
  if (Sequential > 1) begin : g_bad_sequential
    $error("tpu_board: Sequential must be 0 (the array core) or 1 (the sequential core)");
  end

  localparam int unsigned IdWidth      = 2;
  localparam int unsigned BusBits      = BusBytes * 8;
  localparam int unsigned RegAddrWidth = tpu_regs_pkg::RegAddrWidth;
  localparam int unsigned MemAddrWidth = $clog2(MemBytes);

  // ---------------------------------------------------------------------------
  // The core
  // ---------------------------------------------------------------------------
  logic [RegAddrWidth-1:0] s_axil_awaddr, s_axil_araddr;
  logic                    s_axil_awvalid, s_axil_awready, s_axil_wvalid, s_axil_wready;
  logic [31:0]             s_axil_wdata, s_axil_rdata;
  logic [3:0]              s_axil_wstrb;
  logic [1:0]              s_axil_bresp, s_axil_rresp;
  logic                    s_axil_bvalid, s_axil_bready, s_axil_arvalid, s_axil_arready;
  logic                    s_axil_rvalid, s_axil_rready;

  logic [IdWidth-1:0]  m_axi_arid, m_axi_rid, m_axi_awid, m_axi_bid;
  logic [31:0]         m_axi_araddr, m_axi_awaddr;
  logic [7:0]          m_axi_arlen, m_axi_awlen;
  logic [2:0]          m_axi_arsize, m_axi_awsize, m_axi_arprot, m_axi_awprot;
  logic [1:0]          m_axi_arburst, m_axi_awburst, m_axi_rresp, m_axi_bresp;
  logic [3:0]          m_axi_arcache, m_axi_awcache;
  logic                m_axi_arvalid, m_axi_arready, m_axi_rlast, m_axi_rvalid, m_axi_rready;
  logic                m_axi_awvalid, m_axi_awready, m_axi_wlast, m_axi_wvalid, m_axi_wready;
  logic                m_axi_bvalid, m_axi_bready;
  logic [BusBits-1:0]  m_axi_rdata, m_axi_wdata;
  logic [BusBytes-1:0] m_axi_wstrb;
  logic                unused_axi_attributes;

  assign unused_axi_attributes = ^{m_axi_arcache, m_axi_arprot, m_axi_awcache, m_axi_awprot};

  logic        unused_link_tx_valid, unused_link_tx_head, unused_link_rx_credit;
  logic [31:0] unused_link_tx_data;

  tpu_top #(
    .Sequential(Sequential == 1), .CounterWidth(CounterWidth), .Dim(Dim), .MulStages(MulStages),
    .AddStages(AddStages), .UbDepth(UbDepth), .AccDepth(AccDepth), .WeightTiles(WeightTiles),
    .BusBytes(BusBytes), .ActLanes(ActLanes), .QueueDepth(QueueDepth),
    .ReadBufBeats(ReadBufBeats), .Int8(Int8 == 1), .Float(Float == 1)
  ) u_core (
    .clk_i, .rst_ni,
    .s_axil_awaddr, .s_axil_awprot(3'b000), .s_axil_awvalid, .s_axil_awready, .s_axil_wdata,
    .s_axil_wstrb, .s_axil_wvalid, .s_axil_wready, .s_axil_bresp, .s_axil_bvalid, .s_axil_bready,
    .s_axil_araddr, .s_axil_arprot(3'b000), .s_axil_arvalid, .s_axil_arready, .s_axil_rdata,
    .s_axil_rresp, .s_axil_rvalid, .s_axil_rready, .m_axi_arid, .m_axi_araddr, .m_axi_arlen,
    .m_axi_arsize, .m_axi_arburst, .m_axi_arcache, .m_axi_arprot, .m_axi_arvalid, .m_axi_arready,
    .m_axi_rid, .m_axi_rdata, .m_axi_rresp, .m_axi_rlast, .m_axi_rvalid, .m_axi_rready,
    .m_axi_awid, .m_axi_awaddr, .m_axi_awlen, .m_axi_awsize, .m_axi_awburst, .m_axi_awcache,
    .m_axi_awprot, .m_axi_awvalid, .m_axi_awready, .m_axi_wdata, .m_axi_wstrb, .m_axi_wlast,
    .m_axi_wvalid, .m_axi_wready, .m_axi_bid, .m_axi_bresp, .m_axi_bvalid, .m_axi_bready,
    // A board is one chip: its core is built without inter-chip links.
    .link_tx_valid_o(unused_link_tx_valid), .link_tx_head_o(unused_link_tx_head),
    .link_tx_data_o(unused_link_tx_data), .link_tx_credit_i(1'b0),
    .link_rx_valid_i(1'b0), .link_rx_head_i(1'b0), .link_rx_data_i(32'd0),
    .link_rx_credit_o(unused_link_rx_credit),
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
    .s_axi_arid   (m_axi_arid),
    .s_axi_araddr (m_axi_araddr),
    .s_axi_arlen  (m_axi_arlen),
    .s_axi_arsize (m_axi_arsize),
    .s_axi_arburst(m_axi_arburst),
    .s_axi_arvalid(m_axi_arvalid),
    .s_axi_arready(m_axi_arready),
    .s_axi_rid    (m_axi_rid),
    .s_axi_rdata  (m_axi_rdata),
    .s_axi_rresp  (m_axi_rresp),
    .s_axi_rlast  (m_axi_rlast),
    .s_axi_rvalid (m_axi_rvalid),
    .s_axi_rready (m_axi_rready),
    .s_axi_awid   (m_axi_awid),
    .s_axi_awaddr (m_axi_awaddr),
    .s_axi_awlen  (m_axi_awlen),
    .s_axi_awsize (m_axi_awsize),
    .s_axi_awburst(m_axi_awburst),
    .s_axi_awvalid(m_axi_awvalid),
    .s_axi_awready(m_axi_awready),
    .s_axi_wdata  (m_axi_wdata),
    .s_axi_wstrb  (m_axi_wstrb),
    .s_axi_wlast  (m_axi_wlast),
    .s_axi_wvalid (m_axi_wvalid),
    .s_axi_wready (m_axi_wready),
    .s_axi_bid    (m_axi_bid),
    .s_axi_bresp  (m_axi_bresp),
    .s_axi_bvalid (m_axi_bvalid),
    .s_axi_bready (m_axi_bready),
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
    .m_axil_awaddr (s_axil_awaddr),
    .m_axil_awvalid(s_axil_awvalid),
    .m_axil_awready(s_axil_awready),
    .m_axil_wdata  (s_axil_wdata),
    .m_axil_wstrb  (s_axil_wstrb),
    .m_axil_wvalid (s_axil_wvalid),
    .m_axil_wready (s_axil_wready),
    .m_axil_bresp  (s_axil_bresp),
    .m_axil_bvalid (s_axil_bvalid),
    .m_axil_bready (s_axil_bready),
    .m_axil_araddr (s_axil_araddr),
    .m_axil_arvalid(s_axil_arvalid),
    .m_axil_arready(s_axil_arready),
    .m_axil_rdata  (s_axil_rdata),
    .m_axil_rresp  (s_axil_rresp),
    .m_axil_rvalid (s_axil_rvalid),
    .m_axil_rready (s_axil_rready),
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
