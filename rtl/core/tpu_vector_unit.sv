// ELTWISE: combines accumulator rows lane by lane (docs/isa.md, N-VEC of
// docs/numerics.md). Row r of iteration i, addr_b + i * step_b + r, becomes
// op(A, B) of the source row addr_a + i * step_a + r and the second operand:
// the row bias_addr + i * bias_step + r, or with ROW the one row
// bias_addr + i * bias_step for the whole iteration (a broadcast row). The
// lanes are fp32 (add, sub, mul, max, min by N-VEC), or int32 with I32. With
// LANES the row is reduced instead: every lane of the result is the left fold
// S = B[0], S = op(S, A[j]) for j = 0 .. Dim-1, one lane a cycle through the
// first lane of the datapath. With UB the rows of A are unified-buffer rows,
// widened as they arrive: a bf16 lane to fp32 exactly, or with I32 a 16-bit
// lane sign-extended.
//
// Rows are done in order, and a row's operands are read only once every earlier
// row that writes them is written, so an ELTWISE may write over its own
// operands (in place, or a running maximum) and means the same on every
// backend. The rows go through three stages: a reader reads each row's A (and
// B without ROW) into one of two entries, the first free, one read a cycle;
// the lanes take the oldest full entry, Dim / Lanes groups of lanes a cycle
// (one lane a cycle with LANES), into the result register; the writer writes it
// back. A read waits while the row it reads is one an entry or the result
// register holds for writing. ROW's row is read once per iteration, before the
// iteration's first row. So independent rows take two cycles a row (one with
// ROW) where the lanes keep up, and an operation's last write ends it.
`include "tpu_assert.svh"

module tpu_vector_unit #(
  parameter int unsigned Dim        = 16,
  parameter int unsigned Lanes      = 16,
  parameter int unsigned UbDepth    = 1024,
  parameter int unsigned AccDepth   = 1024,
  parameter int unsigned QueueDepth = 4,
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

  output logic                        busy_o,  // an operation is under way (a counter's event)
  output logic                        idle_o
);

  localparam int unsigned Groups       = Dim / Lanes;
  localparam int unsigned GroupWidth   = (Groups > 1) ? $clog2(Groups) : 1;
  localparam int unsigned LastGroupIdx = Groups - 1;
  localparam logic [GroupWidth-1:0] LastGroup = LastGroupIdx[GroupWidth-1:0];
  localparam int unsigned LaneWidth    = (Dim > 1) ? $clog2(Dim) : 1;
  localparam int unsigned LastLaneIdx  = Dim - 1;
  localparam logic [LaneWidth-1:0] LastLane = LastLaneIdx[LaneWidth-1:0];

  if (Lanes < 1 || Lanes > Dim || Dim % Lanes != 0) begin : g_bad_lanes
    $error("tpu_vector_unit: Lanes must divide Dim");
  end

  tpu_core_pkg::op_t head, unused_peek;
  logic head_valid, queue_empty, pop;
  logic [$clog2(QueueDepth+1)-1:0] unused_count;

  tpu_op_queue #(.Depth(QueueDepth)) u_queue (
    .clk_i, .rst_ni,
    .push_i, .push_op_i, .push_fp_i, .full_o,
    .empty_o    (queue_empty),
    .count_o    (unused_count),
    .head_o     (head),
    .peek_slot_i(QOffWidth'(0)),
    .peek_o     (unused_peek),
    .pop_i      (pop),
    .valid_o    (fp_valid_o),
    .fps_o
  );

  assign head_valid = !queue_empty;

  logic       row_operand, int32, along_row, a_in_ub;
  logic [3:0] vop;
  assign row_operand = head.flags[tpu_isa_pkg::EltwiseFlagRow];
  assign int32       = head.flags[tpu_isa_pkg::EltwiseFlagI32];
  assign along_row   = head.flags[tpu_isa_pkg::EltwiseFlagLanes];
  assign a_in_ub     = head.flags[tpu_isa_pkg::EltwiseFlagUb];
  assign vop         = head.func;  // vop shares func's bits (rtl/defs/isa.toml)

  // ---------------------------------------------------------------------------
  // Reader: per iteration ROW's row, then per row A and, without ROW, B.
  // ---------------------------------------------------------------------------
  typedef enum logic [1:0] {
    RdIter,   // an iteration's start: ROW reads its row of B; otherwise as RdA
    RdA,      // read row A into a free entry
    RdB,      // read row B into the entry A went to
    RdDrain   // every row read: wait for the last write, which ends the operation
  } rd_state_e;

  // Where the row arriving from last cycle's granted read goes.
  typedef enum logic [2:0] {
    ToNone,
    ToA,      // an accumulator row for an entry's A
    ToAUb,    // a unified-buffer row for an entry's A, widened
    ToAUbB,   // both of an entry's rows: A from the unified buffer, B from the accumulators
    ToB,      // an entry's B
    ToRowB    // ROW's row of B for the iteration
  } arrival_e;

  // Three entries: a row's entry is read into, then taken by the lanes, then freed, each a cycle
  // later than the one before, so that the reader fills one every cycle.
  localparam int unsigned Entries = 3;
  typedef logic [1:0] slot_t;

  function automatic slot_t next_slot(input slot_t slot);
    next_slot = (32'(slot) == Entries - 1) ? '0 : slot + 1'b1;
  endfunction

  rd_state_e rd_d, rd_q;
  arrival_e  arrival_d, arrival_q;
  slot_t     arrival_slot_d, arrival_slot_q;
  logic [15:0] iter_d, iter_q, row_d, row_q;
  logic [15:0] a_off_d, a_off_q, b_off_d, b_off_q, dst_off_d, dst_off_q;
  logic [15:0] a_row, b_row, dst_row;
  logic        last_row, last_iter;

  assign a_row     = head.addr_a + a_off_q + row_q;
  assign b_row     = head.aux_lo + b_off_q + (row_operand ? 16'd0 : row_q);
  assign dst_row   = head.addr_b + dst_off_q + row_q;
  assign last_row  = row_q == head.rows - 1'b1;
  assign last_iter = iter_q == head.count - 1'b1;

  // Entries: a row's operands from its reads until the lanes have taken them.
  logic [Entries-1:0] e_valid_d, e_valid_q, e_need_a_d, e_need_a_q, e_need_b_d, e_need_b_q;
  logic [Entries-1:0] e_last_d, e_last_q;
  logic [Entries-1:0][Dim*32-1:0] e_a_d, e_a_q, e_b_d, e_b_q;
  logic [Entries-1:0][15:0]       e_dst_d, e_dst_q;
  slot_t              fill_d, fill_q;  // the entry the reader fills next
  slot_t              take_d, take_q;  // the entry the lanes take next
  logic [Dim*32-1:0]  row_b_d, row_b_q;

  // The result register: a row the lanes finished, until it is written.
  logic              w_valid_d, w_valid_q, w_last_d, w_last_q;
  logic [15:0]       w_dst_d, w_dst_q;
  logic [Dim*32-1:0] w_data_d, w_data_q;

  // A read waits while its row is one an entry (but its own, for B) or the result register
  // still has to write.
  function automatic logic pending_write(input logic [15:0] row, input logic skip_own,
                                         input slot_t own);
    pending_write = w_valid_q && w_dst_q == row;
    for (int unsigned e = 0; e < Entries; e++) begin
      if (e_valid_q[e] && e_dst_q[e] == row && !(skip_own && own == 2'(e))) pending_write = 1'b1;
    end
  endfunction

  logic reading_row_b, reading_a, reading_b, a_free, a_blocked, b_blocked, row_b_blocked;
  logic pair, pair_granted;
  slot_t own_entry;  // the entry the row being read took at its A
  assign own_entry     = (fill_q == '0) ? 2'(Entries - 1) : fill_q - 1'b1;
  assign reading_row_b = head_valid && rd_q == RdIter && row_operand;
  assign reading_a     = head_valid && (rd_q == RdA || (rd_q == RdIter && !row_operand));
  assign reading_b     = head_valid && rd_q == RdB;
  assign a_free        = !e_valid_q[fill_q];
  assign a_blocked     = !a_in_ub && pending_write(a_row, 1'b0, '0);
  assign b_blocked     = pending_write(b_row, 1'b1, own_entry);
  assign row_b_blocked = pending_write(b_row, 1'b0, '0);
  // A row whose A is a unified-buffer row reads its B from the accumulators in the same cycle,
  // where the unified buffer grants A's read and B is no row still to be written.
  assign pair          = reading_a && a_in_ub && !row_operand && a_free &&
                         !pending_write(b_row, 1'b0, '0);

  logic a_granted, advance;
  assign a_granted    = a_in_ub ? ub_rd_req_o && ub_rd_gnt_i : acc_rd_req_o && acc_rd_gnt_i;
  assign pair_granted = pair && a_granted && acc_rd_req_o && acc_rd_gnt_i;

  // The unified buffer's read, then the accumulators', which for a pair waits on the first's
  // grant (two blocks: no loop through the memories' arbiters).
  assign ub_rd_req_o  = reading_a && a_free && a_in_ub;
  assign ub_rd_addr_o = a_row[UbAddrWidth-1:0];

  always_comb begin
    acc_rd_req_o  = 1'b0;
    acc_rd_addr_o = a_row[AccAddrWidth-1:0];
    if (reading_row_b) begin
      acc_rd_req_o  = !row_b_blocked;
      acc_rd_addr_o = b_row[AccAddrWidth-1:0];
    end else if (pair) begin
      acc_rd_req_o  = ub_rd_gnt_i;
      acc_rd_addr_o = b_row[AccAddrWidth-1:0];
    end else if (reading_a) begin
      acc_rd_req_o = a_free && !a_blocked && !a_in_ub;
    end else if (reading_b) begin
      acc_rd_req_o  = !b_blocked;
      acc_rd_addr_o = b_row[AccAddrWidth-1:0];
    end
  end

  // A unified-buffer row as fp32 lanes (bf16 widened exactly) or int32 lanes (sign-extended).
  logic [Dim*32-1:0] a_widened;
  always_comb begin
    for (int unsigned l = 0; l < Dim; l++) begin
      a_widened[l*32 +: 32] = int32 ? {{16{ub_rd_data_i[l*16 + 15]}}, ub_rd_data_i[l*16 +: 16]}
                                    : {ub_rd_data_i[l*16 +: 16], 16'h0};
    end
  end

  // ---------------------------------------------------------------------------
  // Lanes: the oldest full entry, one group of lanes (or with LANES one lane) a cycle.
  // ---------------------------------------------------------------------------
  logic [GroupWidth-1:0] group_d, group_q;
  logic [LaneWidth-1:0]  lane_d, lane_q;    // LANES: the lane of A folded next
  logic [31:0]           fold_d, fold_q;    // LANES: the running value S
  logic [Dim*32-1:0]     x_a, x_b;
  logic                  x_ready, w_free, x_step, x_done;
  assign x_a     = e_a_q[take_q];
  assign x_b     = e_b_q[take_q];
  assign x_ready = e_valid_q[take_q] && !e_need_a_q[take_q] && !e_need_b_q[take_q];
  // The result register takes a group when it holds no row waiting for its write, or the row
  // it holds is written this cycle.
  assign w_free  = !w_valid_q || acc_wr_gnt_i;

  // One group of lanes: the operation of the head's vop on A and B.
  logic [Lanes*32-1:0] group_a, group_b, group_result;

  always_comb begin
    group_a = x_a[group_q*Lanes*32 +: Lanes*32];
    group_b = x_b[group_q*Lanes*32 +: Lanes*32];
    // LANES folds through the first lane: op(S, A[lane]), S from B's lane 0.
    if (along_row) begin
      group_a[31:0] = (lane_q == '0) ? x_b[31:0] : fold_q;
      group_b[31:0] = x_a[lane_q*32 +: 32];
    end
  end

  for (genvar l = 0; l < Lanes; l++) begin : g_lane
    tpu_vector_lane u_lane (
      .op_i    (vop),
      .int32_i (int32),
      .a_i     (group_a[l*32 +: 32]),
      .b_i     (group_b[l*32 +: 32]),
      .result_o(group_result[l*32 +: 32])
    );
  end

  // A step of the lanes this cycle, and whether it finishes the entry's row. Only the steps that
  // write the result register wait for it to be free.
  assign x_done = along_row ? lane_q == LastLane : group_q == LastGroup;
  assign x_step = head_valid && x_ready && (w_free || (along_row && !x_done));

  assign acc_wr_req_o  = w_valid_q;
  assign acc_wr_addr_o = w_dst_q[AccAddrWidth-1:0];
  assign acc_wr_data_o = w_data_q;

  always_comb begin
    rd_d           = rd_q;
    arrival_d      = ToNone;
    arrival_slot_d = arrival_slot_q;
    iter_d         = iter_q;
    row_d          = row_q;
    a_off_d        = a_off_q;
    b_off_d        = b_off_q;
    dst_off_d      = dst_off_q;
    e_valid_d      = e_valid_q;
    e_need_a_d     = e_need_a_q;
    e_need_b_d     = e_need_b_q;
    e_last_d       = e_last_q;
    e_a_d          = e_a_q;
    e_b_d          = e_b_q;
    e_dst_d        = e_dst_q;
    fill_d         = fill_q;
    take_d         = take_q;
    row_b_d        = row_b_q;
    group_d        = group_q;
    lane_d         = lane_q;
    fold_d         = fold_q;
    w_valid_d      = w_valid_q && !acc_wr_gnt_i;
    w_last_d       = w_last_q;
    w_dst_d        = w_dst_q;
    w_data_d       = w_data_q;
    pop            = w_valid_q && acc_wr_gnt_i && w_last_q;

    // The row read last cycle arrives.
    unique case (arrival_q)
      ToA, ToAUb: begin
        e_a_d[arrival_slot_q]      = (arrival_q == ToAUb) ? a_widened : acc_rd_data_i;
        e_need_a_d[arrival_slot_q] = 1'b0;
        if (row_operand) e_b_d[arrival_slot_q] = row_b_q;
      end
      ToAUbB: begin
        e_a_d[arrival_slot_q]      = a_widened;
        e_b_d[arrival_slot_q]      = acc_rd_data_i;
        e_need_a_d[arrival_slot_q] = 1'b0;
        e_need_b_d[arrival_slot_q] = 1'b0;
      end
      ToB: begin
        e_b_d[arrival_slot_q]      = acc_rd_data_i;
        e_need_b_d[arrival_slot_q] = 1'b0;
      end
      ToRowB:  row_b_d = acc_rd_data_i;
      default: ;
    endcase

    // The reader: the next row's reads, then the position after it.
    advance = 1'b0;
    if (reading_row_b && acc_rd_gnt_i) begin
      arrival_d = ToRowB;
      rd_d      = RdA;
    end else if (reading_a && a_granted) begin
      arrival_d          = pair_granted ? ToAUbB : a_in_ub ? ToAUb : ToA;
      arrival_slot_d     = fill_q;
      e_valid_d[fill_q]  = 1'b1;
      e_need_a_d[fill_q] = 1'b1;
      e_need_b_d[fill_q] = !row_operand;
      e_dst_d[fill_q]    = dst_row;
      e_last_d[fill_q]   = last_row && last_iter;
      fill_d             = next_slot(fill_q);
      rd_d               = RdB;
      advance            = row_operand || pair_granted;
    end else if (reading_b && acc_rd_gnt_i) begin
      arrival_d      = ToB;
      arrival_slot_d = own_entry;
      advance        = 1'b1;
    end
    if (advance) begin
      row_d = row_q + 1'b1;
      rd_d  = RdA;
      if (last_row) begin
        row_d     = '0;
        iter_d    = iter_q + 1'b1;
        a_off_d   = a_off_q + head.step_a;
        b_off_d   = b_off_q + head.aux_hi;
        dst_off_d = dst_off_q + head.step_b;
        rd_d      = RdIter;
        if (last_iter) begin
          iter_d    = '0;
          a_off_d   = '0;
          b_off_d   = '0;
          dst_off_d = '0;
          rd_d      = RdDrain;
        end
      end
    end
    if (rd_q == RdDrain && pop) rd_d = RdIter;

    // The lanes.
    if (x_step) begin
      if (along_row) begin
        fold_d = group_result[31:0];
        lane_d = lane_q + 1'b1;
      end else begin
        w_data_d[group_q*Lanes*32 +: Lanes*32] = group_result;
        group_d = group_q + 1'b1;
      end
      if (x_done) begin
        if (along_row) w_data_d = {Dim{group_result[31:0]}};
        group_d           = '0;
        lane_d            = '0;
        w_valid_d         = 1'b1;
        w_dst_d           = e_dst_q[take_q];
        w_last_d          = e_last_q[take_q];
        e_valid_d[take_q] = 1'b0;
        take_d            = next_slot(take_q);
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rd_q           <= RdIter;
      arrival_q      <= ToNone;
      arrival_slot_q <= '0;
      iter_q         <= '0;
      row_q          <= '0;
      a_off_q        <= '0;
      b_off_q        <= '0;
      dst_off_q      <= '0;
      e_valid_q      <= '0;
      e_need_a_q     <= '0;
      e_need_b_q     <= '0;
      e_last_q       <= '0;
      fill_q         <= '0;
      take_q         <= '0;
      row_b_q        <= '0;
      group_q        <= '0;
      lane_q         <= '0;
      fold_q         <= '0;
      w_valid_q      <= 1'b0;
      w_last_q       <= 1'b0;
      w_dst_q        <= '0;
      w_data_q       <= '0;
      e_a_q          <= '0;
      e_b_q          <= '0;
      e_dst_q        <= '0;
    end else begin
      rd_q           <= rd_d;
      arrival_q      <= arrival_d;
      arrival_slot_q <= arrival_slot_d;
      iter_q         <= iter_d;
      row_q          <= row_d;
      a_off_q        <= a_off_d;
      b_off_q        <= b_off_d;
      dst_off_q      <= dst_off_d;
      e_valid_q      <= e_valid_d;
      e_need_a_q     <= e_need_a_d;
      e_need_b_q     <= e_need_b_d;
      e_last_q       <= e_last_d;
      fill_q         <= fill_d;
      take_q         <= take_d;
      row_b_q        <= row_b_d;
      group_q        <= group_d;
      lane_q         <= lane_d;
      fold_q         <= fold_d;
      w_valid_q      <= w_valid_d;
      w_last_q       <= w_last_d;
      w_dst_q        <= w_dst_d;
      w_data_q       <= w_data_d;
      e_a_q          <= e_a_d;
      e_b_q          <= e_b_d;
      e_dst_q        <= e_dst_d;
    end
  end

  assign busy_o = head_valid;
  assign idle_o = queue_empty;

`ifndef SYNTHESIS
  `TPU_ASSERT(a_reads_in_memory, !acc_rd_req_o ||
              ({1'b0, reading_a && !a_in_ub ? a_row : b_row} < 17'(AccDepth)),
              "ELTWISE read a row past the accumulators (the issue stage checks the ranges)")
  `TPU_ASSERT(a_ub_reads_in_memory, !ub_rd_req_o || ({1'b0, a_row} < 17'(UbDepth)),
              "ELTWISE read a row past the unified buffer")
  `TPU_ASSERT(a_both_memories_for_a_pair, !(ub_rd_req_o && acc_rd_req_o) || pair,
              "ELTWISE reads both memories at once other than for a row's A and B")
  `TPU_ASSERT(a_writes_in_memory, !acc_wr_req_o || ({1'b0, w_dst_q} < 17'(AccDepth)),
              "ELTWISE wrote a row past the accumulators")
  `TPU_ASSERT(a_vop_legal, !head_valid || 32'(vop) < tpu_isa_pkg::VopCount,
              "ELTWISE with an operation the decoder refuses")
  `TPU_ASSERT(a_no_read_of_a_pending_write,
              !acc_rd_req_o || !w_valid_q || acc_rd_addr_o != w_dst_q[AccAddrWidth-1:0],
              "ELTWISE read a row it has yet to write: its rows are done in order")
  `TPU_ASSERT(a_entry_free_when_filled, !(reading_a && a_granted) || !e_valid_q[fill_q],
              "ELTWISE read a row into an entry the lanes have not taken")
  `TPU_ASSERT(a_arrival_into_an_entry, !(arrival_q inside {ToA, ToAUb, ToAUbB, ToB}) ||
              e_valid_q[arrival_slot_q], "a row arrived for an entry that is not waiting for it")
  `TPU_ASSERT(a_no_write_without_operation, !w_valid_q || head_valid,
              "ELTWISE holds a result row with no operation at the queue's head")
  `TPU_ASSERT_NEXT(a_arrival_after_grant, acc_rd_req_o && acc_rd_gnt_i,
                   arrival_q inside {ToA, ToAUbB, ToB, ToRowB},
                   "a granted read's row has nowhere to go")
  `TPU_ASSERT_NEXT(a_ub_arrival_after_grant, ub_rd_req_o && ub_rd_gnt_i,
                   arrival_q inside {ToAUb, ToAUbB},
                   "a granted unified-buffer read's row has nowhere to go")
`endif

endmodule
