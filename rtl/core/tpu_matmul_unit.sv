// MATMUL: streams unified-buffer rows through the systolic array (tpu_mxu) and
// writes the fp32 results to the accumulators. Each iteration of an operation
// uses the next weight tile from the weight FIFO and its rows:
//   acc[dst + r] = fold_k mac(seed[r], act[src + r][k], W[k])   (N-ORDER)
// where the seed is the accumulator row itself (accumulate) or +0 (overwrite),
// and activation lanes k >= k_valid count as -0. With the flag I8 the same
// rows are int8 ones (Q-MAC): int8 activations and weights in the low bytes
// of their lanes, int32 results, and lanes k >= k_valid are 0.
//
// N-ORDER makes an fp32 accumulation go through the array: the row a result
// adds to enters at the top as its seed, so the next iteration of a K loop
// waits for the previous one's results. int8 sums wrap and do not depend on
// the order, so an int8 iteration that accumulates starts from 0 instead and
// its results are added to their rows on the way into the accumulators: the
// iterations of a K loop follow each other at the array's tile period. int8
// results pass an output stage for that (a cycle); bf16 ones are written as
// they leave the array, and a bf16 row that follows an int8 one enters the
// array a cycle later, so that the two never meet at the write port.
//
// The unit is pipelined across operations: it starts reading the rows of the
// next iteration, or the next operation, while earlier results are still in
// the array. An accumulator row that an earlier iteration will write is not
// read as a seed until that write has happened: the iterations in flight are
// listed with the rows they write (the tracker), and a seed read waits while
// its row is among those not yet written. An operation leaves the queue when
// its last result row is written.
`include "tpu_assert.svh"

module tpu_matmul_unit #(
  parameter int unsigned Dim        = 16,
  parameter int unsigned MulStages  = 0,
  parameter int unsigned AddStages  = 0,
  parameter int unsigned UbDepth    = 1024,
  parameter int unsigned AccDepth   = 1024,
  parameter int unsigned QueueDepth = 4,
  parameter bit          Int8       = 1'b0,
  parameter bit          Float      = 1'b1,
  localparam int unsigned UbAddrWidth  = $clog2(UbDepth),
  localparam int unsigned AccAddrWidth = $clog2(AccDepth),
  localparam int unsigned QOffWidth    = (QueueDepth > 1) ? $clog2(QueueDepth) : 1
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,

  input  logic                        push_i,
  input  tpu_core_pkg::op_t           push_op_i,
  input  logic [tpu_core_pkg::FootprintBits-1:0] push_fp_i,
  output logic                        full_o,
  output logic [QueueDepth-1:0]       fp_valid_o,
  output logic [QueueDepth*tpu_core_pkg::FootprintBits-1:0] fps_o,

  // Activation rows from the unified buffer; seeds from and results to the
  // accumulators (this unit has the highest priority on all three ports).
  output logic                        ub_rd_req_o,
  output logic [UbAddrWidth-1:0]      ub_rd_addr_o,
  input  logic                        ub_rd_gnt_i,
  input  logic [Dim*16-1:0]           ub_rd_data_i,
  output logic                        acc_rd_req_o,
  output logic [AccAddrWidth-1:0]     acc_rd_addr_o,
  input  logic                        acc_rd_gnt_i,
  input  logic [Dim*32-1:0]           acc_rd_data_i,
  output logic                        acc_wr_req_o,
  output logic [AccAddrWidth-1:0]     acc_wr_addr_o,
  output logic [Dim*32-1:0]           acc_wr_data_o,
  input  logic                        acc_wr_gnt_i,

  // Weight rows from the weight FIFO.
  input  logic                        wgt_valid_i,
  output logic                        wgt_ready_o,
  input  logic [Dim*16-1:0]           wgt_data_i,

  // For the performance counters.
  output logic                        act_fire_o,      // a row entered the array
  output logic [17:0]                 act_macs_o,      // its useful MACs
  output logic                        weight_wait_o,   // a row waits for its weight tile
  output logic                        pending_wait_o,  // a seed read waits for a result
  output logic                        reading_o,       // an operation still has rows to read

  output logic                        idle_o
);

  localparam int unsigned TrackDepth = 4;
  localparam int unsigned StageDepth = 4;
  localparam logic [3:0]  StageSlots = 4'(StageDepth);
  localparam int unsigned TrackIdxWidth = $clog2(TrackDepth);
  localparam int unsigned LastTrackIdx = TrackDepth - 1;
  localparam logic [TrackIdxWidth-1:0] LastTrack = LastTrackIdx[TrackIdxWidth-1:0];
  localparam logic [TrackIdxWidth:0]   TrackFull = TrackDepth[TrackIdxWidth:0];
  localparam logic [15:0] NegZeroBf16 = 16'h8000;
  localparam int unsigned LastQueueIdx = QueueDepth - 1;
  localparam logic [QOffWidth-1:0] LastQueueSlot = LastQueueIdx[QOffWidth-1:0];

  // ---------------------------------------------------------------------------
  // Queue: the head is the oldest operation not yet complete; the reader works
  // on the one rd_off places behind it.
  // ---------------------------------------------------------------------------
  tpu_core_pkg::op_t unused_head, rd_op;
  // Up to QueueDepth: once the reader has passed every queued operation.
  logic [$clog2(QueueDepth+1)-1:0] rd_off_d, rd_off_q;
  // The slot of that operation, head + rd_off modulo QueueDepth, kept in a
  // register: it moves only when the reader moves on (a retirement moves the
  // head and rd_off together), and no pointer adder then sits in front of
  // the seed check and the memory ports.
  logic [QOffWidth-1:0] rd_slot_d, rd_slot_q;
  logic [$clog2(QueueDepth+1)-1:0] queue_count;
  logic queue_empty, retire;

  tpu_op_queue #(.Depth(QueueDepth)) u_queue (
    .clk_i, .rst_ni,
    .push_i, .push_op_i, .push_fp_i, .full_o,
    .empty_o    (queue_empty),
    .count_o    (queue_count),
    .head_o     (unused_head),
    .peek_slot_i(rd_slot_q),
    .peek_o     (rd_op),
    .pop_i      (retire),
    .valid_o    (fp_valid_o),
    .fps_o
  );

  // ---------------------------------------------------------------------------
  // Tracker: iterations whose rows have been read but whose results are not
  // all written, oldest first. Entry e writes rows [base, end). The head
  // entry's next row is wr_addr_q, kept as an address rather than a row count
  // so that neither the result writer nor the seed check adds on the way to
  // the accumulator memory's arbitration.
  // ---------------------------------------------------------------------------
  logic [TrackDepth*16-1:0]  trk_base_d, trk_base_q, trk_end_d, trk_end_q;
  logic [TrackDepth-1:0]     trk_last_d, trk_last_q;    // last iteration of its operation
  logic [TrackDepth-1:0]     trk_add_d, trk_add_q;      // int8: results add to their rows
  logic [TrackDepth-1:0]     trk_int8_d, trk_int8_q;    // int8 results: via the output stage
  logic [TrackIdxWidth-1:0]  trk_head_d, trk_head_q, trk_tail_d, trk_tail_q;
  logic [TrackIdxWidth-1:0]  trk_next, trk_newest;
  logic [TrackIdxWidth:0]    trk_count_d, trk_count_q;
  logic [15:0]               wr_addr_d, wr_addr_q;
  logic                      trk_push, trk_pop;
  // An int8 result row, one that adds to its accumulator row, and the output stage's row.
  logic                      res_int8, res_adds, out_valid;
  logic [15:0]               out_addr;

  // ---------------------------------------------------------------------------
  // Reader
  // ---------------------------------------------------------------------------
  // The row addresses live in registers once an operation has started (its
  // first row read); before that they are the operation's own, so nothing is
  // added between the queue and the memory ports.
  logic        rd_have_op, rd_fresh, rd_seeding, rd_first_row, rd_last_row, rd_last_iter;
  logic        rd_int8, rd_accumulates;
  logic [15:0] rd_iter_d, rd_iter_q, rd_row_d, rd_row_q;
  logic [15:0] rd_src_d, rd_src_q, rd_dst_d, rd_dst_q;
  logic [15:0] rd_src_base_d, rd_src_base_q, rd_dst_base_d, rd_dst_base_q;
  logic [15:0] rd_src, rd_dst, rd_src_base, rd_dst_base;
  logic        pending, stage_credit, can_read, read_fire;
  logic [$clog2(StageDepth+1)-1:0] stage_count;
  logic [17:0] rd_macs;

  always_comb begin
    rd_have_op   = 32'(rd_off_q) < 32'(queue_count);
    rd_int8        = Int8 && rd_op.flags[tpu_isa_pkg::MatmulFlagI8];
    rd_accumulates = (rd_iter_q == '0) ? rd_op.flags[tpu_isa_pkg::MatmulFlagAcc0]
                                       : rd_op.flags[tpu_isa_pkg::MatmulFlagAccn];
    rd_seeding     = rd_accumulates && !rd_int8;
    rd_first_row = rd_row_q == '0;
    rd_last_row  = rd_row_q == rd_op.rows - 1'b1;
    rd_last_iter = rd_iter_q == rd_op.count - 1'b1;
    rd_fresh     = rd_first_row && rd_iter_q == '0;
    rd_src_base  = rd_fresh ? rd_op.addr_a : rd_src_base_q;
    rd_dst_base  = rd_fresh ? rd_op.addr_b : rd_dst_base_q;
    rd_src       = rd_fresh ? rd_op.addr_a : rd_src_q;
    rd_dst       = rd_fresh ? rd_op.addr_b : rd_dst_q;
    rd_macs      = 18'(rd_op.aux_lo[8:0] * rd_op.aux_hi[8:0]);
  end

  // A seed row may be read once no earlier iteration still has to write it.
  // The current iteration (the newest tracker entry once its first row is
  // read) writes other rows than the one being read. Each tracker slot is
  // checked in place: whether it holds an iteration depends on registers only.
  // Both candidate rows, an operation's first (from its queue entry) and the
  // kept one, are compared, and rd_fresh picks between the answers, so the
  // choice does not sit in front of the comparators.
  logic pending_fresh, pending_kept;

  always_comb begin
    trk_next      = trk_head_q + 1'b1;
    trk_newest    = trk_tail_q - 1'b1;
    pending_fresh = 1'b0;
    pending_kept  = 1'b0;
    for (int e = 0; e < TrackDepth; e++) begin
      logic [TrackIdxWidth-1:0] slot, age;
      logic [15:0]              lo, hi;
      logic                     live;
      slot = TrackIdxWidth'(e);
      age  = slot - trk_head_q;
      lo   = (slot == trk_head_q) ? wr_addr_q : trk_base_q[e*16 +: 16];
      hi   = trk_end_q[e*16 +: 16];
      live = {1'b0, age} < trk_count_q && !(!rd_first_row && slot == trk_newest);
      if (live && rd_op.addr_b >= lo && rd_op.addr_b < hi) pending_fresh = 1'b1;
      if (live && rd_dst_q >= lo && rd_dst_q < hi) pending_kept = 1'b1;
    end
    // A row in the output stage (Int8) is written a cycle after its iteration left the tracker.
    if (out_valid && rd_op.addr_b == out_addr) pending_fresh = 1'b1;
    if (out_valid && rd_dst_q == out_addr) pending_kept = 1'b1;
    pending = rd_fresh ? pending_fresh : pending_kept;
  end

  assign stage_credit   = ({1'b0, stage_count} + {3'b0, read_inflight_q}) < StageSlots;
  // The output stage's read of a row to add to comes first on the accumulator read port.
  assign can_read       = rd_have_op && stage_credit && (!rd_seeding || !pending) &&
                          (!rd_first_row || trk_count_q != TrackFull) &&
                          !(rd_seeding && res_adds);
  assign ub_rd_req_o    = can_read;
  assign ub_rd_addr_o   = rd_src[UbAddrWidth-1:0];
  assign acc_rd_req_o   = (can_read && rd_seeding) || res_adds;
  assign acc_rd_addr_o  = res_adds ? wr_addr_q[AccAddrWidth-1:0] : rd_dst[AccAddrWidth-1:0];
  // The unit has the highest priority on its memory ports (a_reads_granted),
  // so a read it asks for happens: the grants are not waited for, which keeps
  // the arbitration out of this unit's state.
  assign read_fire      = can_read;
  assign trk_push       = read_fire && rd_first_row;
  assign pending_wait_o = rd_have_op && rd_seeding && pending;
  assign reading_o      = rd_have_op;

  always_comb begin
    rd_iter_d     = rd_iter_q;
    rd_row_d      = rd_row_q;
    rd_src_d      = rd_src_q;
    rd_dst_d      = rd_dst_q;
    rd_src_base_d = rd_src_base_q;
    rd_dst_base_d = rd_dst_base_q;
    rd_off_d      = rd_off_q;
    rd_slot_d     = rd_slot_q;
    if (read_fire) begin
      rd_row_d      = rd_row_q + 1'b1;
      rd_src_d      = rd_src + 1'b1;
      rd_dst_d      = rd_dst + 1'b1;
      rd_src_base_d = rd_src_base;
      rd_dst_base_d = rd_dst_base;
      if (rd_last_row) begin
        rd_row_d      = '0;
        rd_iter_d     = rd_iter_q + 1'b1;
        rd_src_base_d = rd_src_base + rd_op.step_a;
        rd_dst_base_d = rd_dst_base + rd_op.step_b;
        rd_src_d      = rd_src_base_d;
        rd_dst_d      = rd_dst_base_d;
        // The next operation starts fresh from its own addresses.
        if (rd_last_iter) begin
          rd_iter_d = '0;
          rd_off_d  = rd_off_q + 1'b1;
          rd_slot_d = (rd_slot_q == LastQueueSlot) ? '0 : rd_slot_q + 1'b1;
        end
      end
    end
    if (retire) rd_off_d = rd_off_d - 1'b1;
  end

  // Read data arrive the next cycle; lanes k >= k_valid become -0.
  logic        read_inflight_d, read_inflight_q, inflight_seeding_d, inflight_seeding_q;
  logic        inflight_last_d, inflight_last_q, inflight_int8_d, inflight_int8_q;
  logic [8:0]  inflight_k_valid_d, inflight_k_valid_q;
  logic [17:0] inflight_macs_d, inflight_macs_q;
  logic [Dim*16-1:0] masked_acts;

  always_comb begin
    read_inflight_d    = read_fire;
    inflight_seeding_d = rd_seeding;
    inflight_last_d    = rd_last_row;
    inflight_int8_d    = rd_int8;
    inflight_k_valid_d = rd_op.aux_lo[8:0];
    inflight_macs_d    = rd_macs;
    for (int k = 0; k < Dim; k++) begin
      masked_acts[k*16 +: 16] = (k < {23'd0, inflight_k_valid_q}) ? ub_rd_data_i[k*16 +: 16]
                                                                   : NegZeroBf16;
    end
  end

  // ---------------------------------------------------------------------------
  // Staging FIFO into the array: activations, seeds, last-row-of-tile, int8,
  // MACs.
  // ---------------------------------------------------------------------------
  localparam int unsigned StageWidth = Dim * 16 + Dim * 32 + 2 + 18;
  logic                  stage_in_ready, stage_valid, act_ready, seed_ready;
  logic [StageWidth-1:0] stage_in, stage_out;
  logic [Dim*16-1:0]     stage_acts;
  logic [Dim*32-1:0]     stage_seeds;
  logic                  stage_last, stage_int8;

  assign stage_in = {masked_acts, inflight_seeding_q ? acc_rd_data_i : {Dim*32{1'b0}},
                     inflight_last_q, inflight_int8_q, inflight_macs_q};
  assign {stage_acts, stage_seeds, stage_last, stage_int8, act_macs_o} = stage_out;

  tpu_fifo #(.Width(StageWidth), .Depth(StageDepth)) u_stage (
    .clk_i, .rst_ni,
    .in_valid_i (read_inflight_q),
    .in_ready_o (stage_in_ready),
    .in_data_i  (stage_in),
    .out_valid_o(stage_valid),
    .out_ready_i(act_ready && seed_ready),
    .out_data_o (stage_out),
    .count_o    (stage_count)
  );

  // ---------------------------------------------------------------------------
  // The matrix unit, and its results into the accumulators.
  // ---------------------------------------------------------------------------
  logic              res_valid, res_ready, res_last;
  logic [Dim*32-1:0] res_data;
  logic [TrackIdxWidth-1:0] wr_slot;

  // A bf16 row waits a cycle after an int8 row (the output stage, above). The
  // array advances every cycle (res_ready), so the cycle leaves a gap.
  logic stage_offer, int8_entered_d, int8_entered_q;
  assign stage_offer    = stage_valid && !(Int8 && int8_entered_q && !stage_int8);
  assign int8_entered_d = Int8 && act_fire_o && stage_int8;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) int8_entered_q <= 1'b0;
    else         int8_entered_q <= int8_entered_d;
  end

  tpu_mxu #(
    .Rows(Dim), .Cols(Dim), .MulStages(MulStages), .AddStages(AddStages), .Int8(Int8),
    .Float(Float)
  ) u_mxu (
    .clk_i, .rst_ni,
    .wgt_valid_i (wgt_valid_i),
    .wgt_ready_o (wgt_ready_o),
    .wgt_data_i  (wgt_data_i),
    .act_valid_i (stage_offer),
    .act_ready_o (act_ready),
    .act_data_i  (stage_acts),
    .act_last_i  (stage_last),
    .act_int8_i  (stage_int8),
    .seed_valid_i(stage_offer),
    .seed_ready_o(seed_ready),
    .seed_data_i (stage_seeds),
    .res_valid_o (res_valid),
    .res_ready_i (res_ready),
    .res_data_o  (res_data),
    .res_last_o  (res_last)
  );

  assign wr_slot       = trk_head_q;
  // As for reads: this unit's writes are always granted (a_results_written).
  assign res_ready     = 1'b1;
  assign trk_pop       = res_valid && res_last;
  assign res_int8      = Int8 && res_valid && trk_int8_q[wr_slot];
  assign res_adds      = Int8 && res_valid && trk_add_q[wr_slot];

  // Results into the accumulators. int8 ones are written a cycle later, from
  // the output stage, where a result that accumulates is added to its row,
  // read from the accumulators meanwhile (wrapping, Q-MAC). An operation
  // retires with its last write.
  logic retire_now;
  assign retire_now = trk_pop && trk_last_q[wr_slot];

  if (Int8) begin : g_out_stage
    logic              out_valid_d, out_valid_q, out_adds_d, out_adds_q, retire_d, retire_q;
    logic [15:0]       out_addr_d, out_addr_q;
    logic [Dim*32-1:0] out_data_d, out_data_q, out_sum;

    assign out_valid_d = res_int8;
    assign out_adds_d  = res_adds;
    assign out_addr_d  = wr_addr_q;
    assign out_data_d  = res_data;
    assign retire_d    = retire_now && res_int8;

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) begin
        out_valid_q <= 1'b0;
        out_adds_q  <= 1'b0;
        out_addr_q  <= '0;
        out_data_q  <= '0;
        retire_q    <= 1'b0;
      end else begin
        out_valid_q <= out_valid_d;
        out_adds_q  <= out_adds_d;
        out_addr_q  <= out_addr_d;
        out_data_q  <= out_data_d;
        retire_q    <= retire_d;
      end
    end

    always_comb begin
      for (int unsigned l = 0; l < Dim; l++) begin
        out_sum[l*32 +: 32] = out_data_q[l*32 +: 32] + acc_rd_data_i[l*32 +: 32];
      end
    end

    assign out_valid     = out_valid_q;
    assign out_addr      = out_addr_q;
    assign acc_wr_req_o  = out_valid_q || (res_valid && !res_int8);
    assign acc_wr_addr_o = out_valid_q ? out_addr_q[AccAddrWidth-1:0]
                                       : wr_addr_q[AccAddrWidth-1:0];
    assign acc_wr_data_o = !out_valid_q ? res_data : out_adds_q ? out_sum : out_data_q;
    assign retire        = retire_q || (retire_now && !res_int8);

    `TPU_ASSERT(a_one_write, !out_valid_q || !(res_valid && !res_int8),
                "a bf16 result met an int8 one at the write port")
  end else begin : g_no_out_stage
    assign out_valid     = 1'b0;  // no row waits between the array and the accumulators
    assign out_addr      = '0;
    logic unused_res_int8;
    assign unused_res_int8 = res_int8;  // always 0 without int8
    assign acc_wr_req_o  = res_valid;
    assign acc_wr_addr_o = wr_addr_q[AccAddrWidth-1:0];
    assign acc_wr_data_o = res_data;
    assign retire        = retire_now;
  end
  assign act_fire_o    = stage_offer && act_ready && seed_ready;
  assign weight_wait_o = stage_offer && !(act_ready && seed_ready);

  always_comb begin
    // The head's next row; when the head moves on, the next entry's first row,
    // which is being pushed now if the tracker held only the old head.
    wr_addr_d = wr_addr_q;
    if (res_valid && !res_last) wr_addr_d = wr_addr_q + 1'b1;
    if (trk_pop) wr_addr_d = (trk_count_q == 1) ? rd_dst_base : trk_base_q[trk_next*16 +: 16];
    if (trk_push && trk_count_q == 0) wr_addr_d = rd_dst_base;

    trk_base_d  = trk_base_q;
    trk_end_d   = trk_end_q;
    trk_last_d  = trk_last_q;
    trk_add_d   = trk_add_q;
    trk_int8_d  = trk_int8_q;
    trk_head_d  = trk_head_q;
    trk_tail_d  = trk_tail_q;
    trk_count_d = trk_count_q;
    if (trk_push) begin
      trk_base_d[trk_tail_q*16 +: 16] = rd_dst_base;
      trk_end_d[trk_tail_q*16 +: 16]  = rd_dst_base + rd_op.rows;
      trk_last_d[trk_tail_q]          = rd_last_iter;
      trk_add_d[trk_tail_q]           = rd_accumulates && rd_int8;
      trk_int8_d[trk_tail_q]          = rd_int8;
      trk_tail_d = (trk_tail_q == LastTrack) ? '0 : trk_tail_q + 1'b1;
    end
    if (trk_pop) trk_head_d = (trk_head_q == LastTrack) ? '0 : trk_head_q + 1'b1;
    if (trk_push && !trk_pop) trk_count_d = trk_count_q + 1'b1;
    if (trk_pop && !trk_push) trk_count_d = trk_count_q - 1'b1;
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_off_q           <= '0;
      rd_slot_q          <= '0;
      rd_iter_q          <= '0;
      rd_row_q           <= '0;
      rd_src_q           <= '0;
      rd_dst_q           <= '0;
      rd_src_base_q      <= '0;
      rd_dst_base_q      <= '0;
      read_inflight_q    <= 1'b0;
      inflight_seeding_q <= 1'b0;
      inflight_last_q    <= 1'b0;
      inflight_int8_q    <= 1'b0;
      inflight_k_valid_q <= '0;
      inflight_macs_q    <= '0;
      trk_base_q         <= '0;
      trk_end_q          <= '0;
      trk_last_q         <= '0;
      trk_add_q          <= '0;
      trk_int8_q         <= '0;
      trk_head_q         <= '0;
      trk_tail_q         <= '0;
      trk_count_q        <= '0;
      wr_addr_q          <= '0;
    end else begin
      rd_off_q           <= rd_off_d;
      rd_slot_q          <= rd_slot_d;
      rd_iter_q          <= rd_iter_d;
      rd_row_q           <= rd_row_d;
      rd_src_q           <= rd_src_d;
      rd_dst_q           <= rd_dst_d;
      rd_src_base_q      <= rd_src_base_d;
      rd_dst_base_q      <= rd_dst_base_d;
      read_inflight_q    <= read_inflight_d;
      inflight_seeding_q <= inflight_seeding_d;
      inflight_last_q    <= inflight_last_d;
      inflight_int8_q    <= inflight_int8_d;
      inflight_k_valid_q <= inflight_k_valid_d;
      inflight_macs_q    <= inflight_macs_d;
      trk_base_q         <= trk_base_d;
      trk_end_q          <= trk_end_d;
      trk_last_q         <= trk_last_d;
      trk_add_q          <= trk_add_d;
      trk_int8_q         <= trk_int8_d;
      trk_head_q         <= trk_head_d;
      trk_tail_q         <= trk_tail_d;
      trk_count_q        <= trk_count_d;
      wr_addr_q          <= wr_addr_d;
    end
  end

  assign idle_o = queue_empty;

  `TPU_ASSERT(a_reads_queued_slot, !rd_have_op || fp_valid_o[rd_slot_q],
              "the slot read is not a queued operation")
  `TPU_ASSERT(a_rows_in_memory,
              !rd_have_op || ({1'b0, rd_src} < 17'(UbDepth) && {1'b0, rd_dst} < 17'(AccDepth)),
              "row address beyond the memory")
  `TPU_ASSERT(a_stage_has_room, !read_inflight_q || stage_in_ready,
              "a row read from memory found no room in the staging FIFO")
  // This unit has the highest priority on its memory ports.
  `TPU_ASSUME(a_reads_granted, !can_read || (ub_rd_gnt_i && (!rd_seeding || acc_rd_gnt_i)),
              "a memory read was not granted")
  `TPU_ASSERT(a_result_in_memory, !res_valid || ({1'b0, wr_addr_q} < 17'(AccDepth)),
              "result address beyond the memory")
  `TPU_ASSUME(a_results_written, !acc_wr_req_o || acc_wr_gnt_i,
              "a result row was not granted the accumulator write port")
  `TPU_ASSERT(a_result_has_iteration, !res_valid || (trk_count_q != '0),
              "a result row with no iteration in flight")
  `TPU_ASSUME(a_add_read_granted, !res_adds || acc_rd_gnt_i,
              "the row an int8 result adds to was not read")
  `TPU_ASSERT(a_seed_not_pending, !(read_fire && rd_seeding) || !pending,
              "a seed row read before an earlier result wrote it")

endmodule
