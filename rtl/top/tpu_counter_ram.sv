// Performance counters kept in a block RAM instead of flip-flops, for FPGAs
// where logic is scarce and block RAM is not (tpu_regs with CounterRam = 1, as
// the sequential core builds it). The RAM holds each counter's value; what a
// counter gains meanwhile collects in a small pending count beside it.
//
// One counter a cycle is brought up to date, in turn: its RAM word is read,
// its pending count taken (the counter starts a new one with this cycle's
// increment), and in the next cycle the sum is written back. A read of a
// counter waits for its turn and returns that sum, so it includes every
// increment up to the cycle after the request: at most NumCounters + 1 cycles.
//
// The pending counts only need the bits that NumCounters increments of
// AddWidth bits fill. A clear marks every RAM word stale (read as zero) until
// its next turn: the RAM itself has no reset.
`include "tpu_assert.svh"

module tpu_counter_ram #(
  parameter int unsigned NumCounters  = 11,
  parameter int unsigned CounterWidth = 40,
  parameter int unsigned AddWidth     = 18,   // the bits of an increment that may be set
  localparam int unsigned IdxWidth    = $clog2(NumCounters)
) (
  input  logic                            clk_i,
  input  logic                            rst_ni,

  input  logic                            clear_i,       // every counter to zero
  input  logic [NumCounters*AddWidth-1:0] add_i,         // this cycle's increments

  input  logic                            read_i,        // request counter read_idx_i
  input  logic [IdxWidth-1:0]             read_idx_i,
  output logic                            read_valid_o,  // one cycle: read_value_o is its value
  output logic [CounterWidth-1:0]         read_value_o
);

  // What NumCounters increments of AddWidth bits add up to.
  localparam int unsigned PendWidth = $clog2(NumCounters * ((1 << AddWidth) - 1) + 1);
  localparam logic [IdxWidth-1:0] LastIdx = IdxWidth'(NumCounters - 1);

  if (NumCounters < 2 || NumCounters > 256) begin : g_bad_count
    $error("tpu_counter_ram: NumCounters must be in 2..256");
  end
  if (AddWidth < 1 || AddWidth + $clog2(NumCounters) > CounterWidth) begin : g_bad_add
    $error("tpu_counter_ram: AddWidth must be 1 or more, and its pending count within a counter");
  end

  logic [NumCounters*PendWidth-1:0] pend_d, pend_q;
  logic [NumCounters-1:0]           stale_d, stale_q;
  logic [IdxWidth-1:0]              turn_d, turn_q;        // the counter read from the RAM now
  logic [IdxWidth-1:0]              write_idx_d, write_idx_q;
  logic [PendWidth-1:0]             taken_d, taken_q;      // its pending count
  logic                             taken_stale_d, taken_stale_q;
  logic                             wanted_d, wanted_q;    // a read waits for its turn
  logic [IdxWidth-1:0]              wanted_idx_d, wanted_idx_q;
  logic                             answer_d, answer_q;    // the sum written now answers it
  logic [CounterWidth-1:0]          stored, sum;

  tpu_ram_sdp #(.Width(CounterWidth), .Depth(NumCounters)) u_values (
    .clk_i,
    .wr_en_i  (1'b1),
    .wr_addr_i(write_idx_q),
    .wr_data_i(sum),
    .rd_en_i  (1'b1),
    .rd_addr_i(turn_q),
    .rd_data_o(stored)
  );

  assign sum = (taken_stale_q ? '0 : stored) + CounterWidth'(taken_q);

  always_comb begin
    turn_d        = (turn_q == LastIdx) ? '0 : turn_q + 1'b1;
    write_idx_d   = turn_q;
    taken_d       = pend_q[turn_q*PendWidth +: PendWidth];
    taken_stale_d = stale_q[turn_q];
    stale_d       = stale_q;
    stale_d[turn_q] = 1'b0;
    for (int c = 0; c < NumCounters; c++) begin
      pend_d[c*PendWidth +: PendWidth] =
          ((IdxWidth'(c) == turn_q) ? '0 : pend_q[c*PendWidth +: PendWidth]) +
          PendWidth'(add_i[c*AddWidth +: AddWidth]);
    end
    if (clear_i) begin
      pend_d  = '0;
      stale_d = '1;
    end

    wanted_d     = wanted_q;
    wanted_idx_d = wanted_idx_q;
    answer_d     = 1'b0;
    if (wanted_q && turn_q == wanted_idx_q) begin
      wanted_d = 1'b0;
      answer_d = 1'b1;
    end
    if (read_i) begin
      wanted_d     = 1'b1;
      wanted_idx_d = read_idx_i;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      pend_q        <= '0;
      stale_q       <= '1;
      turn_q        <= '0;
      write_idx_q   <= LastIdx;   // the turn before turn 0
      taken_q       <= '0;
      taken_stale_q <= 1'b1;
      wanted_q      <= 1'b0;
      wanted_idx_q  <= '0;
      answer_q      <= 1'b0;
    end else begin
      pend_q        <= pend_d;
      stale_q       <= stale_d;
      turn_q        <= turn_d;
      write_idx_q   <= write_idx_d;
      taken_q       <= taken_d;
      taken_stale_q <= taken_stale_d;
      wanted_q      <= wanted_d;
      wanted_idx_q  <= wanted_idx_d;
      answer_q      <= answer_d;
    end
  end

  assign read_valid_o = answer_q;
  assign read_value_o = sum;

  `TPU_ASSUME(a_read_one_at_a_time, !read_i || (!wanted_q && !answer_q),
              "a read requested while another is waiting")
  `TPU_ASSUME(a_read_index, !read_i || (32'(read_idx_i) < NumCounters),
              "a read of a counter that does not exist")
  // The RAM word written now is read again only NumCounters cycles later.
  `TPU_ASSERT(a_no_overtaking, turn_q != write_idx_q,
              "a counter read back before its sum was written")

endmodule
