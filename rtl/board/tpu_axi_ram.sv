// Board memory: block RAM behind an AXI4 slave, standing in for host memory on
// an FPGA board, with a byte-wide side port for the host link.
//
// The slave takes one read burst and one write burst at a time (reads and
// writes run side by side), INCR bursts of full or narrow beats with addresses
// aligned to the beat size, as tpu_top issues them. It returns read data at one
// beat per cycle. A beat outside the memory is not carried out and answered
// with SLVERR (a read beat's data are zero).
//
// The side port gets a RAM port in a cycle the AXI4 side leaves it free; the
// host link only uses it while the core is idle, so it rarely waits.
`include "tpu_assert.svh"

module tpu_axi_ram #(
  parameter int unsigned BusBytes = 16,
  parameter int unsigned MemBytes = 131072,  // a power of two, at least 2 * BusBytes
  parameter int unsigned IdWidth  = 2,
  localparam int unsigned BusBits      = BusBytes * 8,
  localparam int unsigned MemAddrWidth = $clog2(MemBytes)
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,

  input  logic [IdWidth-1:0]      s_axi_arid,
  input  logic [31:0]             s_axi_araddr,
  input  logic [7:0]              s_axi_arlen,
  input  logic [2:0]              s_axi_arsize,
  input  logic [1:0]              s_axi_arburst,
  input  logic                    s_axi_arvalid,
  output logic                    s_axi_arready,
  output logic [IdWidth-1:0]      s_axi_rid,
  output logic [BusBits-1:0]      s_axi_rdata,
  output logic [1:0]              s_axi_rresp,
  output logic                    s_axi_rlast,
  output logic                    s_axi_rvalid,
  input  logic                    s_axi_rready,
  input  logic [IdWidth-1:0]      s_axi_awid,
  input  logic [31:0]             s_axi_awaddr,
  input  logic [7:0]              s_axi_awlen,
  input  logic [2:0]              s_axi_awsize,
  input  logic [1:0]              s_axi_awburst,
  input  logic                    s_axi_awvalid,
  output logic                    s_axi_awready,
  input  logic [BusBits-1:0]      s_axi_wdata,
  input  logic [BusBytes-1:0]     s_axi_wstrb,
  input  logic                    s_axi_wlast,
  input  logic                    s_axi_wvalid,
  output logic                    s_axi_wready,
  output logic [IdWidth-1:0]      s_axi_bid,
  output logic [1:0]              s_axi_bresp,
  output logic                    s_axi_bvalid,
  input  logic                    s_axi_bready,

  // Side port, one byte per access, held until granted; read data follow one
  // cycle after the grant.
  input  logic                    side_req_i,
  input  logic                    side_we_i,
  input  logic [MemAddrWidth-1:0] side_addr_i,
  input  logic [7:0]              side_wdata_i,
  output logic                    side_gnt_o,
  output logic                    side_rvalid_o,
  output logic [7:0]              side_rdata_o
);

  localparam int unsigned BusLog2   = $clog2(BusBytes);
  localparam int unsigned Words     = MemBytes / BusBytes;
  localparam int unsigned WordWidth = MemAddrWidth - BusLog2;
  localparam logic [1:0]  RespOkay  = 2'b00;
  localparam logic [1:0]  RespSlvErr = 2'b10;

  if (BusBytes < 4 || BusBytes > 64 || (BusBytes & (BusBytes - 1)) != 0) begin : g_bad_bus
    $error("tpu_axi_ram: BusBytes must be a power of two in 4..64");
  end
  if (MemBytes < 2 * BusBytes || MemBytes > (1 << 30) || (MemBytes & (MemBytes - 1)) != 0)
  begin : g_bad_mem
    $error("tpu_axi_ram: MemBytes must be a power of two from 2 * BusBytes to 2^30");
  end

  // ---------------------------------------------------------------------------
  // The RAM: one write port with byte enables, one read port.
  // ---------------------------------------------------------------------------
  logic                 ram_we, ram_re;
  logic [WordWidth-1:0] ram_waddr, ram_raddr;
  logic [BusBits-1:0]   ram_wdata, ram_rdata;
  logic [BusBytes-1:0]  ram_wstrb;
  logic [BusBits-1:0]   mem [Words];

  always_ff @(posedge clk_i) begin
    for (int b = 0; b < BusBytes; b++) begin
      if (ram_we && ram_wstrb[b]) mem[ram_waddr][8*b +: 8] <= ram_wdata[8*b +: 8];
    end
    if (ram_re) ram_rdata <= mem[ram_raddr];
  end

  // A burst's address is kept as its offset in the memory and a flag that it
  // has left the memory: a 32-bit address needs no more, since a burst that
  // leaves the memory never comes back into it (the flag stays set). MemBytes
  // is a power of two, so an address is outside if a bit above the offset is
  // set (a >= would cost Yosys a 32-bit carry chain).

  // The next beat's address in an INCR burst, the aligned address plus the
  // beat size, with the carry out of the memory on top.
  function automatic logic [MemAddrWidth:0] next_beat(input logic [MemAddrWidth-1:0] addr,
                                                      input logic [2:0] size);
    logic [MemAddrWidth:0] step;
    step = (MemAddrWidth + 1)'(1) << size;
    next_beat = ({1'b0, addr} & ~(step - 1)) + step;
  endfunction

  // ---------------------------------------------------------------------------
  // Reads: the burst's beats are read one per cycle into a two-entry output
  // FIFO, as long as it has room for the beat in flight.
  // ---------------------------------------------------------------------------
  logic               rd_active_d, rd_active_q;
  logic [IdWidth-1:0] rd_id_d, rd_id_q;
  logic [MemAddrWidth-1:0] rd_addr_d, rd_addr_q;
  logic               rd_out_d, rd_out_q;       // the beat's address is outside the memory
  logic [MemAddrWidth:0] rd_next;
  logic [2:0]         rd_size_d, rd_size_q;
  logic [7:0]         rd_left_d, rd_left_q;     // beats after the next one
  logic               issued_d, issued_q;       // a beat read last cycle lands now
  logic               issued_err_d, issued_err_q, issued_last_d, issued_last_q;
  logic               issue_rd, out_valid, pop;
  logic [1:0]         out_count;
  logic [BusBits+IdWidth+1:0] out_data;
  logic               unused_out_ready;

  assign s_axi_arready = !rd_active_q;

  always_comb begin
    pop           = out_valid && s_axi_rready;
    // Room for the beat issued now, after the one in flight and those queued.
    issue_rd      = rd_active_q && (2'(out_count) + 2'(issued_q) - 2'(pop)) < 2'd2;

    rd_active_d   = rd_active_q;
    rd_id_d       = rd_id_q;
    rd_addr_d     = rd_addr_q;
    rd_out_d      = rd_out_q;
    rd_size_d     = rd_size_q;
    rd_left_d     = rd_left_q;
    rd_next       = next_beat(rd_addr_q, rd_size_q);
    issued_d      = issue_rd;
    issued_err_d  = issue_rd && rd_out_q;
    issued_last_d = issue_rd && rd_left_q == '0;
    if (s_axi_arvalid && s_axi_arready) begin
      rd_active_d = 1'b1;
      rd_id_d     = s_axi_arid;
      rd_addr_d   = s_axi_araddr[MemAddrWidth-1:0];
      rd_out_d    = s_axi_araddr[31:MemAddrWidth] != '0;
      rd_size_d   = s_axi_arsize;
      rd_left_d   = s_axi_arlen;
    end else if (issue_rd) begin
      rd_addr_d = rd_next[MemAddrWidth-1:0];
      rd_out_d  = rd_out_q || rd_next[MemAddrWidth];
      rd_left_d = rd_left_q - 1'b1;
      if (rd_left_q == '0) rd_active_d = 1'b0;
    end
  end

  tpu_fifo #(.Width(BusBits + IdWidth + 2), .Depth(2)) u_rd_out (
    .clk_i, .rst_ni,
    .in_valid_i (issued_q),
    .in_ready_o (unused_out_ready),
    .in_data_i  ({rd_id_q, issued_last_q, issued_err_q, issued_err_q ? '0 : ram_rdata}),
    .out_valid_o(out_valid),
    .out_ready_i(s_axi_rready),
    .out_data_o (out_data),
    .count_o    (out_count)
  );

  assign s_axi_rvalid = out_valid;
  assign s_axi_rlast  = out_data[BusBits+1];
  assign s_axi_rresp  = out_data[BusBits] ? RespSlvErr : RespOkay;
  assign s_axi_rdata  = out_data[BusBits-1:0];
  assign s_axi_rid    = out_data[BusBits+2 +: IdWidth];

  // ---------------------------------------------------------------------------
  // Writes: a beat is written in the cycle it is taken; the response follows
  // the last beat.
  // ---------------------------------------------------------------------------
  logic               wr_active_d, wr_active_q;
  logic [IdWidth-1:0] wr_id_d, wr_id_q;
  logic [MemAddrWidth-1:0] wr_addr_d, wr_addr_q;
  logic               wr_out_d, wr_out_q;       // the beat's address is outside the memory
  logic [MemAddrWidth:0] wr_next;
  logic [2:0]         wr_size_d, wr_size_q;
  logic               wr_err_d, wr_err_q;
  logic               b_valid_d, b_valid_q, b_err_d, b_err_q;
  logic               take_w;

  assign s_axi_awready = !wr_active_q && !b_valid_q;
  assign s_axi_wready  = wr_active_q;

  always_comb begin
    take_w      = s_axi_wvalid && s_axi_wready;

    wr_active_d = wr_active_q;
    wr_id_d     = wr_id_q;
    wr_addr_d   = wr_addr_q;
    wr_out_d    = wr_out_q;
    wr_next     = next_beat(wr_addr_q, wr_size_q);
    wr_size_d   = wr_size_q;
    wr_err_d    = wr_err_q;
    b_valid_d   = b_valid_q && !s_axi_bready;
    b_err_d     = b_err_q;
    if (s_axi_awvalid && s_axi_awready) begin
      wr_active_d = 1'b1;
      wr_id_d     = s_axi_awid;
      wr_addr_d   = s_axi_awaddr[MemAddrWidth-1:0];
      wr_out_d    = s_axi_awaddr[31:MemAddrWidth] != '0;
      wr_size_d   = s_axi_awsize;
      wr_err_d    = 1'b0;
    end
    if (take_w) begin
      wr_addr_d = wr_next[MemAddrWidth-1:0];
      wr_out_d  = wr_out_q || wr_next[MemAddrWidth];
      wr_err_d  = wr_err_q || wr_out_q;
      if (s_axi_wlast) begin
        wr_active_d = 1'b0;
        b_valid_d   = 1'b1;
        b_err_d     = wr_err_q || wr_out_q;
      end
    end
  end

  assign s_axi_bvalid = b_valid_q;
  assign s_axi_bresp  = b_err_q ? RespSlvErr : RespOkay;
  assign s_axi_bid    = wr_id_q;

  // ---------------------------------------------------------------------------
  // RAM ports: the AXI4 side first, the side port in a free cycle.
  // ---------------------------------------------------------------------------
  logic                     side_rd, side_wr, side_rvalid_d, side_rvalid_q;
  logic [BusLog2-1:0]       side_lane_d, side_lane_q;
  logic                     axi_wr;

  always_comb begin
    axi_wr  = take_w && !wr_out_q;
    side_rd = side_req_i && !side_we_i && !issue_rd;
    side_wr = side_req_i && side_we_i && !axi_wr;

    ram_re    = issue_rd || side_rd;
    ram_raddr = issue_rd ? rd_addr_q[MemAddrWidth-1:BusLog2] : side_addr_i[MemAddrWidth-1:BusLog2];
    ram_we    = axi_wr || side_wr;
    ram_waddr = axi_wr ? wr_addr_q[MemAddrWidth-1:BusLog2] : side_addr_i[MemAddrWidth-1:BusLog2];
    ram_wdata = axi_wr ? s_axi_wdata : {BusBytes{side_wdata_i}};
    ram_wstrb = axi_wr ? s_axi_wstrb
                       : BusBytes'(1) << side_addr_i[BusLog2-1:0];

    side_gnt_o    = side_rd || side_wr;
    side_rvalid_d = side_rd;
    side_lane_d   = side_rd ? side_addr_i[BusLog2-1:0] : side_lane_q;
  end

  assign side_rvalid_o = side_rvalid_q;
  assign side_rdata_o  = ram_rdata[8*side_lane_q +: 8];

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_active_q   <= 1'b0;
      rd_id_q       <= '0;
      rd_addr_q     <= '0;
      rd_out_q      <= 1'b0;
      rd_size_q     <= '0;
      rd_left_q     <= '0;
      issued_q      <= 1'b0;
      issued_err_q  <= 1'b0;
      issued_last_q <= 1'b0;
      wr_active_q   <= 1'b0;
      wr_id_q       <= '0;
      wr_addr_q     <= '0;
      wr_out_q      <= 1'b0;
      wr_size_q     <= '0;
      wr_err_q      <= 1'b0;
      b_valid_q     <= 1'b0;
      b_err_q       <= 1'b0;
      side_rvalid_q <= 1'b0;
      side_lane_q   <= '0;
    end else begin
      rd_active_q   <= rd_active_d;
      rd_id_q       <= rd_id_d;
      rd_addr_q     <= rd_addr_d;
      rd_out_q      <= rd_out_d;
      rd_size_q     <= rd_size_d;
      rd_left_q     <= rd_left_d;
      issued_q      <= issued_d;
      issued_err_q  <= issued_err_d;
      issued_last_q <= issued_last_d;
      wr_active_q   <= wr_active_d;
      wr_id_q       <= wr_id_d;
      wr_addr_q     <= wr_addr_d;
      wr_out_q      <= wr_out_d;
      wr_size_q     <= wr_size_d;
      wr_err_q      <= wr_err_d;
      b_valid_q     <= b_valid_d;
      b_err_q       <= b_err_d;
      side_rvalid_q <= side_rvalid_d;
      side_lane_q   <= side_lane_d;
    end
  end

  // INCR is the only burst type tpu_top issues (checked below); a write burst
  // ends at WLAST, which AXI4 requires to agree with AWLEN.
  logic unused_burst;
  assign unused_burst = ^{s_axi_arburst, s_axi_awburst, s_axi_awlen};

  `TPU_ASSUME(a_incr_reads,
              !s_axi_arvalid || (s_axi_arburst == 2'b01 && s_axi_arsize <= 3'(BusLog2)),
              "only INCR read bursts of at most the bus width are supported")
  `TPU_ASSUME(a_incr_writes,
              !s_axi_awvalid || (s_axi_awburst == 2'b01 && s_axi_awsize <= 3'(BusLog2)),
              "only INCR write bursts of at most the bus width are supported")
  `TPU_ASSUME(a_read_aligned,
              !s_axi_arvalid || ((s_axi_araddr & ((32'd1 << s_axi_arsize) - 1)) == '0),
              "a read burst address not aligned to its beat size")
  `TPU_ASSUME(a_write_aligned,
              !s_axi_awvalid || ((s_axi_awaddr & ((32'd1 << s_axi_awsize) - 1)) == '0),
              "a write burst address not aligned to its beat size")
  `TPU_ASSERT(a_wlast, !(take_w && s_axi_wlast) || wr_active_q, "WLAST outside a burst")
  `TPU_ASSERT(a_out_room, !issued_q || unused_out_ready, "a read beat landed in a full output FIFO")
  `TPU_ASSERT_NEXT(a_r_held, s_axi_rvalid && !s_axi_rready, s_axi_rvalid && $stable(s_axi_rdata),
                   "R beat withdrawn or changed before it was taken")
  `TPU_ASSERT_NEXT(a_b_held, s_axi_bvalid && !s_axi_bready, s_axi_bvalid && $stable(s_axi_bresp),
                   "B withdrawn or changed before it was taken")
  `TPU_ASSUME_NEXT(a_side_held, side_req_i && !side_gnt_o,
                   side_req_i && $stable({side_we_i, side_addr_i, side_wdata_i}),
                   "side request withdrawn or changed before its grant")

endmodule
