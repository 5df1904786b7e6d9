// An on-chip memory (the unified buffer or the accumulators) built from two
// block-RAM banks, each with one write port and one read port. The bank is the
// top address bit, so a program that keeps the array's operands in one half
// and the activation unit's or the DMA's in the other never makes them wait
// for each other (the TPU v1 accumulators are split the same way).
//
// Several clients share each port. Per bank and per cycle, the lowest-numbered
// requesting client is granted (clients are listed in priority order, the
// matrix unit first). A granted write happens at the clock edge; a granted
// read returns its row on rd_data_o the next cycle.
//
// With MirrorRd, every bank has a second copy that takes the same writes, and
// the last MirrorRd read clients read that copy among themselves: a read port
// more, for a unit that must read two rows a cycle (the collective unit sends
// one row while it adds another), at the price of the memory twice over.
module tpu_banked_mem #(
  parameter int unsigned Width = 32,
  parameter int unsigned Depth = 1024,
  parameter int unsigned NumWr = 2,
  parameter int unsigned NumRd = 2,
  parameter int unsigned MirrorRd = 0,
  localparam int unsigned AddrWidth = $clog2(Depth)
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,

  input  logic [NumWr-1:0]           wr_req_i,
  input  logic [NumWr*AddrWidth-1:0] wr_addr_i,
  input  logic [NumWr*Width-1:0]     wr_data_i,
  output logic [NumWr-1:0]           wr_gnt_o,

  input  logic [NumRd-1:0]           rd_req_i,
  input  logic [NumRd*AddrWidth-1:0] rd_addr_i,
  output logic [NumRd-1:0]           rd_gnt_o,
  output logic [NumRd*Width-1:0]     rd_data_o
);

  if (Depth < 4 || (Depth & (Depth - 1)) != 0) begin : g_bad_depth
    $error("tpu_banked_mem: Depth must be a power of two >= 4");
  end
  if (NumWr < 1 || NumRd < 1) begin : g_bad_clients
    $error("tpu_banked_mem: at least one write and one read client");
  end
  if (MirrorRd >= NumRd) begin : g_bad_mirror
    $error("tpu_banked_mem: MirrorRd must leave at least one client on the first copy");
  end

  localparam int unsigned NumCopies = (MirrorRd > 0) ? 2 : 1;
  localparam int unsigned FirstMirror = NumRd - MirrorRd;  // the first client of the mirror

  localparam int unsigned BankDepth = Depth / 2;
  localparam int unsigned BankAddrWidth = AddrWidth - 1;

  // Read ports are indexed copy * 2 + bank.
  logic [1:0]                     bank_wr_en;
  logic [2*BankAddrWidth-1:0]     bank_wr_addr;
  logic [2*Width-1:0]             bank_wr_data;
  logic [2*NumCopies-1:0]         bank_rd_en;
  logic [2*NumCopies*BankAddrWidth-1:0] bank_rd_addr;
  logic [2*NumCopies*Width-1:0]   bank_rd_data;
  logic [NumRd-1:0]               rd_bank_d, rd_bank_q;

  function automatic int unsigned copy_of(input int unsigned client);
    copy_of = (MirrorRd > 0 && client >= FirstMirror) ? 1 : 0;
  endfunction

  always_comb begin
    bank_wr_en   = '0;
    bank_rd_en   = '0;
    bank_wr_addr = '0;
    bank_rd_addr = '0;
    bank_wr_data = '0;
    wr_gnt_o     = '0;
    rd_gnt_o     = '0;
    rd_bank_d    = rd_bank_q;

    // Fixed priority: walk from the lowest priority up, so the last (highest
    // priority) requester of a bank is the one left standing.
    for (int c = NumWr - 1; c >= 0; c--) begin
      if (wr_req_i[c]) begin
        for (int b = 0; b < 2; b++) begin
          if (wr_addr_i[c*AddrWidth + AddrWidth - 1] == b[0]) begin
            bank_wr_en[b] = 1'b1;
            bank_wr_addr[b*BankAddrWidth +: BankAddrWidth] =
                wr_addr_i[c*AddrWidth +: BankAddrWidth];
            bank_wr_data[b*Width +: Width] = wr_data_i[c*Width +: Width];
          end
        end
      end
    end
    for (int c = 0; c < NumWr; c++) begin
      wr_gnt_o[c] = wr_req_i[c];
      for (int h = 0; h < c; h++) begin
        if (wr_req_i[h] && wr_addr_i[h*AddrWidth + AddrWidth - 1] ==
                           wr_addr_i[c*AddrWidth + AddrWidth - 1]) begin
          wr_gnt_o[c] = 1'b0;
        end
      end
    end

    for (int c = NumRd - 1; c >= 0; c--) begin
      if (rd_req_i[c]) begin
        for (int b = 0; b < 2; b++) begin
          if (rd_addr_i[c*AddrWidth + AddrWidth - 1] == b[0]) begin
            bank_rd_en[copy_of(c)*2 + b] = 1'b1;
            bank_rd_addr[(copy_of(c)*2 + b)*BankAddrWidth +: BankAddrWidth] =
                rd_addr_i[c*AddrWidth +: BankAddrWidth];
          end
        end
      end
    end
    for (int c = 0; c < NumRd; c++) begin
      rd_gnt_o[c] = rd_req_i[c];
      for (int h = 0; h < c; h++) begin
        if (rd_req_i[h] && copy_of(h) == copy_of(c) &&
            rd_addr_i[h*AddrWidth + AddrWidth - 1] == rd_addr_i[c*AddrWidth + AddrWidth - 1]) begin
          rd_gnt_o[c] = 1'b0;
        end
      end
      if (rd_gnt_o[c]) rd_bank_d[c] = rd_addr_i[c*AddrWidth + AddrWidth - 1];
      rd_data_o[c*Width +: Width] =
          bank_rd_data[(copy_of(c)*2 + 32'(rd_bank_q[c]))*Width +: Width];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) rd_bank_q <= '0;
    else         rd_bank_q <= rd_bank_d;
  end

  for (genvar p = 0; p < 2 * NumCopies; p++) begin : g_bank
    localparam int unsigned B = p % 2;
    tpu_ram_sdp #(.Width(Width), .Depth(BankDepth)) u_ram (
      .clk_i,
      .wr_en_i  (bank_wr_en[B]),
      .wr_addr_i(bank_wr_addr[B*BankAddrWidth +: BankAddrWidth]),
      .wr_data_i(bank_wr_data[B*Width +: Width]),
      .rd_en_i  (bank_rd_en[p]),
      .rd_addr_i(bank_rd_addr[p*BankAddrWidth +: BankAddrWidth]),
      .rd_data_o(bank_rd_data[p*Width +: Width])
    );
  end

endmodule
