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
// Rows are done one at a time and in order: a row's operands are read after
// every earlier row is written, so an ELTWISE may write over its own operands
// (in place, or a running maximum) and means the same on every backend. Each
// row reads A (and B without ROW), then Dim / Lanes groups of lanes pass the
// operation, one group a cycle, into the result row, which is written back.
// ROW's row is read once per iteration, before the iteration's first row.
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
  // Sequencing: per iteration ROW's row, then per row A, B, the groups, the write.
  // ---------------------------------------------------------------------------
  typedef enum logic [2:0] {
    IterStart,  // ROW: read the iteration's row of B
    ReadA,      // read row A (keeping the row that arrives from the read before)
    ReadB,      // read row B
    Capture,    // keep the row that arrives
    Combine,    // one group of lanes a cycle
    Fold,       // LANES: one lane of A a cycle into the running value
    Write       // write the result row
  } state_e;

  // Where the row arriving from last cycle's granted read goes.
  typedef enum logic [1:0] {
    ToNone,
    ToA,    // an accumulator row for A
    ToAUb,  // a unified-buffer row for A, widened
    ToB
  } arrival_e;

  state_e   state_d, state_q;
  arrival_e arrival_d, arrival_q;
  logic [15:0] iter_d, iter_q, row_d, row_q;
  logic [15:0] a_off_d, a_off_q, b_off_d, b_off_q, dst_off_d, dst_off_q;
  logic [Dim*32-1:0] a_d, a_q, b_d, b_q, result_d, result_q;
  logic [GroupWidth-1:0] group_d, group_q;
  logic [LaneWidth-1:0]  lane_d, lane_q;    // LANES: the lane of A folded next
  logic [31:0]           fold_d, fold_q;    // LANES: the running value S
  logic [15:0] a_row, b_row, dst_row;
  logic        last_row;

  assign a_row    = head.addr_a + a_off_q + row_q;
  assign b_row    = head.aux_lo + b_off_q + (row_operand ? 16'd0 : row_q);
  assign dst_row  = head.addr_b + dst_off_q + row_q;
  assign last_row = row_q == head.rows - 1'b1;

  // A's read goes to the memory that holds A.
  logic a_gnt;
  assign a_gnt = a_in_ub ? ub_rd_gnt_i : acc_rd_gnt_i;

  always_comb begin
    ub_rd_req_o   = 1'b0;
    ub_rd_addr_o  = a_row[UbAddrWidth-1:0];
    acc_rd_req_o  = 1'b0;
    acc_rd_addr_o = a_row[AccAddrWidth-1:0];
    acc_wr_req_o  = 1'b0;
    acc_wr_addr_o = dst_row[AccAddrWidth-1:0];
    acc_wr_data_o = result_q;
    if (head_valid) begin
      unique case (state_q)
        IterStart: begin
          acc_rd_req_o  = row_operand;
          acc_rd_addr_o = b_row[AccAddrWidth-1:0];
        end
        ReadA: begin
          ub_rd_req_o  = a_in_ub;
          acc_rd_req_o = !a_in_ub;
        end
        ReadB: begin
          acc_rd_req_o  = 1'b1;
          acc_rd_addr_o = b_row[AccAddrWidth-1:0];
        end
        Write: acc_wr_req_o = 1'b1;
        default: ;
      endcase
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

  // One group of lanes: the operation of the head's vop on A and B.
  logic [Lanes*32-1:0] group_a, group_b, group_result;

  always_comb begin
    group_a = a_q[group_q*Lanes*32 +: Lanes*32];
    group_b = b_q[group_q*Lanes*32 +: Lanes*32];
    // LANES folds through the first lane: op(S, A[lane]).
    if (state_q == Fold) begin
      group_a[31:0] = fold_q;
      group_b[31:0] = a_q[lane_q*32 +: 32];
    end
    for (int unsigned l = 0; l < Lanes; l++) begin
      group_result[l*32 +: 32] = vector_lane(vop, int32, group_a[l*32 +: 32], group_b[l*32 +: 32]);
    end
  end

  always_comb begin
    state_d   = state_q;
    arrival_d = ToNone;
    iter_d    = iter_q;
    row_d     = row_q;
    a_off_d   = a_off_q;
    b_off_d   = b_off_q;
    dst_off_d = dst_off_q;
    a_d       = a_q;
    b_d       = b_q;
    result_d  = result_q;
    group_d   = group_q;
    lane_d    = lane_q;
    fold_d    = fold_q;
    pop       = 1'b0;

    unique case (arrival_q)
      ToA:     a_d = acc_rd_data_i;
      ToAUb:   a_d = a_widened;
      ToB:     b_d = acc_rd_data_i;
      default: ;
    endcase

    unique case (state_q)
      IterStart: begin
        if (head_valid) begin
          if (!row_operand) begin
            state_d = ReadA;
          end else if (acc_rd_gnt_i) begin
            arrival_d = ToB;
            state_d   = ReadA;
          end
        end
      end
      ReadA: begin
        if (a_gnt) begin
          arrival_d = a_in_ub ? ToAUb : ToA;
          state_d   = row_operand ? Capture : ReadB;
        end
      end
      ReadB: begin
        if (acc_rd_gnt_i) begin
          arrival_d = ToB;
          state_d   = Capture;
        end
      end
      Capture: begin
        group_d = '0;
        lane_d  = '0;
        // The seed, B's lane 0, arrives now without ROW and is already kept with it.
        fold_d  = (arrival_q == ToB) ? acc_rd_data_i[31:0] : b_q[31:0];
        state_d = along_row ? Fold : Combine;
      end
      Fold: begin
        fold_d = group_result[31:0];
        lane_d = lane_q + 1'b1;
        if (lane_q == LastLane) begin
          lane_d   = '0;
          result_d = {Dim{group_result[31:0]}};
          state_d  = Write;
        end
      end
      Combine: begin
        result_d[group_q*Lanes*32 +: Lanes*32] = group_result;
        group_d = group_q + 1'b1;
        if (group_q == LastGroup) begin
          group_d = '0;
          state_d = Write;
        end
      end
      Write: begin
        if (acc_wr_gnt_i) begin
          row_d   = row_q + 1'b1;
          state_d = ReadA;
          if (last_row) begin
            row_d     = '0;
            iter_d    = iter_q + 1'b1;
            a_off_d   = a_off_q + head.step_a;
            b_off_d   = b_off_q + head.aux_hi;
            dst_off_d = dst_off_q + head.step_b;
            state_d   = IterStart;
            if (iter_q == head.count - 1'b1) begin
              pop       = 1'b1;
              iter_d    = '0;
              a_off_d   = '0;
              b_off_d   = '0;
              dst_off_d = '0;
            end
          end
        end
      end
      default: state_d = IterStart;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q   <= IterStart;
      arrival_q <= ToNone;
      iter_q    <= '0;
      row_q     <= '0;
      a_off_q   <= '0;
      b_off_q   <= '0;
      dst_off_q <= '0;
      a_q       <= '0;
      b_q       <= '0;
      result_q  <= '0;
      group_q   <= '0;
      lane_q    <= '0;
      fold_q    <= '0;
    end else begin
      state_q   <= state_d;
      arrival_q <= arrival_d;
      iter_q    <= iter_d;
      row_q     <= row_d;
      a_off_q   <= a_off_d;
      b_off_q   <= b_off_d;
      dst_off_q <= dst_off_d;
      a_q       <= a_d;
      b_q       <= b_d;
      result_q  <= result_d;
      group_q   <= group_d;
      lane_q    <= lane_d;
      fold_q    <= fold_d;
    end
  end

  // One lane of N-VEC: fp32 by tpu_fp_pkg, or int32 (wrapping, signed max and min).
  function automatic logic [31:0] vector_lane(input logic [3:0] op, input logic is_int,
                                               input logic [31:0] a, input logic [31:0] b);
    logic [31:0] addend, fp_sum, int_max, int_min, int_product;
    // One adder for add and sub: sub adds B with its sign flipped.
    addend      = {b[31] ^ (op == tpu_isa_pkg::VopSub), b[30:0]};
    fp_sum      = tpu_fp_pkg::add_round(tpu_fp_pkg::add_normalise(tpu_fp_pkg::add_align(
                      tpu_fp_pkg::add_order(a, addend))));
    int_product = a * b;
    int_max     = $signed(a) >= $signed(b) ? a : b;
    int_min     = $signed(a) >= $signed(b) ? b : a;
    unique case (op)
      tpu_isa_pkg::VopAdd: vector_lane = is_int ? a + b : fp_sum;
      tpu_isa_pkg::VopSub: vector_lane = is_int ? a - b : fp_sum;
      tpu_isa_pkg::VopMul: vector_lane = is_int ? int_product : tpu_fp_pkg::fp32_mul(a, b);
      tpu_isa_pkg::VopMax: vector_lane = is_int ? int_max : tpu_fp_pkg::fp32_max_min(a, b, 1'b1);
      default:             vector_lane = is_int ? int_min : tpu_fp_pkg::fp32_max_min(a, b, 1'b0);
    endcase
  endfunction

  assign busy_o = head_valid;
  assign idle_o = queue_empty;

`ifndef SYNTHESIS
  `TPU_ASSERT(a_reads_in_memory, !acc_rd_req_o ||
              ({1'b0, (state_q == ReadA) ? a_row : b_row} < 17'(AccDepth)),
              "ELTWISE read a row past the accumulators (the issue stage checks the ranges)")
  `TPU_ASSERT(a_ub_reads_in_memory, !ub_rd_req_o || ({1'b0, a_row} < 17'(UbDepth)),
              "ELTWISE read a row past the unified buffer")
  `TPU_ASSERT(a_one_memory_a_cycle, !(ub_rd_req_o && acc_rd_req_o),
              "ELTWISE reads both memories at once: it reads one row at a time")
  `TPU_ASSERT(a_writes_in_memory, !acc_wr_req_o || ({1'b0, dst_row} < 17'(AccDepth)),
              "ELTWISE wrote a row past the accumulators")
  `TPU_ASSERT(a_vop_legal, !head_valid || 32'(vop) < tpu_isa_pkg::VopCount,
              "ELTWISE with an operation the decoder refuses")
  `TPU_ASSERT(a_no_read_while_writing, !(acc_rd_req_o && acc_wr_req_o),
              "ELTWISE reads and writes in the same cycle: rows are done one at a time")
  `TPU_ASSERT_NEXT(a_arrival_after_grant, acc_rd_req_o && acc_rd_gnt_i,
                   arrival_q == ToA || arrival_q == ToB, "a granted read's row has nowhere to go")
  `TPU_ASSERT_NEXT(a_ub_arrival_after_grant, ub_rd_req_o && ub_rd_gnt_i, arrival_q == ToAUb,
                   "a granted unified-buffer read's row has nowhere to go")
`endif

endmodule
