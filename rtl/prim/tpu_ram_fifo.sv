// First-word-fall-through FIFO whose storage is a block RAM (tpu_ram_sdp),
// with valid/ready on both sides and one beat per cycle each way. The RAM's
// registered read feeds a two-entry output buffer, so a beat that is read
// always has a place to land. Holds up to Depth + 2 entries.
`include "tpu_assert.svh"

module tpu_ram_fifo #(
  parameter int unsigned Width = 32,
  parameter int unsigned Depth = 16
) (
  input  logic             clk_i,
  input  logic             rst_ni,

  input  logic             in_valid_i,
  output logic             in_ready_o,
  input  logic [Width-1:0] in_data_i,

  output logic             out_valid_o,
  input  logic             out_ready_i,
  output logic [Width-1:0] out_data_o,

  // Entries held in the RAM (not counting the output buffer).
  output logic [$clog2(Depth+1)-1:0] ram_count_o
);

  if (Depth < 2) begin : g_bad_depth
    $error("tpu_ram_fifo: Depth must be >= 2");
  end

  localparam int unsigned PtrWidth    = $clog2(Depth);
  localparam int unsigned CountWidth  = $clog2(Depth + 1);
  localparam int unsigned LastSlotIdx = Depth - 1;
  localparam logic [PtrWidth-1:0]   LastSlot  = LastSlotIdx[PtrWidth-1:0];
  localparam logic [CountWidth-1:0] FullCount = Depth[CountWidth-1:0];

  logic [PtrWidth-1:0]   wr_ptr_d, wr_ptr_q, rd_ptr_d, rd_ptr_q;
  logic [CountWidth-1:0] count_d, count_q;
  logic                  read_inflight_d, read_inflight_q;
  logic                  push, read;
  logic [1:0]            out_count;
  logic [Width-1:0]      ram_data;
  logic                  out_in_ready;

  always_comb begin
    in_ready_o = count_q != FullCount;
    push       = in_valid_i && in_ready_o;
    // Read when the output buffer will have room for the data when it lands:
    // what it holds after this cycle must be below two.
    read       = count_q != '0 &&
                 ({1'b0, out_count} + {2'b0, read_inflight_q} - {2'b0, out_valid_o && out_ready_i})
                 < 3'd2;

    wr_ptr_d = wr_ptr_q;
    if (push) wr_ptr_d = (wr_ptr_q == LastSlot) ? '0 : wr_ptr_q + 1'b1;
    rd_ptr_d = rd_ptr_q;
    if (read) rd_ptr_d = (rd_ptr_q == LastSlot) ? '0 : rd_ptr_q + 1'b1;

    count_d = count_q;
    if (push && !read) count_d = count_q + 1'b1;
    if (read && !push) count_d = count_q - 1'b1;

    read_inflight_d = read;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      wr_ptr_q        <= '0;
      rd_ptr_q        <= '0;
      count_q         <= '0;
      read_inflight_q <= 1'b0;
    end else begin
      wr_ptr_q        <= wr_ptr_d;
      rd_ptr_q        <= rd_ptr_d;
      count_q         <= count_d;
      read_inflight_q <= read_inflight_d;
    end
  end

  tpu_ram_sdp #(.Width(Width), .Depth(Depth)) u_ram (
    .clk_i,
    .wr_en_i  (push),
    .wr_addr_i(wr_ptr_q),
    .wr_data_i(in_data_i),
    .rd_en_i  (read),
    .rd_addr_i(rd_ptr_q),
    .rd_data_o(ram_data)
  );

  tpu_fifo #(.Width(Width), .Depth(2)) u_out (
    .clk_i, .rst_ni,
    .in_valid_i (read_inflight_q),
    .in_ready_o (out_in_ready),
    .in_data_i  (ram_data),
    .out_valid_o,
    .out_ready_i,
    .out_data_o,
    .count_o    (out_count)
  );

  assign ram_count_o = count_q;

  `TPU_ASSERT(a_output_has_room, !read_inflight_q || out_in_ready,
              "RAM data arrived with no room in the output buffer")

endmodule
