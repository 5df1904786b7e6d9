// The sequential core's memories: one port, a read or a write a cycle, and a
// registered read. The sequencer (tpu_seq_ctrl) reads and writes each memory
// in different states, so a memory may map to single-ported RAM: the iCE40
// UP5K's four SPRAMs (synth_ice40 -spram) hold 1 Mbit, its 30 block RAMs
// 120 kbit.
module tpu_seq_ram #(
  parameter int unsigned Width = 32,
  parameter int unsigned Depth = 256
) (
  input  logic                     clk_i,

  input  logic                     wr_en_i,
  input  logic                     rd_en_i,
  input  logic [$clog2(Depth)-1:0] addr_i,
  input  logic [Width-1:0]         wr_data_i,
  output logic [Width-1:0]         rd_data_o
);

  if (Depth < 2) begin : g_bad_depth
    $error("tpu_seq_ram: Depth must be >= 2");
  end

  logic [Width-1:0] mem [Depth];

  // A write leaves the read data as they were, as the SPRAM does.
  always_ff @(posedge clk_i) begin
    if (wr_en_i) mem[addr_i] <= wr_data_i;
    else if (rd_en_i) rd_data_o <= mem[addr_i];
  end

`ifndef SYNTHESIS
  // A plain immediate check, not tpu_assert.svh's: the memory has no reset to qualify it with.
  always_ff @(posedge clk_i) begin
    a_one_access: assert (!(wr_en_i && rd_en_i));
  end
`endif

endmodule
