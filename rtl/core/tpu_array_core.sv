// The array core inside tpu_top (docs/core.md): a Dim x Dim weight-stationary
// systolic array with a unified buffer (bf16), accumulators (fp32), a weight
// FIFO, an activation unit, DMA engines and an issue stage that runs programs
// from host memory (docs/architecture.md, docs/isa.md).
//
// Every unit sits behind a queue; the issue stage keeps program order where it
// matters and lets the units overlap everywhere else. tpu_top holds the
// registers and has checked the parameters.
module tpu_array_core #(
  parameter int unsigned Dim          = 16,
  parameter int unsigned MulStages    = 0,
  parameter int unsigned AddStages    = 0,
  parameter int unsigned UbDepth      = 16384,
  parameter int unsigned AccDepth     = 4096,
  parameter int unsigned WeightTiles  = 4,
  parameter int unsigned BusBytes     = 16,
  parameter int unsigned ActLanes     = 4,
  parameter int unsigned QueueDepth   = 4,
  parameter int unsigned ReadBufBeats = 64,
  // Inter-chip links and the collective unit: fp32 lanes per link beat, 0 for none
  // (docs/pod.md); the receiving end holds LinkCredits rows.
  parameter int unsigned LinkLanes    = 0,
  parameter int unsigned LinkCredits  = 32,
  // The int8 datapath (Q-MAC, Q-REQ), and the float one (bf16, fp32): one or both.
  parameter bit          Int8         = 1'b0,
  parameter bit          Float        = 1'b1,
  // The vector unit (ELTWISE): lanes it combines per cycle, 0 for none.
  parameter int unsigned VectorLanes  = 0,
  localparam int unsigned LinkBits    = ((LinkLanes > 0) ? LinkLanes : 1) * 32,
  localparam int unsigned IdWidth     = 2,
  localparam int unsigned BusBits     = BusBytes * 8,
  localparam int unsigned NumCounters = tpu_regs_pkg::CounterCount
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,
  input  tpu_shell_pkg::core_ctrl_t   ctrl_i,
  output tpu_shell_pkg::core_status_t status_o,
  // This cycle's counter increments of 0 or 1 (the cycle's category, an issued instruction),
  // and the useful multiply-adds of a row that left the array.
  output logic [NumCounters-1:0]  counter_event_o,
  output logic [17:0]             useful_macs_o,

  // AXI4 master: host memory (tpu_top drives the constant attributes).
  output logic [IdWidth-1:0]      m_axi_arid,
  output logic [31:0]             m_axi_araddr,
  output logic [7:0]              m_axi_arlen,
  output logic [2:0]              m_axi_arsize,
  output logic                    m_axi_arvalid,
  input  logic                    m_axi_arready,
  input  logic [IdWidth-1:0]      m_axi_rid,
  input  logic [BusBits-1:0]      m_axi_rdata,
  input  logic [1:0]              m_axi_rresp,
  input  logic                    m_axi_rlast,
  input  logic                    m_axi_rvalid,
  output logic                    m_axi_rready,
  output logic [31:0]             m_axi_awaddr,
  output logic [7:0]              m_axi_awlen,
  output logic [2:0]              m_axi_awsize,
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

  // Inter-chip links (with LinkLanes > 0): to the next chip, from the previous one.
  output logic                    link_tx_valid_o,
  output logic                    link_tx_head_o,
  output logic [LinkBits-1:0]     link_tx_data_o,
  input  logic                    link_tx_credit_i,
  input  logic                    link_rx_valid_i,
  input  logic                    link_rx_head_i,
  input  logic [LinkBits-1:0]     link_rx_data_i,
  output logic                    link_rx_credit_o
);

  localparam int unsigned NumUnits     = tpu_core_pkg::NumUnits;
  localparam int unsigned FpBits       = tpu_core_pkg::FootprintBits;
  localparam int unsigned UbAddrWidth  = $clog2(UbDepth);
  localparam int unsigned AccAddrWidth = $clog2(AccDepth);
  localparam int unsigned FetchClient  = 0;
  localparam int unsigned LoadClient   = 1;
  localparam int unsigned WeightClient = 2;

  // ---------------------------------------------------------------------------
  // The core reset: each unit takes it from its own flop (glitch-free, and a
  // local net instead of one that spans the chip).
  // ---------------------------------------------------------------------------
  localparam int unsigned RstRdMux  = 0;
  localparam int unsigned RstFetch  = 1;
  localparam int unsigned RstIssue  = 2;
  localparam int unsigned RstUb     = 3;
  localparam int unsigned RstAcc    = 4;
  localparam int unsigned RstLoad   = 5;
  localparam int unsigned RstWeight = 6;
  localparam int unsigned RstMatmul = 7;
  localparam int unsigned RstAct    = 8;
  localparam int unsigned RstStore  = 9;
  localparam int unsigned RstColl   = 10;
  localparam int unsigned RstVector = 11;
  localparam int unsigned NumRstCopies = 12;
  localparam bit          Links     = LinkLanes > 0;
  localparam bit          Vector    = VectorLanes > 0;

  logic [NumRstCopies-1:0] core_rst_n;

  for (genvar u = 0; u < NumRstCopies; u++) begin : g_core_reset
    tpu_reset_copy u_copy (
      .clk_i, .rst_ni,
      .reset_i(ctrl_i.reset_req),
      .rst_no (core_rst_n[u])
    );
  end

  // ---------------------------------------------------------------------------
  // AXI4 read channel, shared by instruction fetch, READ_HOST and the weights.
  // ---------------------------------------------------------------------------
  logic [2:0]    c_ar_valid, c_ar_ready, c_r_valid, c_r_ready;
  logic [3*32-1:0] c_ar_addr;
  logic [3*8-1:0]  c_ar_len;
  logic [3*3-1:0]  c_ar_size;
  logic [IdWidth-1:0] unused_rd_mux_id_high;

  tpu_axi_rd_mux #(.NumClients(3)) u_rd_mux (
    .clk_i, .rst_ni(core_rst_n[RstRdMux]),
    .c_ar_valid_i(c_ar_valid),
    .c_ar_ready_o(c_ar_ready),
    .c_ar_addr_i (c_ar_addr),
    .c_ar_len_i  (c_ar_len),
    .c_ar_size_i (c_ar_size),
    .c_r_valid_o (c_r_valid),
    .c_r_ready_i (c_r_ready),
    .m_ar_valid_o(m_axi_arvalid),
    .m_ar_ready_i(m_axi_arready),
    .m_ar_id_o   (m_axi_arid),
    .m_ar_addr_o (m_axi_araddr),
    .m_ar_len_o  (m_axi_arlen),
    .m_ar_size_o (m_axi_arsize),
    .m_r_valid_i (m_axi_rvalid),
    .m_r_ready_o (m_axi_rready),
    .m_r_id_i    (m_axi_rid)
  );

  logic unused_axi_inputs;
  assign unused_axi_inputs = ^{m_axi_rlast, m_axi_bid};

  // ---------------------------------------------------------------------------
  // Instruction fetch
  // ---------------------------------------------------------------------------
  logic        fetch_cmd_valid, fetch_cmd_ready, fetch_abort, fetch_quiet, unused_fetch_error;
  logic        instr_error;
  logic [31:0] fetch_cmd_addr;
  logic [23:0] fetch_cmd_rows;
  logic        instr_valid, instr_ready, unused_instr_last, unused_fetch_idle;
  logic [tpu_isa_pkg::InstrBits-1:0] instr;

  tpu_axi_reader #(
    .BusBytes(BusBytes), .MaxRowBytes(tpu_isa_pkg::InstrBytes), .BufBeats(16), .RowsWidth(24)
  ) u_fetch (
    .clk_i, .rst_ni(core_rst_n[RstFetch]),
    .abort_i             (fetch_abort),
    .cmd_valid_i         (fetch_cmd_valid),
    .cmd_ready_o         (fetch_cmd_ready),
    .cmd_addr_i          (fetch_cmd_addr),
    .cmd_stride_i        (32'(tpu_isa_pkg::InstrBytes)),
    .cmd_rows_i          (fetch_cmd_rows),
    .cmd_row_bytes_log2_i(4'($clog2(tpu_isa_pkg::InstrBytes))),
    .ar_valid_o          (c_ar_valid[FetchClient]),
    .ar_ready_i          (c_ar_ready[FetchClient]),
    .ar_addr_o           (c_ar_addr[FetchClient*32 +: 32]),
    .ar_len_o            (c_ar_len[FetchClient*8 +: 8]),
    .ar_size_o           (c_ar_size[FetchClient*3 +: 3]),
    .r_valid_i           (c_r_valid[FetchClient]),
    .r_ready_o           (c_r_ready[FetchClient]),
    .r_data_i            (m_axi_rdata),
    .r_resp_i            (m_axi_rresp),
    .row_valid_o         (instr_valid),
    .row_ready_i         (instr_ready),
    .row_data_o          (instr),
    .row_last_o          (unused_instr_last),
    .row_error_o         (instr_error),
    .bus_error_o         (unused_fetch_error),
    .quiet_o             (fetch_quiet),
    .idle_o              (unused_fetch_idle)
  );

  // ---------------------------------------------------------------------------
  // Issue stage
  // ---------------------------------------------------------------------------
  logic [NumUnits-1:0]            push, full, unit_idle;
  logic [NumUnits*QueueDepth-1:0] fp_valid;
  logic [NumUnits*QueueDepth*FpBits-1:0] fps;
  tpu_core_pkg::op_t              op, weight_op;
  logic [FpBits-1:0]              fp, weight_fp;
  logic                           abort_next, fetch_abort_next;
  logic                           axi_quiet, issued, mm_wait_input, mm_wait_other;
  logic                           bus_error;
  logic [7:0]                     bus_error_code;
  logic [23:0]                    bus_error_pc;

  tpu_issue #(
    .Dim(Dim), .BusBytes(BusBytes), .UbDepth(UbDepth), .AccDepth(AccDepth),
    .WeightTiles(WeightTiles), .QueueDepth(QueueDepth), .Links(Links), .Vector(Vector),
    .Int8(Int8), .Float(Float)
  ) u_issue (
    .clk_i, .rst_ni(core_rst_n[RstIssue]),
    .start_i          (ctrl_i.start),
    .prog_addr_i      (ctrl_i.prog_addr),
    .prog_count_i     (ctrl_i.prog_count),
    .fetch_cmd_valid_o(fetch_cmd_valid),
    .fetch_cmd_ready_i(fetch_cmd_ready),
    .fetch_cmd_addr_o (fetch_cmd_addr),
    .fetch_cmd_rows_o (fetch_cmd_rows),
    .fetch_abort_next_o(fetch_abort_next),
    .fetch_quiet_i    (fetch_quiet),
    .instr_valid_i    (instr_valid),
    .instr_ready_o    (instr_ready),
    .instr_i          (instr),
    .instr_error_i    (instr_error),
    .push_o           (push),
    .op_o             (op),
    .fp_o             (fp),
    .weight_op_o      (weight_op),
    .weight_fp_o      (weight_fp),
    .full_i           (full),
    .idle_i           (unit_idle),
    .fp_valid_i       (fp_valid),
    .fps_i            (fps),
    .bus_error_i      (bus_error),
    .bus_error_code_i (bus_error_code),
    .bus_error_pc_i   (bus_error_pc),
    .abort_next_o     (abort_next),
    .axi_quiet_i      (axi_quiet),
    .busy_o           (status_o.busy),
    .done_o           (status_o.done),
    .error_o          (status_o.error),
    .error_code_o     (status_o.error_code),
    .error_pc_o       (status_o.error_pc),
    .pc_o             (status_o.pc),
    .issued_o         (issued),
    .mm_wait_input_o  (mm_wait_input),
    .mm_wait_other_o  (mm_wait_other)
  );

  // The aborts reach the instruction fetch and the DMA engines of three units:
  // each takes them from its own flop, loaded from the issue stage's next
  // state (tpu_flop_copy), so that no abort net spans the chip.
  logic abort_load, abort_weight, abort_store, abort_coll;

  tpu_flop_copy u_fetch_abort (
    .clk_i, .rst_ni(core_rst_n[RstFetch]), .d_i(fetch_abort_next), .q_o(fetch_abort)
  );
  tpu_flop_copy u_abort_load (
    .clk_i, .rst_ni(core_rst_n[RstLoad]), .d_i(abort_next), .q_o(abort_load)
  );
  tpu_flop_copy u_abort_weight (
    .clk_i, .rst_ni(core_rst_n[RstWeight]), .d_i(abort_next), .q_o(abort_weight)
  );
  tpu_flop_copy u_abort_store (
    .clk_i, .rst_ni(core_rst_n[RstStore]), .d_i(abort_next), .q_o(abort_store)
  );
  tpu_flop_copy u_abort_coll (
    .clk_i, .rst_ni(core_rst_n[RstColl]), .d_i(abort_next), .q_o(abort_coll)
  );

  // ---------------------------------------------------------------------------
  // On-chip memories. Clients in priority order: the matrix unit first.
  // ---------------------------------------------------------------------------
  localparam int unsigned UbWrAct = 0, UbWrLoad = 1;
  localparam int unsigned UbRdMatmul = 0, UbRdStore = 1, UbRdVector = 2;
  localparam int unsigned NumUbRd = Vector ? 3 : 2;
  // The collective unit and then the vector unit come last on the first copy of the
  // accumulators; the collective unit has their mirror copy to itself (the rows it sends).
  localparam int unsigned AccWrMatmul = 0, AccWrAct = 1, AccWrLoad = 2, AccWrColl = 3;
  localparam int unsigned AccRdMatmul = 0, AccRdAct = 1, AccRdStore = 2, AccRdCollAdd = 3;
  localparam int unsigned AccWrVector = Links ? 4 : 3;
  localparam int unsigned AccRdVector = Links ? 4 : 3;
  localparam int unsigned AccRdCollSend = AccRdVector + (Vector ? 1 : 0);
  localparam int unsigned NumAccWr = 3 + (Links ? 1 : 0) + (Vector ? 1 : 0);
  localparam int unsigned NumAccRd = 3 + (Links ? 2 : 0) + (Vector ? 1 : 0);

  logic [1:0]                     ub_wr_req, ub_wr_gnt;
  logic [NumUbRd-1:0]             ub_rd_req, ub_rd_gnt;
  logic [2*UbAddrWidth-1:0]       ub_wr_addr;
  logic [NumUbRd*UbAddrWidth-1:0] ub_rd_addr;
  logic [2*Dim*16-1:0]            ub_wr_data;
  logic [NumUbRd*Dim*16-1:0]      ub_rd_data;
  logic [NumAccWr-1:0]               acc_wr_req, acc_wr_gnt;
  logic [NumAccRd-1:0]               acc_rd_req, acc_rd_gnt;
  logic [NumAccWr*AccAddrWidth-1:0]  acc_wr_addr;
  logic [NumAccRd*AccAddrWidth-1:0]  acc_rd_addr;
  logic [NumAccWr*Dim*32-1:0]        acc_wr_data;
  logic [NumAccRd*Dim*32-1:0]        acc_rd_data;

  tpu_banked_mem #(.Width(Dim * 16), .Depth(UbDepth), .NumWr(2), .NumRd(NumUbRd)) u_ub (
    .clk_i, .rst_ni(core_rst_n[RstUb]),
    .wr_req_i (ub_wr_req),
    .wr_addr_i(ub_wr_addr),
    .wr_data_i(ub_wr_data),
    .wr_gnt_o (ub_wr_gnt),
    .rd_req_i (ub_rd_req),
    .rd_addr_i(ub_rd_addr),
    .rd_gnt_o (ub_rd_gnt),
    .rd_data_o(ub_rd_data)
  );

  tpu_banked_mem #(
    .Width(Dim * 32), .Depth(AccDepth), .NumWr(NumAccWr), .NumRd(NumAccRd),
    .MirrorRd(Links ? 1 : 0)
  ) u_acc (
    .clk_i, .rst_ni(core_rst_n[RstAcc]),
    .wr_req_i (acc_wr_req),
    .wr_addr_i(acc_wr_addr),
    .wr_data_i(acc_wr_data),
    .wr_gnt_o (acc_wr_gnt),
    .rd_req_i (acc_rd_req),
    .rd_addr_i(acc_rd_addr),
    .rd_gnt_o (acc_rd_gnt),
    .rd_data_o(acc_rd_data)
  );

  // ---------------------------------------------------------------------------
  // Units
  // ---------------------------------------------------------------------------
  localparam int unsigned QBits = QueueDepth * FpBits;

  logic        load_error, weight_error, store_error;
  logic [23:0] load_pc, weight_pc, store_pc;
  logic        load_quiet, weight_quiet, store_quiet;

  tpu_load_unit #(
    .Dim(Dim), .BusBytes(BusBytes), .UbDepth(UbDepth), .AccDepth(AccDepth),
    .QueueDepth(QueueDepth), .BufBeats(ReadBufBeats), .Int8(Int8)
  ) u_load (
    .clk_i, .rst_ni(core_rst_n[RstLoad]),
    .abort_i      (abort_load),
    .push_i       (push[tpu_core_pkg::UnitLoad]),
    .push_op_i    (op),
    .push_fp_i    (fp),
    .full_o       (full[tpu_core_pkg::UnitLoad]),
    .fp_valid_o   (fp_valid[tpu_core_pkg::UnitLoad*QueueDepth +: QueueDepth]),
    .fps_o        (fps[tpu_core_pkg::UnitLoad*QBits +: QBits]),
    .ar_valid_o   (c_ar_valid[LoadClient]),
    .ar_ready_i   (c_ar_ready[LoadClient]),
    .ar_addr_o    (c_ar_addr[LoadClient*32 +: 32]),
    .ar_len_o     (c_ar_len[LoadClient*8 +: 8]),
    .ar_size_o    (c_ar_size[LoadClient*3 +: 3]),
    .r_valid_i    (c_r_valid[LoadClient]),
    .r_ready_o    (c_r_ready[LoadClient]),
    .r_data_i     (m_axi_rdata),
    .r_resp_i     (m_axi_rresp),
    .ub_wr_req_o  (ub_wr_req[UbWrLoad]),
    .ub_wr_addr_o (ub_wr_addr[UbWrLoad*UbAddrWidth +: UbAddrWidth]),
    .ub_wr_data_o (ub_wr_data[UbWrLoad*Dim*16 +: Dim*16]),
    .ub_wr_gnt_i  (ub_wr_gnt[UbWrLoad]),
    .acc_wr_req_o (acc_wr_req[AccWrLoad]),
    .acc_wr_addr_o(acc_wr_addr[AccWrLoad*AccAddrWidth +: AccAddrWidth]),
    .acc_wr_data_o(acc_wr_data[AccWrLoad*Dim*32 +: Dim*32]),
    .acc_wr_gnt_i (acc_wr_gnt[AccWrLoad]),
    .bus_error_o  (load_error),
    .pc_o         (load_pc),
    .axi_quiet_o  (load_quiet),
    .idle_o       (unit_idle[tpu_core_pkg::UnitLoad])
  );

  logic              wgt_valid, wgt_ready, weight_fifo_empty;
  logic [Dim*16-1:0] wgt_data;

  tpu_weight_unit #(
    .Dim(Dim), .BusBytes(BusBytes), .WeightTiles(WeightTiles), .QueueDepth(QueueDepth),
    .BufBeats(ReadBufBeats), .Int8(Int8), .Transpose(Vector)
  ) u_weight (
    .clk_i, .rst_ni(core_rst_n[RstWeight]),
    .abort_i     (abort_weight),
    .push_i      (push[tpu_core_pkg::UnitWeight]),
    .push_op_i   (weight_op),
    .push_fp_i   (weight_fp),
    .full_o      (full[tpu_core_pkg::UnitWeight]),
    .fp_valid_o  (fp_valid[tpu_core_pkg::UnitWeight*QueueDepth +: QueueDepth]),
    .fps_o       (fps[tpu_core_pkg::UnitWeight*QBits +: QBits]),
    .ar_valid_o  (c_ar_valid[WeightClient]),
    .ar_ready_i  (c_ar_ready[WeightClient]),
    .ar_addr_o   (c_ar_addr[WeightClient*32 +: 32]),
    .ar_len_o    (c_ar_len[WeightClient*8 +: 8]),
    .ar_size_o   (c_ar_size[WeightClient*3 +: 3]),
    .r_valid_i   (c_r_valid[WeightClient]),
    .r_ready_o   (c_r_ready[WeightClient]),
    .r_data_i    (m_axi_rdata),
    .r_resp_i    (m_axi_rresp),
    .wgt_valid_o (wgt_valid),
    .wgt_ready_i (wgt_ready),
    .wgt_data_o  (wgt_data),
    .fifo_empty_o(weight_fifo_empty),
    .bus_error_o (weight_error),
    .pc_o        (weight_pc),
    .axi_quiet_o (weight_quiet),
    .idle_o      (unit_idle[tpu_core_pkg::UnitWeight])
  );

  logic        act_fire, weight_wait, pending_wait, mm_reading;
  logic [17:0] act_macs;

  tpu_matmul_unit #(
    .Dim(Dim), .MulStages(MulStages), .AddStages(AddStages), .UbDepth(UbDepth),
    .AccDepth(AccDepth), .QueueDepth(QueueDepth), .Int8(Int8), .Float(Float)
  ) u_matmul (
    .clk_i, .rst_ni(core_rst_n[RstMatmul]),
    .push_i        (push[tpu_core_pkg::UnitMatmul]),
    .push_op_i     (op),
    .push_fp_i     (fp),
    .full_o        (full[tpu_core_pkg::UnitMatmul]),
    .fp_valid_o    (fp_valid[tpu_core_pkg::UnitMatmul*QueueDepth +: QueueDepth]),
    .fps_o         (fps[tpu_core_pkg::UnitMatmul*QBits +: QBits]),
    .ub_rd_req_o   (ub_rd_req[UbRdMatmul]),
    .ub_rd_addr_o  (ub_rd_addr[UbRdMatmul*UbAddrWidth +: UbAddrWidth]),
    .ub_rd_gnt_i   (ub_rd_gnt[UbRdMatmul]),
    .ub_rd_data_i  (ub_rd_data[UbRdMatmul*Dim*16 +: Dim*16]),
    .acc_rd_req_o  (acc_rd_req[AccRdMatmul]),
    .acc_rd_addr_o (acc_rd_addr[AccRdMatmul*AccAddrWidth +: AccAddrWidth]),
    .acc_rd_gnt_i  (acc_rd_gnt[AccRdMatmul]),
    .acc_rd_data_i (acc_rd_data[AccRdMatmul*Dim*32 +: Dim*32]),
    .acc_wr_req_o  (acc_wr_req[AccWrMatmul]),
    .acc_wr_addr_o (acc_wr_addr[AccWrMatmul*AccAddrWidth +: AccAddrWidth]),
    .acc_wr_data_o (acc_wr_data[AccWrMatmul*Dim*32 +: Dim*32]),
    .acc_wr_gnt_i  (acc_wr_gnt[AccWrMatmul]),
    .wgt_valid_i   (wgt_valid),
    .wgt_ready_o   (wgt_ready),
    .wgt_data_i    (wgt_data),
    .act_fire_o    (act_fire),
    .act_macs_o    (act_macs),
    .weight_wait_o (weight_wait),
    .pending_wait_o(pending_wait),
    .reading_o     (mm_reading),
    .idle_o        (unit_idle[tpu_core_pkg::UnitMatmul])
  );

  tpu_act_unit #(
    .Dim(Dim), .ActLanes(ActLanes), .AddStages(AddStages), .UbDepth(UbDepth),
    .AccDepth(AccDepth), .QueueDepth(QueueDepth), .Int8(Int8), .Float(Float),
    .VectorFunctions(Vector)
  ) u_act (
    .clk_i, .rst_ni(core_rst_n[RstAct]),
    .push_i       (push[tpu_core_pkg::UnitAct]),
    .push_op_i    (op),
    .push_fp_i    (fp),
    .full_o       (full[tpu_core_pkg::UnitAct]),
    .fp_valid_o   (fp_valid[tpu_core_pkg::UnitAct*QueueDepth +: QueueDepth]),
    .fps_o        (fps[tpu_core_pkg::UnitAct*QBits +: QBits]),
    .acc_rd_req_o (acc_rd_req[AccRdAct]),
    .acc_rd_addr_o(acc_rd_addr[AccRdAct*AccAddrWidth +: AccAddrWidth]),
    .acc_rd_gnt_i (acc_rd_gnt[AccRdAct]),
    .acc_rd_data_i(acc_rd_data[AccRdAct*Dim*32 +: Dim*32]),
    .ub_wr_req_o  (ub_wr_req[UbWrAct]),
    .ub_wr_addr_o (ub_wr_addr[UbWrAct*UbAddrWidth +: UbAddrWidth]),
    .ub_wr_data_o (ub_wr_data[UbWrAct*Dim*16 +: Dim*16]),
    .ub_wr_gnt_i  (ub_wr_gnt[UbWrAct]),
    .acc_wr_req_o (acc_wr_req[AccWrAct]),
    .acc_wr_addr_o(acc_wr_addr[AccWrAct*AccAddrWidth +: AccAddrWidth]),
    .acc_wr_data_o(acc_wr_data[AccWrAct*Dim*32 +: Dim*32]),
    .acc_wr_gnt_i (acc_wr_gnt[AccWrAct]),
    .idle_o       (unit_idle[tpu_core_pkg::UnitAct])
  );

  tpu_store_unit #(
    .Dim(Dim), .BusBytes(BusBytes), .UbDepth(UbDepth), .AccDepth(AccDepth),
    .QueueDepth(QueueDepth), .Int8(Int8)
  ) u_store (
    .clk_i, .rst_ni(core_rst_n[RstStore]),
    .abort_i      (abort_store),
    .push_i       (push[tpu_core_pkg::UnitStore]),
    .push_op_i    (op),
    .push_fp_i    (fp),
    .full_o       (full[tpu_core_pkg::UnitStore]),
    .fp_valid_o   (fp_valid[tpu_core_pkg::UnitStore*QueueDepth +: QueueDepth]),
    .fps_o        (fps[tpu_core_pkg::UnitStore*QBits +: QBits]),
    .aw_valid_o   (m_axi_awvalid),
    .aw_ready_i   (m_axi_awready),
    .aw_addr_o    (m_axi_awaddr),
    .aw_len_o     (m_axi_awlen),
    .aw_size_o    (m_axi_awsize),
    .w_valid_o    (m_axi_wvalid),
    .w_ready_i    (m_axi_wready),
    .w_data_o     (m_axi_wdata),
    .w_strb_o     (m_axi_wstrb),
    .w_last_o     (m_axi_wlast),
    .b_valid_i    (m_axi_bvalid),
    .b_ready_o    (m_axi_bready),
    .b_resp_i     (m_axi_bresp),
    .ub_rd_req_o  (ub_rd_req[UbRdStore]),
    .ub_rd_addr_o (ub_rd_addr[UbRdStore*UbAddrWidth +: UbAddrWidth]),
    .ub_rd_gnt_i  (ub_rd_gnt[UbRdStore]),
    .ub_rd_data_i (ub_rd_data[UbRdStore*Dim*16 +: Dim*16]),
    .acc_rd_req_o (acc_rd_req[AccRdStore]),
    .acc_rd_addr_o(acc_rd_addr[AccRdStore*AccAddrWidth +: AccAddrWidth]),
    .acc_rd_gnt_i (acc_rd_gnt[AccRdStore]),
    .acc_rd_data_i(acc_rd_data[AccRdStore*Dim*32 +: Dim*32]),
    .bus_error_o  (store_error),
    .pc_o         (store_pc),
    .axi_quiet_o  (store_quiet),
    .idle_o       (unit_idle[tpu_core_pkg::UnitStore])
  );

  // ---------------------------------------------------------------------------
  // The collective unit and the inter-chip links
  // ---------------------------------------------------------------------------
  logic        coll_error, coll_sent, coll_received, coll_stall;
  logic [7:0]  coll_error_code;
  logic [23:0] coll_pc;

  if (Links) begin : g_collective
    tpu_collective_unit #(
      .Dim(Dim), .AddStages(AddStages), .AccDepth(AccDepth), .QueueDepth(QueueDepth),
      .LinkLanes(LinkLanes), .LinkCredits(LinkCredits)
    ) u_collective (
      .clk_i, .rst_ni(core_rst_n[RstColl]),
      .abort_i        (abort_coll),
      .push_i         (push[tpu_core_pkg::UnitCollective]),
      .push_op_i      (op),
      .push_fp_i      (fp),
      .full_o         (full[tpu_core_pkg::UnitCollective]),
      .fp_valid_o     (fp_valid[tpu_core_pkg::UnitCollective*QueueDepth +: QueueDepth]),
      .fps_o          (fps[tpu_core_pkg::UnitCollective*QBits +: QBits]),
      .pod_id_i       (ctrl_i.pod_id),
      .pod_size_i     (ctrl_i.pod_size),
      .link_timeout_i (ctrl_i.link_timeout),
      .send_rd_req_o  (acc_rd_req[AccRdCollSend]),
      .send_rd_addr_o (acc_rd_addr[AccRdCollSend*AccAddrWidth +: AccAddrWidth]),
      .send_rd_gnt_i  (acc_rd_gnt[AccRdCollSend]),
      .send_rd_data_i (acc_rd_data[AccRdCollSend*Dim*32 +: Dim*32]),
      .recv_rd_req_o  (acc_rd_req[AccRdCollAdd]),
      .recv_rd_addr_o (acc_rd_addr[AccRdCollAdd*AccAddrWidth +: AccAddrWidth]),
      .recv_rd_gnt_i  (acc_rd_gnt[AccRdCollAdd]),
      .recv_rd_data_i (acc_rd_data[AccRdCollAdd*Dim*32 +: Dim*32]),
      .wr_req_o       (acc_wr_req[AccWrColl]),
      .wr_addr_o      (acc_wr_addr[AccWrColl*AccAddrWidth +: AccAddrWidth]),
      .wr_data_o      (acc_wr_data[AccWrColl*Dim*32 +: Dim*32]),
      .wr_gnt_i       (acc_wr_gnt[AccWrColl]),
      .tx_valid_o     (link_tx_valid_o),
      .tx_head_o      (link_tx_head_o),
      .tx_data_o      (link_tx_data_o),
      .tx_credit_i    (link_tx_credit_i),
      .rx_valid_i     (link_rx_valid_i),
      .rx_head_i      (link_rx_head_i),
      .rx_data_i      (link_rx_data_i),
      .rx_credit_o    (link_rx_credit_o),
      .error_o        (coll_error),
      .error_code_o   (coll_error_code),
      .pc_o           (coll_pc),
      .sent_beat_o    (coll_sent),
      .received_beat_o(coll_received),
      .stall_o        (coll_stall),
      .idle_o         (unit_idle[tpu_core_pkg::UnitCollective])
    );
  end else begin : g_no_collective
    assign full[tpu_core_pkg::UnitCollective]      = 1'b0;
    assign unit_idle[tpu_core_pkg::UnitCollective] = 1'b1;
    assign fp_valid[tpu_core_pkg::UnitCollective*QueueDepth +: QueueDepth] = '0;
    assign fps[tpu_core_pkg::UnitCollective*QBits +: QBits] = '0;
    assign link_tx_valid_o  = 1'b0;
    assign link_tx_head_o   = 1'b0;
    assign link_tx_data_o   = '0;
    assign link_rx_credit_o = 1'b0;
    assign coll_error       = 1'b0;
    assign coll_error_code  = tpu_regs_pkg::ErrNone;
    assign coll_pc          = '0;
    assign coll_sent        = 1'b0;
    assign coll_received    = 1'b0;
    assign coll_stall       = 1'b0;
    logic unused_links;
    assign unused_links = ^{link_tx_credit_i, link_rx_valid_i, link_rx_head_i, link_rx_data_i,
                            ctrl_i.pod_id, ctrl_i.pod_size, ctrl_i.link_timeout, abort_coll,
                            push[tpu_core_pkg::UnitCollective]};
  end

  // ---------------------------------------------------------------------------
  // The vector unit
  // ---------------------------------------------------------------------------
  logic vector_busy;

  if (Vector) begin : g_vector
    tpu_vector_unit #(
      .Dim(Dim), .Lanes(VectorLanes), .UbDepth(UbDepth), .AccDepth(AccDepth),
      .QueueDepth(QueueDepth)
    ) u_vector (
      .clk_i, .rst_ni(core_rst_n[RstVector]),
      .push_i       (push[tpu_core_pkg::UnitVector]),
      .push_op_i    (op),
      .push_fp_i    (fp),
      .full_o       (full[tpu_core_pkg::UnitVector]),
      .fp_valid_o   (fp_valid[tpu_core_pkg::UnitVector*QueueDepth +: QueueDepth]),
      .fps_o        (fps[tpu_core_pkg::UnitVector*QBits +: QBits]),
      .ub_rd_req_o  (ub_rd_req[UbRdVector]),
      .ub_rd_addr_o (ub_rd_addr[UbRdVector*UbAddrWidth +: UbAddrWidth]),
      .ub_rd_gnt_i  (ub_rd_gnt[UbRdVector]),
      .ub_rd_data_i (ub_rd_data[UbRdVector*Dim*16 +: Dim*16]),
      .acc_rd_req_o (acc_rd_req[AccRdVector]),
      .acc_rd_addr_o(acc_rd_addr[AccRdVector*AccAddrWidth +: AccAddrWidth]),
      .acc_rd_gnt_i (acc_rd_gnt[AccRdVector]),
      .acc_rd_data_i(acc_rd_data[AccRdVector*Dim*32 +: Dim*32]),
      .acc_wr_req_o (acc_wr_req[AccWrVector]),
      .acc_wr_addr_o(acc_wr_addr[AccWrVector*AccAddrWidth +: AccAddrWidth]),
      .acc_wr_data_o(acc_wr_data[AccWrVector*Dim*32 +: Dim*32]),
      .acc_wr_gnt_i (acc_wr_gnt[AccWrVector]),
      .busy_o       (vector_busy),
      .idle_o       (unit_idle[tpu_core_pkg::UnitVector])
    );
  end else begin : g_no_vector
    assign full[tpu_core_pkg::UnitVector]      = 1'b0;
    assign unit_idle[tpu_core_pkg::UnitVector] = 1'b1;
    assign fp_valid[tpu_core_pkg::UnitVector*QueueDepth +: QueueDepth] = '0;
    assign fps[tpu_core_pkg::UnitVector*QBits +: QBits] = '0;
    assign vector_busy = 1'b0;
    logic unused_vector;
    assign unused_vector = ^{push[tpu_core_pkg::UnitVector], core_rst_n[RstVector]};
  end

  // ---------------------------------------------------------------------------
  // Bus and link errors of the units stop the core (write errors before read
  // errors in the same cycle, bus errors before link errors; the instruction
  // the failing unit was running is named). An instruction that could not be
  // fetched is reported by the issue stage when it comes to that instruction.
  // ---------------------------------------------------------------------------
  always_comb begin
    bus_error      = load_error || weight_error || store_error || coll_error;
    bus_error_code = store_error ? tpu_regs_pkg::ErrBusWrite : tpu_regs_pkg::ErrBusRead;
    bus_error_pc   = status_o.pc;
    if (store_error)       bus_error_pc = store_pc;
    else if (load_error)   bus_error_pc = load_pc;
    else if (weight_error) bus_error_pc = weight_pc;
    else if (coll_error) begin
      bus_error_code = coll_error_code;
      bus_error_pc   = coll_pc;
    end
  end

  assign axi_quiet = load_quiet && weight_quiet && store_quiet;

  // ---------------------------------------------------------------------------
  // Performance counters: every cycle of a run falls in exactly one of the
  // array categories (the TPU v1 paper's utilisation table).
  // ---------------------------------------------------------------------------
  always_comb begin
    counter_event_o = '0;
    useful_macs_o   = '0;
    if (act_fire) begin
      counter_event_o[tpu_regs_pkg::CntArrayActiveIndex] = 1'b1;
      useful_macs_o = act_macs;
    end else if (weight_wait) begin
      if (weight_fifo_empty) counter_event_o[tpu_regs_pkg::CntWeightStallIndex] = 1'b1;
      else                   counter_event_o[tpu_regs_pkg::CntWeightShiftIndex] = 1'b1;
    end else if (mm_reading && pending_wait) begin
      counter_event_o[tpu_regs_pkg::CntRawStallIndex] = 1'b1;
    end else if (!mm_reading && mm_wait_input) begin
      counter_event_o[tpu_regs_pkg::CntInputStallIndex] = 1'b1;
    end else if (!mm_reading && mm_wait_other) begin
      counter_event_o[tpu_regs_pkg::CntRawStallIndex] = 1'b1;
    end else begin
      counter_event_o[tpu_regs_pkg::CntNonMatrixIndex] = 1'b1;
    end
    counter_event_o[tpu_regs_pkg::CntInstructionsIndex] = issued;
    counter_event_o[tpu_regs_pkg::CntLinkSentBeatsIndex]     = coll_sent;
    counter_event_o[tpu_regs_pkg::CntLinkReceivedBeatsIndex] = coll_received;
    counter_event_o[tpu_regs_pkg::CntLinkStallIndex]         = coll_stall;
    counter_event_o[tpu_regs_pkg::CntVectorBusyIndex]        = vector_busy;
  end

endmodule
