// The AXI4 master of the sequential core (tpu_seq_core): one 32-bit word per
// transaction, one transaction at a time. The sequential core moves one lane
// per step, so bursts would buy it nothing and cost the burst bookkeeping of
// the array core's DMA engines (tpu_axi_reader, tpu_axi_writer).
//
// A request (valid/ready) names a word-aligned address, and for a write the
// data and byte strobes. Its response is a one-cycle pulse on rsp_valid_o with
// the read data and whether the slave answered SLVERR or DECERR. The master
// takes a request only when the last one has been answered, and it is reset by
// the board reset alone: a core reset in the middle of a transaction lets the
// transaction finish (AXI4 has no way to abandon one), and the sequencer, back
// in its idle state, ignores the response.
`include "tpu_assert.svh"

module tpu_seq_bus #(
  localparam int unsigned IdWidth = 2
) (
  input  logic               clk_i,
  input  logic               rst_ni,

  input  logic               req_valid_i,
  output logic               req_ready_o,
  input  logic               req_write_i,
  input  logic [31:0]        req_addr_i,    // bits 1:0 are ignored
  input  logic [31:0]        req_wdata_i,
  input  logic [3:0]         req_wstrb_i,
  output logic               rsp_valid_o,
  output logic [31:0]        rsp_rdata_o,
  output logic               rsp_error_o,

  output logic [IdWidth-1:0] m_axi_arid,
  output logic [31:0]        m_axi_araddr,
  output logic [7:0]         m_axi_arlen,
  output logic [2:0]         m_axi_arsize,
  output logic               m_axi_arvalid,
  input  logic               m_axi_arready,
  input  logic [IdWidth-1:0] m_axi_rid,
  input  logic [31:0]        m_axi_rdata,
  input  logic [1:0]         m_axi_rresp,
  input  logic               m_axi_rlast,
  input  logic               m_axi_rvalid,
  output logic               m_axi_rready,
  output logic [31:0]        m_axi_awaddr,
  output logic [7:0]         m_axi_awlen,
  output logic [2:0]         m_axi_awsize,
  output logic               m_axi_awvalid,
  input  logic               m_axi_awready,
  output logic [31:0]        m_axi_wdata,
  output logic [3:0]         m_axi_wstrb,
  output logic               m_axi_wlast,
  output logic               m_axi_wvalid,
  input  logic               m_axi_wready,
  input  logic [IdWidth-1:0] m_axi_bid,
  input  logic [1:0]         m_axi_bresp,
  input  logic               m_axi_bvalid,
  output logic               m_axi_bready
);

  typedef enum logic [2:0] {
    StIdle,
    StReadAddr,   // AR offered
    StReadData,   // waiting for R
    StWrite,      // AW and W offered, each until taken
    StWriteResp   // waiting for B
  } state_e;

  state_e      state_d, state_q;
  logic [31:0] addr_d, addr_q, data_d, data_q;
  logic [3:0]  strb_d, strb_q;
  logic        aw_done_d, aw_done_q, w_done_d, w_done_q;
  logic        rsp_valid_d, rsp_valid_q, rsp_error_d, rsp_error_q;
  logic        unused_inputs;

  // Words are aligned; IDs are all zero; one beat is always the last; OKAY and
  // EXOKAY are both success.
  assign unused_inputs = ^{req_addr_i[1:0], m_axi_rid, m_axi_bid, m_axi_rlast, m_axi_rresp[0],
                           m_axi_bresp[0]};

  always_comb begin
    state_d     = state_q;
    addr_d      = addr_q;
    data_d      = data_q;
    strb_d      = strb_q;
    aw_done_d   = aw_done_q;
    w_done_d    = w_done_q;
    rsp_valid_d = 1'b0;
    rsp_error_d = rsp_error_q;

    unique case (state_q)
      StIdle: begin
        if (req_valid_i) begin
          addr_d    = {req_addr_i[31:2], 2'b00};
          data_d    = req_wdata_i;
          strb_d    = req_wstrb_i;
          aw_done_d = 1'b0;
          w_done_d  = 1'b0;
          state_d   = req_write_i ? StWrite : StReadAddr;
        end
      end
      StReadAddr: if (m_axi_arready) state_d = StReadData;
      StReadData: begin
        if (m_axi_rvalid) begin
          data_d      = m_axi_rdata;
          rsp_error_d = m_axi_rresp[1];
          rsp_valid_d = 1'b1;
          state_d     = StIdle;
        end
      end
      StWrite: begin
        if (m_axi_awready) aw_done_d = 1'b1;
        if (m_axi_wready)  w_done_d  = 1'b1;
        if ((aw_done_q || m_axi_awready) && (w_done_q || m_axi_wready)) state_d = StWriteResp;
      end
      StWriteResp: begin
        if (m_axi_bvalid) begin
          rsp_error_d = m_axi_bresp[1];
          rsp_valid_d = 1'b1;
          state_d     = StIdle;
        end
      end
      default: state_d = StIdle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q     <= StIdle;
      addr_q      <= '0;
      data_q      <= '0;
      strb_q      <= '0;
      aw_done_q   <= 1'b0;
      w_done_q    <= 1'b0;
      rsp_valid_q <= 1'b0;
      rsp_error_q <= 1'b0;
    end else begin
      state_q     <= state_d;
      addr_q      <= addr_d;
      data_q      <= data_d;
      strb_q      <= strb_d;
      aw_done_q   <= aw_done_d;
      w_done_q    <= w_done_d;
      rsp_valid_q <= rsp_valid_d;
      rsp_error_q <= rsp_error_d;
    end
  end

  assign req_ready_o = state_q == StIdle;
  assign rsp_valid_o = rsp_valid_q;
  assign rsp_rdata_o = data_q;
  assign rsp_error_o = rsp_error_q;

  // One beat of four bytes (tpu_top marks it INCR, as the array core's engines do).
  assign m_axi_arid    = '0;
  assign m_axi_araddr  = addr_q;
  assign m_axi_arlen   = 8'd0;
  assign m_axi_arsize  = 3'd2;
  assign m_axi_arvalid = state_q == StReadAddr;
  assign m_axi_rready  = state_q == StReadData;

  assign m_axi_awaddr  = addr_q;
  assign m_axi_awlen   = 8'd0;
  assign m_axi_awsize  = 3'd2;
  assign m_axi_awvalid = state_q == StWrite && !aw_done_q;
  assign m_axi_wdata   = data_q;
  assign m_axi_wstrb   = strb_q;
  assign m_axi_wlast   = 1'b1;
  assign m_axi_wvalid  = state_q == StWrite && !w_done_q;
  assign m_axi_bready  = state_q == StWriteResp;

  `TPU_ASSERT_NEXT(a_ar_stable, m_axi_arvalid && !m_axi_arready,
                   m_axi_arvalid && $stable(m_axi_araddr),
                   "AR withdrawn or changed before it was taken")
  `TPU_ASSERT_NEXT(a_aw_stable, m_axi_awvalid && !m_axi_awready,
                   m_axi_awvalid && $stable(m_axi_awaddr),
                   "AW withdrawn or changed before it was taken")
  `TPU_ASSERT_NEXT(a_w_stable, m_axi_wvalid && !m_axi_wready,
                   m_axi_wvalid && $stable(m_axi_wdata) && $stable(m_axi_wstrb),
                   "W withdrawn or changed before it was taken")
  `TPU_ASSUME(a_single_beat, !(m_axi_rvalid && m_axi_rready) || m_axi_rlast,
              "a single-beat read got a beat without RLAST")
  `TPU_ASSUME(a_no_stray_response,
              !(m_axi_rvalid && state_q != StReadData) && !(m_axi_bvalid && state_q != StWriteResp),
              "a response arrived with no transaction outstanding")

endmodule
