// The sending end of an inter-chip link (docs/pod.md). It takes rows (Dim fp32
// lanes and a header flag) on a valid/ready stream and puts each on the wire
// as Dim / LinkLanes beats, back to back, the lowest lanes first.
//
// Flow control is by credits: the receiver has room for Credits rows and
// returns one credit (credit_i, a one-cycle pulse) for each row it has passed
// on. A row starts only with a credit in hand, so a beat on the wire is always
// taken: register slices anywhere on the wire, either way, change the latency
// and never the data. Full rate needs Credits >= the round trip in rows:
// twice the wire's latency and about six cycles through the two ends.
`include "tpu_assert.svh"

module tpu_link_tx #(
  parameter int unsigned Dim       = 16,
  parameter int unsigned LinkLanes = 16,
  parameter int unsigned Credits   = 16,
  localparam int unsigned RowBits  = Dim * 32,
  localparam int unsigned BeatBits = LinkLanes * 32
) (
  input  logic                clk_i,
  input  logic                rst_ni,

  input  logic                row_valid_i,
  output logic                row_ready_o,
  input  logic                row_head_i,
  input  logic [RowBits-1:0]  row_data_i,

  output logic                link_valid_o,
  output logic                link_head_o,
  output logic [BeatBits-1:0] link_data_o,
  input  logic                link_credit_i,

  output logic                stall_o,  // a row waits for a credit
  output logic                idle_o    // nothing left to put on the wire
);

  if (LinkLanes < 1 || LinkLanes > Dim || Dim % LinkLanes != 0) begin : g_bad_lanes
    $error("tpu_link_tx: LinkLanes must divide Dim");
  end
  if (Credits < 2 || Credits > 255) begin : g_bad_credits
    $error("tpu_link_tx: Credits must be in 2..255");
  end

  localparam int unsigned BeatsPerRow = Dim / LinkLanes;
  localparam int unsigned BeatsWidth  = $clog2(BeatsPerRow + 1);
  localparam logic [BeatsWidth-1:0] RowBeats = BeatsWidth'(BeatsPerRow);
  localparam logic [7:0] AllCredits = 8'(Credits);

  logic [RowBits-1:0]    row_d, row_q;
  logic                  head_d, head_q;
  logic [BeatsWidth-1:0] beats_left_d, beats_left_q;
  logic [7:0]            credits_d, credits_q;
  logic                  valid_d, valid_q;
  logic [BeatBits-1:0]   data_d, data_q;
  logic                  beat_head_d, beat_head_q;
  logic                  take;

  always_comb begin
    // A new row may start as the last beat of the current one leaves.
    row_ready_o = (beats_left_q == '0 || beats_left_q == BeatsWidth'(1)) && credits_q != '0;
    take        = row_valid_i && row_ready_o;

    row_d        = row_q;
    head_d       = head_q;
    beats_left_d = beats_left_q;
    valid_d      = beats_left_q != '0;
    data_d       = row_q[BeatBits-1:0];
    beat_head_d  = head_q;
    if (beats_left_q != '0) begin
      row_d        = RowBits'(row_q >> BeatBits);
      beats_left_d = beats_left_q - 1'b1;
    end
    if (take) begin
      row_d        = row_data_i;
      head_d       = row_head_i;
      beats_left_d = RowBeats;
    end
    credits_d = credits_q - 8'(take) + 8'(link_credit_i);
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      row_q        <= '0;
      head_q       <= 1'b0;
      beats_left_q <= '0;
      credits_q    <= AllCredits;
      valid_q      <= 1'b0;
      data_q       <= '0;
      beat_head_q  <= 1'b0;
    end else begin
      row_q        <= row_d;
      head_q       <= head_d;
      beats_left_q <= beats_left_d;
      credits_q    <= credits_d;
      valid_q      <= valid_d;
      data_q       <= data_d;
      beat_head_q  <= beat_head_d;
    end
  end

  assign link_valid_o = valid_q;
  assign link_head_o  = beat_head_q;
  assign link_data_o  = data_q;
  assign stall_o      = row_valid_i && credits_q == '0;
  assign idle_o       = beats_left_q == '0 && !valid_q;

`ifndef SYNTHESIS
  // With Credits = 255 the 8-bit count cannot exceed it (and the comparison would be constant).
  if (Credits < 255) begin : g_credits_bounded
    `TPU_ASSERT(a_credits_bounded, credits_q <= AllCredits,
                "more credits returned than the receiver has room for")
  end
`endif
  `TPU_ASSUME(a_credit_not_lost, !link_credit_i || (credits_q != AllCredits || take),
              "a credit came back that was never spent")

endmodule
