// The sequential core's memories: a simple dual-port RAM with a registered
// read, like tpu_ram_sdp, for a user that never reads and writes one address
// in the same cycle. The sequencer (tpu_seq_ctrl) reads and writes each memory
// in different states, so no_rw_check tells Yosys to leave out the collision
// bypass it would otherwise build around the block RAM: on an iCE40 some forty
// flip-flops and LUTs per memory, which the smallest boards cannot spare.
module tpu_seq_ram #(
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
    $error("tpu_seq_ram: Depth must be >= 2");
  end

  (* no_rw_check *) logic [Width-1:0] mem [Depth];

  always_ff @(posedge clk_i) begin
    if (wr_en_i) mem[wr_addr_i] <= wr_data_i;
    if (rd_en_i) rd_data_o <= mem[rd_addr_i];
  end

`ifndef SYNTHESIS
  a_no_collision: assert property (@(posedge clk_i)
      !(wr_en_i && rd_en_i && wr_addr_i == rd_addr_i))
    else $error("tpu_seq_ram: a read and a write of one address in one cycle");
`endif

endmodule
