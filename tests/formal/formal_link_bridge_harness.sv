// Proof harness for tpu_link_bridge, the board end of the UART host link (docs/link.md). The
// bridge takes bytes from the UART receiver, so its byte port is driven directly and freely:
// any byte, with or without a framing error, in any cycle (back to back too, faster than a
// UART delivers), which covers every byte sequence the line can bring. Its partners (the UART
// transmitter, the core's registers, board memory) are free as well: they answer in any cycle
// or never, so there is nothing to assume but the reset. Proved, by the bridge's own checks:
//   - a request that stops arriving is answered: the frame states (Header, Payload, Crc) see
//     at most TimeoutCycles = FrameTimeoutBits * ClksPerBit cycles in a row without a byte
//     (a_frame_timeout; 2000 * 4 = 8000 here), whatever the bytes before it said: a length of
//     65535, a CRC that cannot match, a character without its stop bit;
//   - back to Hunt after any byte sequence: from the last byte of a request (or of what was
//     taken for one) the bridge is back in Hunt after at most ToHunt cycles of its own (8018
//     here: TimeoutCycles, then the TIMEOUT reply's 9 bytes loaded and taken; a complete
//     request needs at most 1 + 786, a READ_MEM of 256 bytes), and a partner holding it up
//     only adds the cycles it holds it up (a_to_hunt_bound, a_to_hunt_falls, a_to_hunt_held;
//     a_back_to_hunt bounds a run without hold-ups). So with partners that each answer within
//     Patience cycles, as the board's do, Hunt is back within ToHunt * (Patience + 1) cycles
//     of the last byte: every hold-up ends in a cycle of the bridge's own;
//   - a corrupt request (a CRC that does not match, a character without its stop bit) does
//     nothing and is answered CORRUPT (a_corrupt_answered);
//   - reply bytes, memory requests and AXI4-Lite requests held until taken, one register
//     access at a time, board memory accessed only for WRITE_MEM and READ_MEM.
// MemBytes and ClksPerBit are the least the bridge takes; MaxPayload and FrameTimeoutBits are
// the protocol's (rtl/defs/link.toml). Temporal induction closes at k = 2 with the invariants
// at the end of tpu_link_bridge.sv.
`include "tpu_assert.svh"

module formal_link_bridge_harness #(
  parameter int unsigned MemBytes   = 256,  // the least board memory: narrow addresses
  parameter int unsigned ClksPerBit = 4     // the fastest UART: the shortest timeout
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        rx_valid_i,
  input  logic [7:0]  rx_data_i,
  input  logic        rx_error_i,
  input  logic        tx_ready_i,
  input  logic        m_axil_awready,
  input  logic        m_axil_wready,
  input  logic [1:0]  m_axil_bresp,
  input  logic        m_axil_bvalid,
  input  logic        m_axil_arready,
  input  logic [31:0] m_axil_rdata,
  input  logic [1:0]  m_axil_rresp,
  input  logic        m_axil_rvalid,
  input  logic        mem_gnt_i,
  input  logic        mem_rvalid_i,
  input  logic [7:0]  mem_rdata_i
);

  localparam int unsigned MemAddrWidth = $clog2(MemBytes);
  localparam int unsigned RegAddrWidth = tpu_regs_pkg::RegAddrWidth;

  logic                    tx_valid, m_axil_awvalid, m_axil_wvalid, m_axil_bready;
  logic                    m_axil_arvalid, m_axil_rready, mem_req, mem_we;
  logic [7:0]              tx_data, mem_wdata;
  logic [RegAddrWidth-1:0] m_axil_awaddr, m_axil_araddr;
  logic [31:0]             m_axil_wdata;
  logic [3:0]              m_axil_wstrb;
  logic [MemAddrWidth-1:0] mem_addr;

  tpu_link_bridge #(.MemBytes(MemBytes), .ClksPerBit(ClksPerBit)) u_dut (
    .clk_i, .rst_ni,
    .rx_valid_i, .rx_data_i, .rx_error_i,
    .tx_valid_o(tx_valid), .tx_ready_i, .tx_data_o(tx_data),
    .m_axil_awaddr, .m_axil_awvalid, .m_axil_awready, .m_axil_wdata, .m_axil_wstrb,
    .m_axil_wvalid, .m_axil_wready, .m_axil_bresp, .m_axil_bvalid, .m_axil_bready,
    .m_axil_araddr, .m_axil_arvalid, .m_axil_arready, .m_axil_rdata, .m_axil_rresp,
    .m_axil_rvalid, .m_axil_rready,
    .mem_req_o(mem_req), .mem_we_o(mem_we), .mem_addr_o(mem_addr), .mem_wdata_o(mem_wdata),
    .mem_gnt_i, .mem_rvalid_i, .mem_rdata_i
  );

  // Reset in the first cycle, then none.
  logic started_q = 1'b0;
  always_ff @(posedge clk_i) started_q <= 1'b1;
  always_comb assume (rst_ni == started_q);

  logic unused;
  assign unused = ^{tx_valid, tx_data, m_axil_awaddr, m_axil_awvalid, m_axil_wdata, m_axil_wstrb,
                    m_axil_wvalid, m_axil_bready, m_axil_araddr, m_axil_arvalid, m_axil_rready,
                    mem_req, mem_we, mem_addr, mem_wdata};

endmodule
