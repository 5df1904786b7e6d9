// The TPU core as a chip sees it: an AXI4-Lite slave for the registers
// (docs/registers.md), an AXI4 master for host memory (instructions, data and
// weights in, results out) and irq_o, around one of two cores that run the same
// programs with the same results bit for bit:
// - the array core (tpu_array_core, docs/core.md): a Dim x Dim weight-stationary
//   systolic array whose units overlap, fed by an issue stage with hazard
//   tracking (docs/architecture.md, docs/isa.md);
// - with Sequential, the sequential core (tpu_seq_core, docs/seq_core.md): the
//   same instruction set one multiply-add at a time, for FPGAs too small for
//   the array (the iCEBreaker's iCE40UP5K).
//
// Both share this shell: the ports, the parameter checks, the register block
// (tpu_regs) and the performance counters, whose categories each core reports.
module tpu_top #(
  parameter bit          Sequential   = 1'b0,   // the sequential core instead of the array
  parameter int unsigned Dim          = 16,     // array rows = columns, power of two (seq: 1..16)
  parameter int unsigned MulStages    = 0,      // multiplier pipeline registers, 0..2 (array)
  parameter int unsigned AddStages    = 0,      // adder pipeline registers, 0..3 (array)
  parameter int unsigned UbDepth      = 16384,  // unified-buffer rows, power of two
  parameter int unsigned AccDepth     = 4096,   // accumulator rows, power of two
  parameter int unsigned WeightTiles  = 4,      // weight tiles loaded ahead, 2..16
  parameter int unsigned BusBytes     = 16,     // AXI4 master data width in bytes (seq: 4)
  parameter int unsigned ActLanes     = 4,      // activation lanes per cycle (array)
  parameter int unsigned QueueDepth   = 4,      // operations per unit queue (array)
  parameter int unsigned ReadBufBeats = 64,     // read-data buffer of each DMA read engine (array)
  parameter int unsigned CounterWidth = 64,     // bits of each performance counter, 32..64
  // Inter-chip links and the collective unit (array; docs/pod.md): fp32 lanes per link beat, a
  // power of two dividing Dim, or 0 for none (the board builds); with links Dim >= 4.
  parameter int unsigned LinkLanes    = 0,
  // Rows the receiving end of a link holds, 2..255: full rate needs about twice the wire's
  // latency and six more.
  parameter int unsigned LinkCredits  = 32,
  // The int8 datapath (array, Dim >= 4; docs/isa.md, "int8 mode"): int8 x int8 -> int32 in the
  // matrix unit, requantisation in the activation unit. Without Float the core is int8 only:
  // the bf16 and fp32 arithmetic is left out (a smaller array for an FPGA).
  parameter bit          Int8         = 1'b0,
  parameter bit          Float        = 1'b1,
  // The vector unit (array; docs/isa.md, ELTWISE): fp32 or int32 lanes it combines per cycle, a
  // power of two up to Dim and 128, or 0 for none (the board builds).
  parameter int unsigned VectorLanes  = 0,
  localparam int unsigned LinkBits    = ((LinkLanes > 0) ? LinkLanes : 1) * 32,
  localparam int unsigned IdWidth     = 2,
  localparam int unsigned BusBits     = BusBytes * 8,
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

  // Inter-chip links: valid beats to the next chip of the ring and credits back from it; valid
  // beats from the previous chip and credits back to it (docs/pod.md). Idle without links.
  output logic                    link_tx_valid_o,
  output logic                    link_tx_head_o,
  output logic [LinkBits-1:0]     link_tx_data_o,
  input  logic                    link_tx_credit_i,
  input  logic                    link_rx_valid_i,
  input  logic                    link_rx_head_i,
  input  logic [LinkBits-1:0]     link_rx_data_i,
  output logic                    link_rx_credit_o,

  output logic                    irq_o
);

  // ---------------------------------------------------------------------------
  // Parameter checks
  // ---------------------------------------------------------------------------
  localparam int unsigned MaxDim = Sequential ? 16 : 256;

  if (Dim < 1 || Dim > MaxDim || (Dim & (Dim - 1)) != 0) begin : g_bad_dim
    $error("tpu_top: Dim must be a power of two in 1..256 (the sequential core: 1..16)");
  end
  if (UbDepth < 4 || UbDepth > 65536 || (UbDepth & (UbDepth - 1)) != 0) begin : g_bad_ub
    $error("tpu_top: UbDepth must be a power of two in 4..65536");
  end
  if (AccDepth < 4 || AccDepth > 65536 || (AccDepth & (AccDepth - 1)) != 0) begin : g_bad_acc
    $error("tpu_top: AccDepth must be a power of two in 4..65536");
  end
  if (WeightTiles < 2 || WeightTiles > 16) begin : g_bad_tiles
    $error("tpu_top: WeightTiles must be in 2..16");
  end
  if (CounterWidth < 32 || CounterWidth > 64) begin : g_bad_counter_width
    $error("tpu_top: CounterWidth must be in 32..64");
  end
  if (Sequential) begin : g_seq_checks
    if (BusBytes != 4) begin : g_bad_bus
      $error("tpu_top: the sequential core has a 4-byte bus (BusBytes = 4)");
    end
  end else begin : g_array_checks
    if (BusBytes < 4 || BusBytes > 64 || (BusBytes & (BusBytes - 1)) != 0) begin : g_bad_bus
      $error("tpu_top: BusBytes must be a power of two in 4..64");
    end
    if (ActLanes < 1 || ActLanes > Dim || (ActLanes & (ActLanes - 1)) != 0) begin : g_bad_lanes
      $error("tpu_top: ActLanes must be a power of two in 1..Dim");
    end
    if (MulStages > 2) begin : g_bad_mul_stages
      $error("tpu_top: MulStages must be in 0..2");
    end
    if (AddStages > 3) begin : g_bad_add_stages
      $error("tpu_top: AddStages must be in 0..3");
    end
    if (QueueDepth < 1 || QueueDepth > 16) begin : g_bad_queue
      $error("tpu_top: QueueDepth must be in 1..16");
    end
    if (ReadBufBeats < 4 || ReadBufBeats > 512 || ReadBufBeats < 4 * Dim / BusBytes)
    begin : g_bad_readbuf
      $error("tpu_top: ReadBufBeats must be in 4..512 and hold an accumulator row");
    end
    if (LinkLanes != 0 && (LinkLanes > Dim || (LinkLanes & (LinkLanes - 1)) != 0 || Dim < 4))
    begin : g_bad_link_lanes
      $error("tpu_top: LinkLanes must be 0 or a power of two up to Dim, and links need Dim >= 4");
    end
    if (LinkCredits < 2 || LinkCredits > 255) begin : g_bad_link_credits
      $error("tpu_top: LinkCredits must be in 2..255");
    end
    if (VectorLanes != 0 &&
        (VectorLanes > Dim || VectorLanes > 128 || (VectorLanes & (VectorLanes - 1)) != 0))
    begin : g_bad_vector_lanes
      $error("tpu_top: VectorLanes must be 0 or a power of two up to Dim and 128");
    end
  end
  if (Sequential && VectorLanes != 0) begin : g_seq_vector
    $error("tpu_top: the sequential core has no vector unit (VectorLanes = 0)");
  end
  if (Sequential && LinkLanes != 0) begin : g_seq_links
    $error("tpu_top: the sequential core has no inter-chip links (LinkLanes = 0)");
  end
  if (Int8 && (Sequential || Dim < 4)) begin : g_bad_int8
    $error("tpu_top: the int8 datapath needs the array core with Dim >= 4");
  end
  if (!Float && (!Int8 || LinkLanes != 0)) begin : g_bad_float
    $error("tpu_top: a core without Float needs Int8 and no links (ALLREDUCE adds in fp32)");
  end

  // Illegal values have raised an error above. The internals are built from
  // legal stand-ins so that elaboration reports that error, not a follow-on.
  localparam int unsigned DimL =
      (Dim >= 1 && Dim <= MaxDim && (Dim & (Dim - 1)) == 0) ? Dim : 1;
  localparam int unsigned UbDepthL =
      (UbDepth >= 4 && UbDepth <= 65536 && (UbDepth & (UbDepth - 1)) == 0) ? UbDepth : 4;
  localparam int unsigned AccDepthL =
      (AccDepth >= 4 && AccDepth <= 65536 && (AccDepth & (AccDepth - 1)) == 0) ? AccDepth : 4;
  localparam int unsigned WeightTilesL = (WeightTiles >= 2 && WeightTiles <= 16) ? WeightTiles : 2;
  localparam int unsigned CounterWidthL =
      (CounterWidth >= 32 && CounterWidth <= 64) ? CounterWidth : 64;
  localparam int unsigned BusBytesL =
      (!Sequential && BusBytes >= 4 && BusBytes <= 64 && (BusBytes & (BusBytes - 1)) == 0) ?
      BusBytes : 4;
  localparam int unsigned ActLanesL =
      (!Sequential && ActLanes >= 1 && ActLanes <= DimL && (ActLanes & (ActLanes - 1)) == 0) ?
      ActLanes : 1;
  localparam int unsigned MulStagesL = (!Sequential && MulStages <= 2) ? MulStages : 0;
  localparam int unsigned AddStagesL = (!Sequential && AddStages <= 3) ? AddStages : 0;
  localparam int unsigned QueueDepthL = (QueueDepth >= 1 && QueueDepth <= 16) ? QueueDepth : 1;
  localparam int unsigned ReadBufBeatsL =
      (ReadBufBeats >= 4 && ReadBufBeats <= 512 && ReadBufBeats >= 4 * DimL / BusBytesL) ?
      ReadBufBeats : ((4 * DimL / BusBytesL > 4) ? 4 * DimL / BusBytesL : 4);

  localparam int unsigned LinkLanesL =
      (!Sequential && LinkLanes <= DimL && (LinkLanes & (LinkLanes - 1)) == 0 && DimL >= 4) ?
      LinkLanes : 0;
  localparam int unsigned LinkCreditsL = (LinkCredits >= 2 && LinkCredits <= 255) ? LinkCredits : 2;
  localparam int unsigned VectorLanesL =
      (!Sequential && VectorLanes <= DimL && VectorLanes <= 128 &&
       (VectorLanes & (VectorLanes - 1)) == 0) ? VectorLanes : 0;
  localparam bit          Int8L  = Int8 && !Sequential && DimL >= 4;
  localparam bit          FloatL = Float || !Int8L;

  localparam int unsigned NumCounters = tpu_regs_pkg::CounterCount;

  // ---------------------------------------------------------------------------
  // Registers, and the core reset that START and RESET ask for
  // ---------------------------------------------------------------------------
  tpu_shell_pkg::core_ctrl_t   core_ctrl;
  tpu_shell_pkg::core_status_t core_status;
  logic [NumCounters-1:0]    counter_event;
  logic [17:0]               useful_macs;
  logic [NumCounters*18-1:0] counter_add;
  logic                      unused_axil_prot;

  assign unused_axil_prot = ^{s_axil_awprot, s_axil_arprot};

  tpu_regs #(
    .Dim(DimL), .MulStages(MulStagesL), .AddStages(AddStagesL), .ActLanes(ActLanesL),
    .UbDepth(UbDepthL), .AccDepth(AccDepthL), .BusBytes(BusBytesL), .WeightTiles(WeightTilesL),
    .Sequential(Sequential), .Links(LinkLanesL > 0), .LinkLanes(LinkLanesL),
    .VectorLanes(VectorLanesL), .Int8(Int8L), .Float(FloatL), .CounterWidth(CounterWidthL),
    // The sequential core's counters live in block RAM: in flip-flops, with their adders, they
    // crowd the iCE40 UP5K. Every increment there is 0 or 1.
    .CounterRam(Sequential), .CounterAddWidth(Sequential ? 1 : 18)
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
    .core_reset_req_o(core_ctrl.reset_req),
    .start_o     (core_ctrl.start),
    .prog_addr_o (core_ctrl.prog_addr),
    .prog_count_o(core_ctrl.prog_count),
    .pod_id_o    (core_ctrl.pod_id),
    .pod_size_o  (core_ctrl.pod_size),
    .link_timeout_o(core_ctrl.link_timeout),
    .irq_o,
    .busy_i      (core_status.busy),
    .done_i      (core_status.done),
    .error_i     (core_status.error),
    .error_code_i(core_status.error_code),
    .error_pc_i  (core_status.error_pc),
    .pc_i        (core_status.pc),
    .counter_add_i(counter_add)
  );

  // ---------------------------------------------------------------------------
  // The core. The register block stays out of the core reset; each core
  // takes its own copies of it from core_ctrl.reset_req.
  // ---------------------------------------------------------------------------
  if (Sequential) begin : g_seq
    tpu_seq_core #(
      .Dim(DimL), .UbDepth(UbDepthL), .AccDepth(AccDepthL), .WeightTiles(WeightTilesL)
    ) u_core (
      .clk_i, .rst_ni, .ctrl_i(core_ctrl), .status_o(core_status),
      .counter_event_o(counter_event), .useful_macs_o(useful_macs),
      .m_axi_arid, .m_axi_araddr, .m_axi_arlen, .m_axi_arsize, .m_axi_arvalid, .m_axi_arready,
      .m_axi_rid, .m_axi_rdata, .m_axi_rresp, .m_axi_rlast, .m_axi_rvalid, .m_axi_rready,
      .m_axi_awaddr, .m_axi_awlen, .m_axi_awsize, .m_axi_awvalid, .m_axi_awready,
      .m_axi_wdata, .m_axi_wstrb, .m_axi_wlast, .m_axi_wvalid, .m_axi_wready,
      .m_axi_bid, .m_axi_bresp, .m_axi_bvalid, .m_axi_bready
    );
    assign link_tx_valid_o  = 1'b0;
    assign link_tx_head_o   = 1'b0;
    assign link_tx_data_o   = '0;
    assign link_rx_credit_o = 1'b0;
    logic unused_links;
    assign unused_links = ^{link_tx_credit_i, link_rx_valid_i, link_rx_head_i, link_rx_data_i};
  end else begin : g_array
    tpu_array_core #(
      .Dim(DimL), .MulStages(MulStagesL), .AddStages(AddStagesL), .UbDepth(UbDepthL),
      .AccDepth(AccDepthL), .WeightTiles(WeightTilesL), .BusBytes(BusBytesL),
      .ActLanes(ActLanesL), .QueueDepth(QueueDepthL), .ReadBufBeats(ReadBufBeatsL),
      .LinkLanes(LinkLanesL), .LinkCredits(LinkCreditsL), .VectorLanes(VectorLanesL),
      .Int8(Int8L), .Float(FloatL)
    ) u_core (
      .clk_i, .rst_ni, .ctrl_i(core_ctrl), .status_o(core_status),
      .counter_event_o(counter_event), .useful_macs_o(useful_macs),
      .m_axi_arid, .m_axi_araddr, .m_axi_arlen, .m_axi_arsize, .m_axi_arvalid, .m_axi_arready,
      .m_axi_rid, .m_axi_rdata, .m_axi_rresp, .m_axi_rlast, .m_axi_rvalid, .m_axi_rready,
      .m_axi_awaddr, .m_axi_awlen, .m_axi_awsize, .m_axi_awvalid, .m_axi_awready,
      .m_axi_wdata, .m_axi_wstrb, .m_axi_wlast, .m_axi_wvalid, .m_axi_wready,
      .m_axi_bid, .m_axi_bresp, .m_axi_bvalid, .m_axi_bready,
      .link_tx_valid_o, .link_tx_head_o, .link_tx_data_o, .link_tx_credit_i,
      .link_rx_valid_i, .link_rx_head_i, .link_rx_data_i, .link_rx_credit_o
    );
  end

  // Bursts are incrementing, normal non-cacheable bufferable, unprivileged secure data; every
  // write has ID 0.
  assign m_axi_arburst = 2'b01;
  assign m_axi_arcache = 4'b0011;
  assign m_axi_arprot  = 3'b000;
  assign m_axi_awid    = '0;
  assign m_axi_awburst = 2'b01;
  assign m_axi_awcache = 4'b0011;
  assign m_axi_awprot  = 3'b000;

  // ---------------------------------------------------------------------------
  // Performance counters (docs/core.md): the core names each cycle's category
  // (the TPU v1 paper's utilisation table) and the instructions it issues; the
  // shell counts cycles and bus beats.
  // ---------------------------------------------------------------------------
  always_comb begin
    for (int c = 0; c < NumCounters; c++) counter_add[c*18 +: 18] = 18'(counter_event[c]);
    counter_add[tpu_regs_pkg::CntCyclesIndex*18 +: 18]      = 18'd1;
    counter_add[tpu_regs_pkg::CntUsefulMacsIndex*18 +: 18]  = useful_macs;
    counter_add[tpu_regs_pkg::CntDmaReadBeatsIndex*18 +: 18]  = 18'(m_axi_rvalid && m_axi_rready);
    counter_add[tpu_regs_pkg::CntDmaWriteBeatsIndex*18 +: 18] = 18'(m_axi_wvalid && m_axi_wready);
  end

endmodule
