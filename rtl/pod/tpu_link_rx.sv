// The receiving end of an inter-chip link (docs/pod.md): puts the beats of a
// row back together (the lowest lanes came first) and keeps whole rows in a
// buffer of at least Credits rows (block RAM: the room must cover the round
// trip of a credit, tens of rows), the room the sender's credits count. Each
// row taken out returns a credit the next cycle. The sender never sends
// without a credit, so a beat always finds room; an assertion checks it.
`include "tpu_assert.svh"

module tpu_link_rx #(
  parameter int unsigned Dim       = 16,
  parameter int unsigned LinkLanes = 16,
  parameter int unsigned Credits   = 16,
  localparam int unsigned RowBits  = Dim * 32,
  localparam int unsigned BeatBits = LinkLanes * 32
) (
  input  logic                clk_i,
  input  logic                rst_ni,

  input  logic                link_valid_i,
  input  logic                link_head_i,
  input  logic [BeatBits-1:0] link_data_i,
  output logic                link_credit_o,

  output logic                row_valid_o,
  input  logic                row_ready_i,
  output logic                row_head_o,
  output logic [RowBits-1:0]  row_data_o
);

  if (LinkLanes < 1 || LinkLanes > Dim || Dim % LinkLanes != 0) begin : g_bad_lanes
    $error("tpu_link_rx: LinkLanes must divide Dim");
  end
  if (Credits < 2 || Credits > 255) begin : g_bad_credits
    $error("tpu_link_rx: Credits must be in 2..255");
  end

  localparam int unsigned BeatsPerRow = Dim / LinkLanes;

  logic               row_done, fifo_ready, credit_d, credit_q;
  logic               row_head;
  logic [RowBits-1:0] row_data;
  logic [$clog2(Credits+1)-1:0] unused_count;

  if (BeatsPerRow == 1) begin : g_whole_rows
    assign row_done = link_valid_i;
    assign row_head = link_head_i;
    assign row_data = link_data_i;
  end else begin : g_assemble
    localparam int unsigned CountWidth = $clog2(BeatsPerRow);
    localparam logic [CountWidth-1:0] LastBeat = CountWidth'(BeatsPerRow - 1);
    // Beats shift in from the top, so after the last one lane 0 is at the bottom.
    logic [RowBits-BeatBits-1:0] partial_d, partial_q;
    logic [CountWidth-1:0]       beat_d, beat_q;

    always_comb begin
      partial_d = partial_q;
      beat_d    = beat_q;
      if (link_valid_i) begin
        partial_d = (RowBits - BeatBits)'({link_data_i, partial_q} >> BeatBits);
        beat_d    = (beat_q == LastBeat) ? '0 : beat_q + 1'b1;
      end
    end

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        partial_q <= '0;
        beat_q    <= '0;
      end else begin
        partial_q <= partial_d;
        beat_q    <= beat_d;
      end
    end

    assign row_done = link_valid_i && beat_q == LastBeat;
    assign row_head = link_head_i;
    assign row_data = {link_data_i, partial_q};
  end

  tpu_ram_fifo #(.Width(RowBits + 1), .Depth(Credits)) u_rows (
    .clk_i, .rst_ni,
    .in_valid_i (row_done),
    .in_ready_o (fifo_ready),
    .in_data_i  ({row_head, row_data}),
    .out_valid_o(row_valid_o),
    .out_ready_i(row_ready_i),
    .out_data_o ({row_head_o, row_data_o}),
    .ram_count_o(unused_count)
  );

  assign credit_d = row_valid_o && row_ready_i;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) credit_q <= 1'b0;
    else         credit_q <= credit_d;
  end

  assign link_credit_o = credit_q;

  `TPU_ASSUME(a_room_for_row, !row_done || fifo_ready,
              "a row arrived without room: the sender overran its credits")

endmodule
