// ACTIVATE: reads accumulator rows, adds the bias row, applies the activation
// function and writes bf16 rows to the unified buffer (rounded by N-OUT) or
// fp32 rows back to the accumulators (N-ACT). With REQ (Int8) it requantises
// int32 rows to int8 instead (Q-REQ, tpu_requant) and writes them to the
// unified buffer, sign-extended into 16-bit lanes; with REQ and F32 it writes
// the int32 values before the zero point and the clamp to the accumulators (a
// rescaling, TensorFlow Lite's ADD's of its inputs). Rows pass through ActLanes
// lanes, Dim / ActLanes lanes' worth per cycle, fully pipelined.
//
// Each iteration reads its bias row first (with REQ, then the multiplier and
// shift rows) and ends when its last row is written, so an iteration sees
// every row an earlier one wrote. An operation leaves the queue when its last
// iteration ends; the lanes then hold only the head operation's rows.
//
// The bias adder has one pipeline register. A core built with pipelined
// adders (AddStages of 2 or 3, for the clock rates of an FPGA) pipelines the
// lanes as deeply: the bias adder gets AddStages registers and one more
// before the function unit, and the function unit a register after each of
// its multipliers, one after a shift and one in its rounding (tpu_act_func's
// SplitStages).
`include "tpu_assert.svh"

module tpu_act_unit #(
  parameter int unsigned Dim        = 16,
  parameter int unsigned ActLanes   = 4,
  parameter int unsigned AddStages  = 0,
  parameter int unsigned UbDepth    = 1024,
  parameter int unsigned AccDepth   = 1024,
  parameter int unsigned QueueDepth = 4,
  parameter bit          Int8       = 1'b0,  // REQ: requantisation
  parameter bit          Float      = 1'b1,  // the bias adder and function lanes
  // exp, reciprocal and reciprocal square root in the function lanes (a core
  // with a vector unit; elsewhere the decoder rejects their codes)
  parameter bit          VectorFunctions = 1'b0,
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

  output logic                        acc_rd_req_o,
  output logic [AccAddrWidth-1:0]     acc_rd_addr_o,
  input  logic                        acc_rd_gnt_i,
  input  logic [Dim*32-1:0]           acc_rd_data_i,
  output logic                        ub_wr_req_o,
  output logic [UbAddrWidth-1:0]      ub_wr_addr_o,
  output logic [Dim*16-1:0]           ub_wr_data_o,
  input  logic                        ub_wr_gnt_i,
  output logic                        acc_wr_req_o,
  output logic [AccAddrWidth-1:0]     acc_wr_addr_o,
  output logic [Dim*32-1:0]           acc_wr_data_o,
  input  logic                        acc_wr_gnt_i,

  output logic                        idle_o
);

  localparam int unsigned Groups      = Dim / ActLanes;
  localparam int unsigned GroupWidth  = (Groups > 1) ? $clog2(Groups) : 1;
  localparam int unsigned LastGroupIdx = Groups - 1;
  localparam logic [GroupWidth-1:0] LastGroup = LastGroupIdx[GroupWidth-1:0];
  // Bias adder (and its output register), then the function unit.
  localparam bit          Pipelined   = AddStages >= 2;
  localparam int unsigned BiasStages  = Pipelined ? AddStages + 1 : 1;
  localparam int unsigned FuncStages  = Pipelined ? tpu_pkg::ActFuncSplitLatency
                                                  : tpu_pkg::ActFuncLatency;
  localparam int unsigned FloatLatency = BiasStages + FuncStages;
  localparam int unsigned LaneLatency  = Float ? FloatLatency : tpu_pkg::RequantLatency;
  localparam logic [31:0] NegZeroFp32 = 32'h8000_0000;

  if (ActLanes < 1 || ActLanes > Dim || Dim % ActLanes != 0) begin : g_bad_lanes
    $error("tpu_act_unit: ActLanes must divide Dim");
  end
  if (AddStages > tpu_pkg::AddStagesMax) begin : g_bad_stages
    $error("tpu_act_unit: AddStages must be 0, 1, 2 or 3");
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

  logic       use_bias, to_acc, requant;
  logic [3:0] func;
  logic [15:0] alpha;
  logic [7:0] zero_point, clamp_lo, clamp_hi;
  assign use_bias   = head.flags[tpu_isa_pkg::ActivateFlagBias];
  assign to_acc     = head.flags[tpu_isa_pkg::ActivateFlagF32];
  assign requant    = Int8 && head.flags[tpu_isa_pkg::ActivateFlagReq];
  assign func       = head.func;
  assign alpha      = head.alpha;
  // REQ's zero point and clamps, which the operation carries as host_stride (tpu_issue).
  assign {clamp_hi, clamp_lo, zero_point} = head.host_stride[23:0];

  // ---------------------------------------------------------------------------
  // Iteration sequencing: the bias row, then the rows, then wait for writes.
  // ---------------------------------------------------------------------------
  typedef enum logic [2:0] {
    IterStart,   // load the bias row, if any
    BiasWait,    // bias row arriving
    MultRead,    // REQ: load the multiplier row
    MultWait,
    ShiftRead,   // REQ: load the shift row
    ShiftWait,
    IterRows     // rows streaming; the iteration ends when the last is written
  } iter_state_e;

  iter_state_e state_d, state_q;
  logic [15:0] iter_d, iter_q, rows_read_d, rows_read_q, rows_written_d, rows_written_q;
  logic [15:0] src_off_d, src_off_q, dst_off_d, dst_off_q, bias_off_d, bias_off_q;
  logic [Dim*32-1:0] bias_d, bias_q, mult_d, mult_q;
  logic [Dim*6-1:0]  shift_d, shift_q;
  logic [15:0] bias_row, qparam_row, src_row;
  logic        bias_req, qparam_req, row_req, read_inflight_d, read_inflight_q;
  logic        row_write, iter_done;
  logic        rowbuf_in_ready, rowbuf_valid, rowbuf_pop;
  logic [Dim*32-1:0] rowbuf_data;
  logic [1:0]  rowbuf_count;

  assign bias_row = head.aux_lo + bias_off_q;
  assign src_row  = head.addr_a + src_off_q + rows_read_q;
  // Rows are read only when the row buffer will have a place for them.
  assign bias_req = head_valid && state_q == IterStart && use_bias;
  assign qparam_req = Int8 && head_valid && (state_q == MultRead || state_q == ShiftRead);
  assign qparam_row = bias_row + ((state_q == MultRead) ? 16'd1 : 16'd2);
  assign row_req  = head_valid && state_q == IterRows && rows_read_q != head.rows &&
                    ({1'b0, rowbuf_count} + {2'b0, read_inflight_q}) < 3'd2;
  assign acc_rd_req_o  = bias_req || qparam_req || row_req;
  assign acc_rd_addr_o = bias_req   ? bias_row[AccAddrWidth-1:0] :
                         qparam_req ? qparam_row[AccAddrWidth-1:0] : src_row[AccAddrWidth-1:0];
  assign iter_done     = state_q == IterRows && row_write && rows_written_q == head.rows - 1'b1;

  // The shift row as each lane's s, clamped into -31 .. 30 (the shifts Q-REQ
  // defines) so that 6 bits hold it.
  logic [Dim*6-1:0] shift_row;
  always_comb begin
    for (int unsigned l = 0; l < Dim; l++) begin
      logic signed [31:0] s;
      s = $signed(acc_rd_data_i[l*32 +: 32]);
      shift_row[l*6 +: 6] = (s < -32'sd31) ? 6'b100001 : (s > 32'sd30) ? 6'd30 : s[5:0];
    end
  end

  always_comb begin
    state_d         = state_q;
    iter_d          = iter_q;
    rows_read_d     = rows_read_q;
    rows_written_d  = rows_written_q;
    src_off_d       = src_off_q;
    dst_off_d       = dst_off_q;
    bias_off_d      = bias_off_q;
    bias_d          = bias_q;
    mult_d          = mult_q;
    shift_d         = shift_q;
    read_inflight_d = row_req && acc_rd_gnt_i;
    pop             = 1'b0;

    unique case (state_q)
      IterStart: begin
        if (head_valid) begin
          if (!use_bias) state_d = IterRows;
          else if (acc_rd_gnt_i) state_d = BiasWait;
        end
      end
      BiasWait: begin
        bias_d  = acc_rd_data_i;
        state_d = requant ? MultRead : IterRows;
      end
      MultRead:  if (acc_rd_gnt_i) state_d = MultWait;
      MultWait: begin
        if (Int8) mult_d = acc_rd_data_i;
        state_d = ShiftRead;
      end
      ShiftRead: if (acc_rd_gnt_i) state_d = ShiftWait;
      ShiftWait: begin
        if (Int8) shift_d = shift_row;
        state_d = IterRows;
      end
      IterRows: begin
        if (row_req && acc_rd_gnt_i) rows_read_d = rows_read_q + 1'b1;
        if (row_write) rows_written_d = rows_written_q + 1'b1;
        if (iter_done) begin
          state_d        = IterStart;
          rows_read_d    = '0;
          rows_written_d = '0;
          iter_d         = iter_q + 1'b1;
          src_off_d      = src_off_q + head.step_a;
          dst_off_d      = dst_off_q + head.step_b;
          bias_off_d     = bias_off_q + head.aux_hi;
          if (iter_q == head.count - 1'b1) begin
            pop        = 1'b1;
            iter_d     = '0;
            src_off_d  = '0;
            dst_off_d  = '0;
            bias_off_d = '0;
          end
        end
      end
      default: state_d = IterStart;
    endcase
  end

  // ---------------------------------------------------------------------------
  // Row buffer, then Dim / ActLanes groups of lanes into the pipeline.
  // ---------------------------------------------------------------------------
  logic                  adv;          // the lane pipeline advances
  logic [GroupWidth-1:0] group_d, group_q;
  logic                  in_valid, in_last;
  logic [ActLanes*32-1:0] in_x, in_bias, in_mult;
  logic [ActLanes*6-1:0]  in_shift;

  tpu_fifo #(.Width(Dim * 32), .Depth(2)) u_rowbuf (
    .clk_i, .rst_ni,
    .in_valid_i (read_inflight_q),
    .in_ready_o (rowbuf_in_ready),
    .in_data_i  (acc_rd_data_i),
    .out_valid_o(rowbuf_valid),
    .out_ready_i(rowbuf_pop),
    .out_data_o (rowbuf_data),
    .count_o    (rowbuf_count)
  );

  always_comb begin
    in_valid   = rowbuf_valid && adv;
    in_last    = group_q == LastGroup;
    rowbuf_pop = in_valid && in_last;
    in_x       = rowbuf_data[group_q*ActLanes*32 +: ActLanes*32];
    // Without a bias the adder adds -0, which leaves every value as it is
    // (after N-IN): -0 is the identity of N-ADD.
    in_bias    = use_bias ? bias_q[group_q*ActLanes*32 +: ActLanes*32]
                          : {ActLanes{NegZeroFp32}};
    in_mult    = mult_q[group_q*ActLanes*32 +: ActLanes*32];
    in_shift   = shift_q[group_q*ActLanes*6 +: ActLanes*6];
    group_d    = group_q;
    if (in_valid) group_d = in_last ? '0 : group_q + 1'b1;
  end

  // ---------------------------------------------------------------------------
  // Lanes: N-ADD bias add (one register), the function, N-OUT rounding; and
  // the requantisers, their int8 results as 16-bit lanes, as late as those.
  // ---------------------------------------------------------------------------
  logic [ActLanes*32-1:0] lane_y, lane_int32;
  logic [ActLanes*16-1:0] lane_bf16, lane_int8;

  for (genvar l = 0; l < ActLanes; l++) begin : g_requant
    if (Int8) begin : g_on
      logic [7:0]  requant_out, requant_late;
      logic [31:0] requant_wide, requant_wide_late;

      tpu_requant u_requant (
        .clk_i, .rst_ni,
        .en_i        (adv),
        .sum_i       (in_x[l*32 +: 32]),
        .bias_i      (in_bias[l*32 +: 32]),
        .mult_i      (in_mult[l*32 +: 32]),
        .shift_i     (in_shift[l*6 +: 6]),
        .zero_point_i(zero_point),
        .lo_i        (clamp_lo),
        .hi_i        (clamp_hi),
        .out_o       (requant_out),
        .wide_o      (requant_wide)
      );

      tpu_delay #(.Width(40), .Depth(LaneLatency - tpu_pkg::RequantLatency)) u_align (
        .clk_i, .rst_ni,
        .en_i  (adv),
        .data_i({requant_wide, requant_out}),
        .data_o({requant_wide_late, requant_late})
      );

      assign lane_int8[l*16 +: 16]  = {{8{requant_late[7]}}, requant_late};
      // F32: y itself, the zero point being 0 (ACTIVATE's checks).
      assign lane_int32[l*32 +: 32] = requant_wide_late;
    end else begin : g_off
      assign lane_int8[l*16 +: 16]  = '0;
      assign lane_int32[l*32 +: 32] = '0;
    end
  end

  if (!Int8) begin : g_no_requant
    logic unused_requant;
    assign unused_requant = ^{requant, in_mult, in_shift, zero_point, clamp_lo, clamp_hi};
  end

  for (genvar l = 0; l < ActLanes; l++) begin : g_lane
    if (Float) begin : g_float
      logic [31:0] lane_sum, lane_x;

      tpu_fp32_add #(.PipeStages(Pipelined ? AddStages : 1)) u_bias_add (
        .clk_i, .rst_ni,
        .en_i (adv),
        .x_i  (in_x[l*32 +: 32]),
        .y_i  (in_bias[l*32 +: 32]),
        .sum_o(lane_sum)
      );

      tpu_pipe_reg #(.Width(32), .Enable(Pipelined)) u_bias_out (
        .clk_i, .rst_ni,
        .en_i  (adv),
        .data_i(lane_sum),
        .data_o(lane_x)
      );

      tpu_act_func #(.SplitStages(Pipelined), .VectorFunctions(VectorFunctions)) u_func (
        .clk_i, .rst_ni,
        .en_i   (adv),
        .func_i (func),
        .alpha_i(alpha),
        .x_i    (lane_x),
        .y_o    (lane_y[l*32 +: 32])
      );

      tpu_fp32_to_bf16 #(.PipeStages(0)) u_round (
        .clk_i, .rst_ni,
        .en_i   (adv),
        .value_i(lane_y[l*32 +: 32]),
        .value_o(lane_bf16[l*16 +: 16])
      );
    end else begin : g_int8_only
      assign lane_y[l*32 +: 32]    = '0;
      assign lane_bf16[l*16 +: 16] = '0;
    end
  end

  if (!Float) begin : g_no_float
    logic unused_float;
    assign unused_float = ^{func, alpha, to_acc};
  end

  logic                  out_valid, out_last;
  logic [GroupWidth-1:0] out_group;

  tpu_delay #(.Width(2 + GroupWidth), .Depth(LaneLatency)) u_lane_valid (
    .clk_i, .rst_ni,
    .en_i  (adv),
    .data_i({in_valid, in_last, group_q}),
    .data_o({out_valid, out_last, out_group})
  );

  // ---------------------------------------------------------------------------
  // Output row: groups are collected, then the row is written. While a full
  // row waits for its write port, the lanes hold still.
  // ---------------------------------------------------------------------------
  logic [Dim*32-1:0] out_f32_d, out_f32_q;
  logic [Dim*16-1:0] out_bf16_d, out_bf16_q;
  logic              out_full_d, out_full_q;
  logic [15:0]       dst_row;

  assign dst_row       = head.addr_b + dst_off_q + rows_written_q;
  assign ub_wr_req_o   = out_full_q && !to_acc;
  assign acc_wr_req_o  = out_full_q && to_acc;
  assign ub_wr_addr_o  = dst_row[UbAddrWidth-1:0];
  assign acc_wr_addr_o = dst_row[AccAddrWidth-1:0];
  assign ub_wr_data_o  = out_bf16_q;
  assign acc_wr_data_o = out_f32_q;
  assign row_write     = to_acc ? acc_wr_req_o && acc_wr_gnt_i : ub_wr_req_o && ub_wr_gnt_i;
  assign adv           = !out_full_q || row_write;

  always_comb begin
    out_f32_d  = out_f32_q;
    out_bf16_d = out_bf16_q;
    out_full_d = out_full_q && !row_write;
    if (out_valid && adv) begin
      out_f32_d[out_group*ActLanes*32 +: ActLanes*32]  = requant ? lane_int32 : lane_y;
      out_bf16_d[out_group*ActLanes*16 +: ActLanes*16] = requant ? lane_int8 : lane_bf16;
      if (out_last) out_full_d = 1'b1;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q         <= IterStart;
      iter_q          <= '0;
      rows_read_q     <= '0;
      rows_written_q  <= '0;
      src_off_q       <= '0;
      dst_off_q       <= '0;
      bias_off_q      <= '0;
      bias_q          <= '0;
      mult_q          <= '0;
      shift_q         <= '0;
      read_inflight_q <= 1'b0;
      group_q         <= '0;
      out_f32_q       <= '0;
      out_bf16_q      <= '0;
      out_full_q      <= 1'b0;
    end else begin
      state_q         <= state_d;
      iter_q          <= iter_d;
      rows_read_q     <= rows_read_d;
      rows_written_q  <= rows_written_d;
      src_off_q       <= src_off_d;
      dst_off_q       <= dst_off_d;
      bias_off_q      <= bias_off_d;
      bias_q          <= bias_d;
      mult_q          <= mult_d;
      shift_q         <= shift_d;
      read_inflight_q <= read_inflight_d;
      group_q         <= group_d;
      out_f32_q       <= out_f32_d;
      out_bf16_q      <= out_bf16_d;
      out_full_q      <= out_full_d;
    end
  end

  assign idle_o = queue_empty;

  `TPU_ASSERT(a_rowbuf_has_room, !read_inflight_q || rowbuf_in_ready,
              "a row read from memory found no room in the row buffer")
  `TPU_ASSERT(a_rows_in_memory, !row_req || ({1'b0, src_row} < 17'(AccDepth)),
              "source row beyond the accumulators")
  `TPU_ASSERT(a_bias_in_memory, !bias_req || ({1'b0, bias_row} < 17'(AccDepth)),
              "bias row beyond the accumulators")
  `TPU_ASSERT(a_qparams_in_memory, !qparam_req || ({1'b0, qparam_row} < 17'(AccDepth)),
              "multiplier or shift row beyond the accumulators")
  `TPU_ASSUME(a_requant_bias, !(head_valid && requant) || (use_bias && func == '0),
              "REQ without BIAS, or with a function")
  `TPU_ASSUME(a_rescale_unclamped, !(head_valid && requant && to_acc) ||
              (zero_point == '0 && clamp_lo == '0 && clamp_hi == '0),
              "REQ F32 with a zero point or clamp bounds")
  `TPU_ASSERT(a_dst_in_memory,
              !out_full_q || ({1'b0, dst_row} < (to_acc ? 17'(AccDepth) : 17'(UbDepth))),
              "destination row beyond the memory")

endmodule
