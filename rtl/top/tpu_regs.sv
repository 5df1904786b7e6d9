// The AXI4-Lite slave of tpu_top: control and status registers, the error
// registers and the 64-bit performance counters (docs/registers.md, generated
// with tpu_regs_pkg from rtl/defs/regmap.toml).
//
// One read and one write are handled at a time. A write needs AW and W
// together; byte strobes apply to read/write registers. An offset that is not
// in the map, or a write to a read-only register, gets SLVERR.
//
// START and RESET both reset the core for one cycle (core_reset_req_o asks for
// it a cycle ahead); START then starts it. Reading a counter's LO half latches
// its HI half, so LO then HI is one consistent 64-bit value while the core runs.
// The counters are flip-flops, or with CounterRam a block RAM (tpu_counter_ram),
// where a LO read is answered within NumCounters + 2 cycles instead of one.
`include "tpu_assert.svh"

module tpu_regs #(
  parameter int unsigned Dim         = 16,
  parameter int unsigned MulStages   = 0,
  parameter int unsigned AddStages   = 0,
  parameter int unsigned ActLanes    = 4,
  parameter int unsigned UbDepth     = 1024,
  parameter int unsigned AccDepth    = 1024,
  parameter int unsigned BusBytes    = 16,
  parameter int unsigned WeightTiles = 4,
  parameter bit          Sequential  = 1'b0,  // HW_CORE.SEQUENTIAL: the sequential core
  // HW_CORE.LINKS: inter-chip links and the collective unit. Without them POD and LINK_TIMEOUT
  // read as 0 and ignore writes, and hold no flip-flops.
  parameter bit          Links       = 1'b0,
  parameter int unsigned LinkLanes   = 0,     // HW_CORE.LINK_LANES
  parameter int unsigned VectorLanes = 0,     // HW_CORE.VECTOR_LANES
  parameter bit          Int8        = 1'b0,  // HW_CORE.INT8
  parameter bit          Float       = 1'b1,  // not HW_CORE.INT8_ONLY
  // Counter bits, 32..64: narrower counters wrap sooner and save an FPGA's logic; HI reads
  // the bits above 32 that there are.
  parameter int unsigned CounterWidth = 64,
  parameter bit          CounterRam   = 1'b0,
  // The bits of a counter increment (counter_add_i's 18 per counter) that may be set.
  parameter int unsigned CounterAddWidth = 18,
  localparam int unsigned AddrWidth  = tpu_regs_pkg::RegAddrWidth,
  localparam int unsigned NumCounters = tpu_regs_pkg::CounterCount
) (
  input  logic                   clk_i,
  input  logic                   rst_ni,

  input  logic [AddrWidth-1:0]   s_awaddr_i,
  input  logic                   s_awvalid_i,
  output logic                   s_awready_o,
  input  logic [31:0]            s_wdata_i,
  input  logic [3:0]             s_wstrb_i,
  input  logic                   s_wvalid_i,
  output logic                   s_wready_o,
  output logic [1:0]             s_bresp_o,
  output logic                   s_bvalid_o,
  input  logic                   s_bready_i,
  input  logic [AddrWidth-1:0]   s_araddr_i,
  input  logic                   s_arvalid_i,
  output logic                   s_arready_o,
  output logic [31:0]            s_rdata_o,
  output logic [1:0]             s_rresp_o,
  output logic                   s_rvalid_o,
  input  logic                   s_rready_i,

  output logic                   core_reset_req_o,  // the core is in reset in the next cycle
  output logic                   start_o,        // the cycle after the reset of a START
  output logic [31:0]            prog_addr_o,
  output logic [23:0]            prog_count_o,
  output logic [7:0]             pod_id_o,
  output logic [7:0]             pod_size_o,
  output logic [31:0]            link_timeout_o,
  output logic                   irq_o,

  input  logic                   busy_i,
  input  logic                   done_i,         // pulse
  input  logic                   error_i,        // pulse
  input  logic [7:0]             error_code_i,
  input  logic [23:0]            error_pc_i,
  input  logic [23:0]            pc_i,
  // What to add to each counter this cycle (counted only while busy).
  input  logic [NumCounters*18-1:0] counter_add_i
);

  if (NumCounters > 16) begin : g_too_many_counters
    $error("tpu_regs: the counter address decode handles at most 16 counters");
  end
  if (CounterWidth < 32 || CounterWidth > 64) begin : g_bad_counter_width
    $error("tpu_regs: CounterWidth must be in 32..64");
  end
  if (CounterAddWidth < 1 || CounterAddWidth > 18) begin : g_bad_counter_add_width
    $error("tpu_regs: CounterAddWidth must be in 1..18");
  end

  localparam logic [1:0] RespOkay   = 2'b00;
  localparam logic [1:0] RespSlvErr = 2'b10;
  localparam logic [AddrWidth-1:0] CounterEnd =
      tpu_regs_pkg::CounterBase + AddrWidth'(NumCounters * 8);

  // ---------------------------------------------------------------------------
  // Register state
  // ---------------------------------------------------------------------------
  logic [31:0] prog_addr_d, prog_addr_q;
  logic [23:0] prog_count_d, prog_count_q;
  logic [15:0] pod_d, pod_q;
  logic [31:0] link_timeout_d, link_timeout_q;
  logic        irq_enable_d, irq_enable_q;
  logic        done_d, done_q, error_d, error_q;
  logic [7:0]  error_code_d, error_code_q;
  logic [23:0] error_pc_d, error_pc_q;
  logic        core_reset_d, core_reset_q, start_d, start_q, start_pending_d, start_pending_q;
  // This cycle's increments, counted in the next: the counters' adders then
  // start from a register, not from the core's dispatch logic (the FPGA's
  // critical path). The counters settle one cycle after DONE rises: a host
  // that reads STATUS and then a counter reads the settled value.
  logic [NumCounters*CounterAddWidth-1:0] counter_add_d, counter_add_q;
  logic        counter_clear;           // START: every counter to zero
  logic        counter_read;            // a LO read taken now
  logic [3:0]  counter_idx;
  logic        counter_ready;           // the value of the counter read is counter_value
  logic [63:0] counter_value;

  // The increments' bits above CounterAddWidth, which must be zero (checked below).
  logic [NumCounters*18-1:0] counter_add_high;
  logic                      unused_counter_add_high;
  for (genvar c = 0; c < NumCounters; c++) begin : g_counter_add_high
    assign counter_add_high[c*18 +: 18] = counter_add_i[c*18 +: 18] >> CounterAddWidth;
  end
  assign unused_counter_add_high = ^counter_add_high;

  if (CounterRam) begin : g_counter_ram
    logic [CounterWidth-1:0] value;
    tpu_counter_ram #(
      .NumCounters(NumCounters), .CounterWidth(CounterWidth), .AddWidth(CounterAddWidth)
    ) u_counters (
      .clk_i, .rst_ni,
      .clear_i     (counter_clear),
      .add_i       (counter_add_q),
      .read_i      (counter_read),
      .read_idx_i  (counter_idx[$clog2(NumCounters)-1:0]),
      .read_valid_o(counter_ready),
      .read_value_o(value)
    );
    assign counter_value = 64'(value);
  end else begin : g_counter_flops
    logic [NumCounters*CounterWidth-1:0] counters_d, counters_q;
    logic [NumCounters*64-1:0] counters_wide;   // as the 64-bit registers read them
    for (genvar c = 0; c < NumCounters; c++) begin : g_counter
      assign counters_d[c*CounterWidth +: CounterWidth] =
          counter_clear ? '0 : counters_q[c*CounterWidth +: CounterWidth] +
                               CounterWidth'(counter_add_q[c*CounterAddWidth +: CounterAddWidth]);
      assign counters_wide[c*64 +: 64] = 64'(counters_q[c*CounterWidth +: CounterWidth]);
    end
    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) counters_q <= '0;
      else         counters_q <= counters_d;
    end
    assign counter_ready = counter_read;
    assign counter_value = counters_wide[counter_idx*64 +: 64];
  end
  logic [31:0] hi_latch_d, hi_latch_q;

  // ---------------------------------------------------------------------------
  // Write channel
  // ---------------------------------------------------------------------------
  logic        write_fire, bvalid_d, bvalid_q;
  logic [1:0]  bresp_d, bresp_q;
  logic [31:0] wmask;

  always_comb begin
    s_awready_o = !bvalid_q && s_awvalid_i && s_wvalid_i;
    s_wready_o  = s_awready_o;
    write_fire  = s_awready_o;
    for (int b = 0; b < 4; b++) wmask[b*8 +: 8] = {8{s_wstrb_i[b]}};
  end

  // ---------------------------------------------------------------------------
  // Read channel
  // ---------------------------------------------------------------------------
  logic        read_fire, rvalid_d, rvalid_q;
  logic        counter_wait_d, counter_wait_q;   // a LO read waits for tpu_counter_ram
  logic [31:0] rdata_d, rdata_q, read_value;
  logic [1:0]  rresp_d, rresp_q, read_resp;
  logic        read_is_counter, read_latches_hi, unused_off_bits;
  logic [AddrWidth-1:0] counter_off;  // bits [6:3] select the counter, [2] the half

  always_comb begin
    s_arready_o = !rvalid_q && !counter_wait_q;
    read_fire   = s_arvalid_i && s_arready_o;

    read_resp       = RespOkay;
    read_value      = '0;
    read_latches_hi = 1'b0;
    counter_off     = s_araddr_i - tpu_regs_pkg::CounterBase;
    counter_idx     = counter_off[6:3];
    unused_off_bits = ^{counter_off[AddrWidth-1:7], counter_off[2:0]};
    read_is_counter = s_araddr_i >= tpu_regs_pkg::CounterBase && s_araddr_i < CounterEnd &&
                      s_araddr_i[1:0] == 2'b00;
    if (read_is_counter) begin
      if (!s_araddr_i[2]) begin
        read_value      = counter_value[31:0];
        read_latches_hi = 1'b1;
      end else begin
        read_value = hi_latch_q;
      end
    end else begin
      unique case (s_araddr_i)
        tpu_regs_pkg::RegId:      read_value = tpu_regs_pkg::RegIdReset;
        tpu_regs_pkg::RegVersion: read_value = tpu_regs_pkg::RegVersionReset;
        tpu_regs_pkg::RegHwArray: begin
          read_value[tpu_regs_pkg::HwArrayDimLsb +: 16]      = 16'(Dim);
          read_value[tpu_regs_pkg::HwArrayMulStagesLsb +: 4] = 4'(MulStages);
          read_value[tpu_regs_pkg::HwArrayAddStagesLsb +: 4] = 4'(AddStages);
          read_value[tpu_regs_pkg::HwArrayActLanesLsb +: 8]  = 8'(ActLanes);
        end
        tpu_regs_pkg::RegHwMemory: begin
          read_value[tpu_regs_pkg::HwMemoryUbDepthLog2Lsb +: 8]  = 8'($clog2(UbDepth));
          read_value[tpu_regs_pkg::HwMemoryAccDepthLog2Lsb +: 8] = 8'($clog2(AccDepth));
          read_value[tpu_regs_pkg::HwMemoryBusBytesLog2Lsb +: 8] = 8'($clog2(BusBytes));
          read_value[tpu_regs_pkg::HwMemoryWeightTilesLsb +: 8]  = 8'(WeightTiles);
        end
        tpu_regs_pkg::RegCtrl: read_value[tpu_regs_pkg::CtrlIrqEnableBit] = irq_enable_q;
        tpu_regs_pkg::RegStatus: begin
          // Busy from the START write on, so a poll right after it never reads idle.
          read_value[tpu_regs_pkg::StatusBusyBit]  = busy_i || core_reset_q || start_q;
          read_value[tpu_regs_pkg::StatusDoneBit]  = done_q;
          read_value[tpu_regs_pkg::StatusErrorBit] = error_q;
        end
        tpu_regs_pkg::RegErrorCode: read_value = {24'd0, error_code_q};
        tpu_regs_pkg::RegErrorPc:   read_value = {8'd0, error_pc_q};
        tpu_regs_pkg::RegProgAddr:  read_value = prog_addr_q;
        tpu_regs_pkg::RegProgCount: read_value = {8'd0, prog_count_q};
        tpu_regs_pkg::RegPc:        read_value = {8'd0, pc_i};
        tpu_regs_pkg::RegHwCore: begin
          read_value[tpu_regs_pkg::HwCoreSequentialBit] = Sequential;
          read_value[tpu_regs_pkg::HwCoreLinksBit]      = Links;
          read_value[tpu_regs_pkg::HwCoreInt8Bit]       = Int8;
          read_value[tpu_regs_pkg::HwCoreInt8OnlyBit]   = !Float;
          read_value[tpu_regs_pkg::HwCoreLinkLanesLsb +: 16] = Links ? 16'(LinkLanes) : 16'd0;
          read_value[tpu_regs_pkg::HwCoreVectorLanesLsb +: 8] = 8'(VectorLanes);
        end
        tpu_regs_pkg::RegPod:         read_value = {16'd0, pod_q};
        tpu_regs_pkg::RegLinkTimeout: read_value = link_timeout_q;
        default:                    read_resp  = RespSlvErr;
      endcase
    end
  end

  assign counter_read = read_fire && read_latches_hi;

  always_comb begin
    rvalid_d       = rvalid_q && !s_rready_i;
    rdata_d        = rdata_q;
    rresp_d        = rresp_q;
    counter_wait_d = counter_wait_q;
    if (read_fire) begin
      if (counter_read && CounterRam) begin
        counter_wait_d = 1'b1;
      end else begin
        rvalid_d = 1'b1;
        rdata_d  = read_value;
        rresp_d  = read_resp;
      end
    end
    if (counter_wait_q && counter_ready) begin
      counter_wait_d = 1'b0;
      rvalid_d       = 1'b1;
      rdata_d        = counter_value[31:0];
      rresp_d        = RespOkay;
    end
  end

  // ---------------------------------------------------------------------------
  // Register updates
  // ---------------------------------------------------------------------------
  logic write_start, write_reset;

  always_comb begin
    prog_addr_d  = prog_addr_q;
    prog_count_d = prog_count_q;
    pod_d        = pod_q;
    link_timeout_d = link_timeout_q;
    irq_enable_d = irq_enable_q;
    bvalid_d     = bvalid_q && !s_bready_i;
    bresp_d      = bresp_q;
    write_start  = 1'b0;
    write_reset  = 1'b0;

    if (write_fire) begin
      bvalid_d = 1'b1;
      bresp_d  = RespOkay;
      unique case (s_awaddr_i)
        tpu_regs_pkg::RegCtrl: begin
          if (s_wstrb_i[0]) begin
            write_start = s_wdata_i[tpu_regs_pkg::CtrlStartBit];
            write_reset = s_wdata_i[tpu_regs_pkg::CtrlResetBit];
          end
          if (s_wstrb_i[1]) irq_enable_d = s_wdata_i[tpu_regs_pkg::CtrlIrqEnableBit];
        end
        tpu_regs_pkg::RegProgAddr:  prog_addr_d  = (prog_addr_q & ~wmask) | (s_wdata_i & wmask);
        tpu_regs_pkg::RegProgCount: begin
          prog_count_d = (prog_count_q & ~wmask[23:0]) | (s_wdata_i[23:0] & wmask[23:0]);
        end
        tpu_regs_pkg::RegPod: pod_d = (pod_q & ~wmask[15:0]) | (s_wdata_i[15:0] & wmask[15:0]);
        tpu_regs_pkg::RegLinkTimeout: begin
          link_timeout_d = (link_timeout_q & ~wmask) | (s_wdata_i & wmask);
        end
        default: bresp_d = RespSlvErr;
      endcase
    end

    // START is ignored while a program runs; RESET always acts.
    core_reset_d = write_reset || (write_start && !busy_i);
    start_d      = core_reset_q && start_pending_q;

    done_d       = done_q;
    error_d      = error_q;
    error_code_d = error_code_q;
    error_pc_d   = error_pc_q;
    if (done_i) done_d = 1'b1;
    if (error_i) begin
      error_d      = 1'b1;
      error_code_d = error_code_i;
      error_pc_d   = error_pc_i;
    end
    if (core_reset_q) begin
      done_d       = 1'b0;
      error_d      = 1'b0;
      error_code_d = tpu_regs_pkg::ErrNone;
      error_pc_d   = '0;
    end

    for (int c = 0; c < NumCounters; c++) begin
      counter_add_d[c*CounterAddWidth +: CounterAddWidth] =
          busy_i ? counter_add_i[c*18 +: CounterAddWidth] : '0;
    end
    counter_clear = core_reset_q && start_pending_q;

    hi_latch_d = hi_latch_q;
    if (counter_ready) hi_latch_d = counter_value[63:32];
    if (!Links) begin
      pod_d          = '0;
      link_timeout_d = '0;
    end
  end

  // A START remembers itself through the reset cycle.
  assign start_pending_d = write_start && !busy_i && !write_reset;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      prog_addr_q     <= '0;
      prog_count_q    <= '0;
      pod_q           <= '0;
      link_timeout_q  <= Links ? tpu_regs_pkg::RegLinkTimeoutReset : '0;
      irq_enable_q    <= 1'b0;
      done_q          <= 1'b0;
      error_q         <= 1'b0;
      error_code_q    <= tpu_regs_pkg::ErrNone;
      error_pc_q      <= '0;
      core_reset_q    <= 1'b0;
      start_q         <= 1'b0;
      start_pending_q <= 1'b0;
      counter_wait_q  <= 1'b0;
      counter_add_q   <= '0;
      hi_latch_q      <= '0;
      bvalid_q        <= 1'b0;
      bresp_q         <= RespOkay;
      rvalid_q        <= 1'b0;
      rdata_q         <= '0;
      rresp_q         <= RespOkay;
    end else begin
      prog_addr_q     <= prog_addr_d;
      prog_count_q    <= prog_count_d;
      pod_q           <= pod_d;
      link_timeout_q  <= link_timeout_d;
      irq_enable_q    <= irq_enable_d;
      done_q          <= done_d;
      error_q         <= error_d;
      error_code_q    <= error_code_d;
      error_pc_q      <= error_pc_d;
      core_reset_q    <= core_reset_d;
      start_q         <= start_d;
      start_pending_q <= start_pending_d;
      counter_wait_q  <= counter_wait_d;
      counter_add_q   <= counter_add_d;
      hi_latch_q      <= hi_latch_d;
      bvalid_q        <= bvalid_d;
      bresp_q         <= bresp_d;
      rvalid_q        <= rvalid_d;
      rdata_q         <= rdata_d;
      rresp_q         <= rresp_d;
    end
  end

  assign s_bvalid_o   = bvalid_q;
  assign s_bresp_o    = bresp_q;
  assign s_rvalid_o   = rvalid_q;
  assign s_rdata_o    = rdata_q;
  assign s_rresp_o    = rresp_q;
  assign core_reset_req_o = core_reset_d;
  assign start_o      = start_q;
  assign prog_addr_o  = prog_addr_q;
  assign prog_count_o = prog_count_q;
  assign pod_id_o     = pod_q[tpu_regs_pkg::PodIdLsb +: 8];
  assign pod_size_o   = pod_q[tpu_regs_pkg::PodSizeLsb +: 8];
  assign link_timeout_o = link_timeout_q;
  assign irq_o        = irq_enable_q && (done_q || error_q);

  `TPU_ASSUME(a_counter_add_fits, counter_add_high == '0,
              "a counter increment wider than CounterAddWidth")
  `TPU_ASSERT_NEXT(a_bvalid_stable, s_bvalid_o && !s_bready_i, s_bvalid_o && $stable(s_bresp_o),
                   "B changed or withdrawn before it was accepted")
  `TPU_ASSERT_NEXT(a_rvalid_stable, s_rvalid_o && !s_rready_i,
                   s_rvalid_o && $stable(s_rdata_o) && $stable(s_rresp_o),
                   "R changed or withdrawn before it was accepted")
  `TPU_ASSUME_NEXT(a_awvalid_held, s_awvalid_i && !s_awready_o, s_awvalid_i && $stable(s_awaddr_i),
                   "the master withdrew or changed AW before it was accepted")
  `TPU_ASSUME_NEXT(a_wvalid_held, s_wvalid_i && !s_wready_o,
                   s_wvalid_i && $stable(s_wdata_i) && $stable(s_wstrb_i),
                   "the master withdrew or changed W before it was accepted")
  `TPU_ASSUME_NEXT(a_arvalid_held, s_arvalid_i && !s_arready_o, s_arvalid_i && $stable(s_araddr_i),
                   "the master withdrew or changed AR before it was accepted")

endmodule
