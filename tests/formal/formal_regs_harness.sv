// Proof harness for tpu_regs, the AXI4-Lite slave of tpu_top (docs/verification.md). The
// slave's own checks (B and R held until taken) are proved, its expectations of the master
// (AW, W and AR held until taken, counter increments in range) are the assumptions, and so
// are these, a fair master: it takes a response within Patience cycles. Proved here: one
// response for each request and none without one, a write taken within Patience + 1 cycles
// and answered in the next, AR refused only while a read is open, a read answered within
// ReadLatency cycles of being taken, and the
// registers' bytes written with their strobes read back.
`include "tpu_assert.svh"

module formal_regs_harness #(
  parameter bit          CounterRam = 1'b0,
  parameter int unsigned Patience   = 3
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic [11:0] s_awaddr_i,
  input  logic        s_awvalid_i,
  input  logic [31:0] s_wdata_i,
  input  logic [3:0]  s_wstrb_i,
  input  logic        s_wvalid_i,
  input  logic        s_bready_i,
  input  logic [11:0] s_araddr_i,
  input  logic        s_arvalid_i,
  input  logic        s_rready_i,
  input  logic        busy_i,
  input  logic        done_i,
  input  logic        error_i,
  input  logic [7:0]  error_code_i,
  input  logic [23:0] error_pc_i,
  input  logic [23:0] pc_i,
  input  logic [14*18-1:0] counter_add_i
);

  localparam int unsigned NumCounters = tpu_regs_pkg::CounterCount;
  // A LO read of a counter in block RAM waits for the RAM's scan (tpu_regs).
  localparam int unsigned ReadLatency = CounterRam ? NumCounters + 2 : 1;

  logic        s_awready, s_wready, s_bvalid, s_arready, s_rvalid;
  logic [1:0]  s_bresp, s_rresp;
  logic [31:0] s_rdata;
  logic        core_reset_req, start, irq;
  logic [31:0] prog_addr, link_timeout;
  logic [23:0] prog_count;
  logic [7:0]  pod_id, pod_size;

  tpu_regs #(.CounterWidth(32), .CounterRam(CounterRam)) u_dut (
    .clk_i, .rst_ni,
    .s_awaddr_i, .s_awvalid_i, .s_awready_o(s_awready),
    .s_wdata_i, .s_wstrb_i, .s_wvalid_i, .s_wready_o(s_wready),
    .s_bresp_o(s_bresp), .s_bvalid_o(s_bvalid), .s_bready_i,
    .s_araddr_i, .s_arvalid_i, .s_arready_o(s_arready),
    .s_rdata_o(s_rdata), .s_rresp_o(s_rresp), .s_rvalid_o(s_rvalid), .s_rready_i,
    .core_reset_req_o(core_reset_req), .start_o(start), .prog_addr_o(prog_addr),
    .prog_count_o(prog_count), .pod_id_o(pod_id), .pod_size_o(pod_size),
    .link_timeout_o(link_timeout), .irq_o(irq),
    .busy_i, .done_i, .error_i, .error_code_i, .error_pc_i, .pc_i, .counter_add_i
  );

  // Reset in the first cycle, then none.
  logic started_q = 1'b0;
  always_ff @(posedge clk_i) started_q <= 1'b1;
  always_comb assume (rst_ni == started_q);

  // The fair master.
  `TPU_ASSUME_WITHIN(m_takes_b, s_bvalid && !s_bready_i, Patience, "B not taken in time")
  `TPU_ASSUME_WITHIN(m_takes_r, s_rvalid && !s_rready_i, Patience, "R not taken in time")

  // Requests taken and not yet answered.
  logic write_taken, read_taken, write_answered, read_answered;
  logic write_open_q, read_open_q;
  assign write_taken    = s_awvalid_i && s_awready;
  assign read_taken     = s_arvalid_i && s_arready;
  assign write_answered = s_bvalid && s_bready_i;
  assign read_answered  = s_rvalid && s_rready_i;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      write_open_q <= 1'b0;
      read_open_q  <= 1'b0;
    end else begin
      write_open_q <= write_taken || (write_open_q && !write_answered);
      read_open_q  <= read_taken || (read_open_q && !read_answered);
    end
  end

  `TPU_ASSERT(a_aw_with_w, s_awready == s_wready, "AW and W are taken together")
  `TPU_ASSERT(a_one_write, !(write_taken && write_open_q && !write_answered),
              "a second write taken before the first was answered")
  `TPU_ASSERT(a_one_read, !(read_taken && read_open_q && !read_answered),
              "a second read taken before the first was answered")
  // B is valid exactly while a write is open: none without one, one for each.
  `TPU_ASSERT(a_b_for_a_write, s_bvalid == write_open_q, "B without a write, or none for one")
  `TPU_ASSERT(a_r_for_a_read, !s_rvalid || read_open_q, "R without a read")
  if (!CounterRam) begin : g_r_at_once
    `TPU_ASSERT(a_r_while_open, s_rvalid == read_open_q, "no R for a read taken")
  end
  `TPU_ASSERT_NEXT(a_b_next, write_taken, s_bvalid, "B not in the cycle after the write")
  `TPU_ASSERT_WITHIN(a_write_taken, s_awvalid_i && s_wvalid_i && !s_awready, Patience + 1,
                     "a write waited too long to be taken")
  `TPU_ASSERT_WITHIN(a_read_answered, read_open_q && !s_rvalid, ReadLatency - 1,
                     "a read waited too long for R")

  // AR waits only behind an R not yet taken, or a read waiting for its counter: with the fair
  // master, a read is taken within Patience + ReadLatency cycles.
  `TPU_ASSERT(a_ar_behind_r, s_arready || read_open_q, "AR refused with no read open")

  // Read-back: PROG_ADDR after a write holds the bytes the strobes chose. The model is
  // written from AXI's byte strobes, not from tpu_regs' mask.
  logic [31:0] prog_addr_model_q;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      prog_addr_model_q <= '0;
    end else if (write_taken && s_awaddr_i == tpu_regs_pkg::RegProgAddr) begin
      for (int b = 0; b < 4; b++) begin
        if (s_wstrb_i[b]) prog_addr_model_q[b*8 +: 8] <= s_wdata_i[b*8 +: 8];
      end
    end
  end
  `TPU_ASSERT(a_prog_addr, prog_addr == prog_addr_model_q, "PROG_ADDR lost a written byte")

  logic unused;
  assign unused = ^{s_bresp, s_rresp, s_rdata, core_reset_req, start, irq, link_timeout,
                    prog_count, pod_id, pod_size};

endmodule
