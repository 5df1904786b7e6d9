// Simple dual-port RAM: one write port, one read port with a registered output
// (read data appear the cycle after the read). Written so that FPGA tools infer
// block RAM: the array and the read register have no reset, because block RAM
// has none; nothing may rely on their contents before they are written.
module tpu_ram_sdp #(
  parameter int unsigned Width = 32,
  parameter int unsigned Depth = 256
) (
  input  logic                     clk_i,

  input  logic                     wr_en_i,
  input  logic [$clog2(Depth)-1:0] wr_addr_i,
  input  logic [Width-1:0]         wr_data_i,

  input  logic                     rd_en_i,
  input  logic [$clog2(Depth)-1:0] rd_addr_i,
  output logic [Width-1:0]         rd_data_o
);

  if (Depth < 2) begin : g_bad_depth
    $error("tpu_ram_sdp: Depth must be >= 2");
  end

  logic [Width-1:0] mem [Depth];

  always_ff @(posedge clk_i) begin
    if (wr_en_i) mem[wr_addr_i] <= wr_data_i;
    if (rd_en_i) rd_data_o <= mem[rd_addr_i];
  end

endmodule
