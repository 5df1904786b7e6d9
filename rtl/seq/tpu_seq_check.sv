// The instruction checks of the sequential core (tpu_seq_core): the "Errors" of
// docs/isa.md, in their order, on what tpu_decode made of the instruction, one
// step per cycle through one 16 x 16 multiplier and one 34-bit accumulator.
// The array core's issue stage (tpu_issue) computes every span in parallel, in
// the cycle it issues; here an instruction waits a dozen cycles, which costs
// nothing next to the hundreds it takes to run, and the arithmetic is shared.
//
// A span of on-chip rows ends at base + (count - 1) * step + rows (rows is 1
// for the bias); the host bytes end at host_addr + (count - 1) * host_step +
// (rows - 1) * host_stride + the row's bytes. Both are built in the
// accumulator, a 32-bit operand as two 16-bit halves. A host span may reach
// 2^49, but anything from 2^34 up is past 2^32 all the same: such bits and
// carries only set a sticky flag, so the accumulator needs 34 bits, not 50.
`include "tpu_assert.svh"

module tpu_seq_check #(
  parameter int unsigned Dim         = 4,
  parameter int unsigned UbDepth     = 256,
  parameter int unsigned AccDepth    = 256,
  parameter int unsigned WeightTiles = 2
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,

  input  logic                 start_i,        // check the instruction (held until done_o)
  input  tpu_isa_pkg::fields_t fields_i,       // its fields and kind (tpu_decode)
  input  tpu_isa_pkg::kind_t   kind_i,
  input  logic                 field_error_i,  // a field's value breaks a rule (tpu_decode)
  input  logic                 stray_i,        // a bit its opcode does not use is set
  input  logic [4:0]           tiles_i,        // weight tiles loaded and not yet claimed
  output logic                 done_o,         // one cycle; error_o is valid with it
  output logic [7:0]           error_o         // tpu_regs_pkg::Err*, ErrNone if it may run
);

  logic        fetch, f32;
  logic [15:0] host_rows_minus1;
  logic [8:0]  host_row_bytes;
  logic [2:0]  beat_mask;

  always_comb begin
    fetch            = kind_i.matmul && kind_i.host_used;
    f32              = kind_i.activate && kind_i.dst_acc;
    host_rows_minus1 = kind_i.host_k_valid ? 16'(fields_i.k_valid) - 16'd1 : fields_i.rows - 16'd1;
    host_row_bytes   = kind_i.host_fp32 ? 9'(4 * Dim) : 9'(2 * Dim);
    // HOST_ALIGN: a multiple of the row or of the 4-byte bus, whichever is smaller.
    beat_mask = (host_row_bytes < 9'd4) ? 3'(host_row_bytes - 9'd1) : 3'd3;
  end

  // value > limit, for a 5-bit limit (weight tiles): the low bits alone need a carry chain.
  function automatic logic count_above(input logic [15:0] value, input logic [4:0] limit);
    count_above = value[15:5] != '0 || value[4:0] > limit;
  endfunction

  logic [4:0] tile_room;   // the weight tiles that may still be loaded
  assign tile_room = 5'(WeightTiles + 1) - tiles_i;

  // ---------------------------------------------------------------------------
  // The steps. Each on-chip span, in the order of the checks (source,
  // destination, bias), takes three: load base + rows, add (count - 1) * step,
  // compare the end with the depth.
  // ---------------------------------------------------------------------------
  localparam logic [1:0] SpanSrc  = 2'd0;
  localparam logic [1:0] SpanDst  = 2'd1;
  localparam logic [1:0] SpanBias = 2'd2;
  typedef enum logic [3:0] {
    StIdle,
    StFields,
    StSpanLoad, StSpanMul, StSpanEnd,   // the on-chip span span_q
    StHostLoad, StHostMul, StHostEnd,
    StOrder,      // ACC_OVERLAP and the weight tiles
    StDone
  } state_e;

  state_e      state_d, state_q;
  logic [1:0]  part_d, part_q;      // StHostMul: which of the four 16 x 16 products
  logic [1:0]  span_d, span_q;      // StSpan*: which span
  logic [33:0] acc_d, acc_q;
  logic        over_d, over_q;      // the host span is at 2^34 or more
  logic [16:0] src_end_d, src_end_q, dst_end_d, dst_end_q, bias_end_d, bias_end_q;
  logic [7:0]  error_d, error_q;

  logic [15:0] mul_a, mul_b;
  logic [31:0] product;
  logic [33:0] product_shifted;
  logic        product_over;        // product_shifted's bits from 2^34 up are not all zero
  logic [34:0] acc_sum;

  always_comb begin
    mul_a = fields_i.count - 16'd1;
    mul_b = fields_i.step_a;
    unique case (state_q)
      StSpanMul: begin
        unique case (span_q)
          SpanSrc:  mul_b = fields_i.step_a;
          SpanDst:  mul_b = fields_i.step_b;
          default:  mul_b = fields_i.bias_step;
        endcase
      end
      StHostMul: begin
        mul_a = part_q[1] ? host_rows_minus1 : fields_i.count - 16'd1;
        unique case (part_q)
          2'd0:    mul_b = fields_i.host_step[15:0];
          2'd1:    mul_b = fields_i.host_step[31:16];
          2'd2:    mul_b = fields_i.host_stride[15:0];
          default: mul_b = fields_i.host_stride[31:16];
        endcase
      end
      default: ;
    endcase
    product         = 32'(mul_a) * 32'(mul_b);
    product_shifted = (state_q == StHostMul && part_q[0]) ? {product[17:0], 16'd0} :
                                                            {2'b00, product};
    product_over    = state_q == StHostMul && part_q[0] && product[31:18] != '0;
    acc_sum         = {1'b0, acc_q} + {1'b0, product_shifted};
  end


  logic past_ub, past_acc, past_host;
  assign past_ub   = tpu_pkg::above_pow2(acc_q, $clog2(UbDepth));
  assign past_acc  = tpu_pkg::above_pow2(acc_q, $clog2(AccDepth));
  assign past_host = over_q || tpu_pkg::above_pow2(acc_q, 32);

  // The first iteration's host end, where the host accumulation starts.
  logic [32:0] host_row_end;
  assign host_row_end = {1'b0, fields_i.host_addr} + {24'd0, host_row_bytes};

  // The span in hand, and its first iteration's end.
  logic        span_used, span_acc;
  logic [15:0] span_base, span_rows;
  logic [16:0] span_rows_end;
  always_comb begin
    span_rows = fields_i.rows;
    unique case (span_q)
      SpanSrc: begin
        span_used = kind_i.src_used;
        span_acc  = kind_i.src_acc;
        span_base = fields_i.addr_a;
      end
      SpanDst: begin
        span_used = kind_i.dst_used;
        span_acc  = kind_i.dst_acc;
        span_base = fields_i.addr_b;
      end
      default: begin
        span_used = kind_i.bias_used;
        span_acc  = 1'b1;
        span_base = fields_i.bias_addr;
        span_rows = 16'd1;
      end
    endcase
    span_rows_end = {1'b0, span_base} + {1'b0, span_rows};
  end

  logic in_place;
  assign in_place = fields_i.addr_a == fields_i.addr_b && fields_i.step_a == fields_i.step_b;

  always_comb begin
    state_d    = state_q;
    part_d     = part_q;
    span_d     = span_q;
    acc_d      = acc_q;
    over_d     = over_q;
    src_end_d  = src_end_q;
    dst_end_d  = dst_end_q;
    bias_end_d = bias_end_q;
    error_d    = error_q;

    unique case (state_q)
      StIdle: begin
        if (start_i) begin
          error_d = tpu_regs_pkg::ErrNone;
          state_d = StFields;
        end
      end
      StFields: begin
        if (!kind_i.legal) begin
          error_d = tpu_regs_pkg::ErrIllegalOpcode;
          state_d = StDone;
        end else if (field_error_i || stray_i) begin
          error_d = tpu_regs_pkg::ErrIllegalField;
          state_d = StDone;
        end else begin
          span_d  = SpanSrc;
          state_d = StSpanLoad;
        end
      end

      StSpanLoad: begin
        acc_d   = 34'(span_rows_end);
        state_d = StSpanMul;
        if (!span_used) begin
          span_d  = span_q + 2'd1;
          state_d = (span_q == SpanBias) ? StHostLoad : StSpanLoad;
        end
      end
      StSpanMul: begin
        acc_d   = acc_sum[33:0];   // on-chip spans stay below 2^33
        state_d = StSpanEnd;
      end
      StSpanEnd: begin
        unique case (span_q)
          SpanSrc: src_end_d  = acc_q[16:0];
          SpanDst: dst_end_d  = acc_q[16:0];
          default: bias_end_d = acc_q[16:0];
        endcase
        span_d  = span_q + 2'd1;
        state_d = (span_q == SpanBias) ? StHostLoad : StSpanLoad;
        if (span_acc ? past_acc : past_ub) begin
          error_d = span_acc ? tpu_regs_pkg::ErrAccRange : tpu_regs_pkg::ErrUbRange;
          state_d = StDone;
        end
      end

      StHostLoad: begin
        acc_d   = 34'(host_row_end);
        over_d  = 1'b0;
        part_d  = 2'd0;
        state_d = StOrder;
        if (kind_i.host_used) begin
          state_d = StHostMul;
          if (((fields_i.host_addr[2:0] | fields_i.host_stride[2:0] | fields_i.host_step[2:0]) &
               beat_mask) != '0) begin
            error_d = tpu_regs_pkg::ErrHostAlign;
            state_d = StDone;
          end
        end
      end
      StHostMul: begin
        acc_d  = acc_sum[33:0];
        over_d = over_q || acc_sum[34] || product_over;
        part_d = part_q + 2'd1;
        if (part_q == 2'd3) state_d = StHostEnd;
      end
      StHostEnd: begin
        state_d = StOrder;
        if (past_host) begin
          error_d = tpu_regs_pkg::ErrHostRange;
          state_d = StDone;
        end
      end

      StOrder: begin
        state_d = StDone;
        if (f32 && ((kind_i.bias_used && tpu_pkg::rows_overlap(fields_i.addr_b, dst_end_q,
                                                               fields_i.bias_addr, bias_end_q)) ||
                    (!in_place && tpu_pkg::rows_overlap(fields_i.addr_b, dst_end_q, fields_i.addr_a,
                                                        src_end_q))))
        begin
          error_d = tpu_regs_pkg::ErrAccOverlap;
        end else if (kind_i.read_weights && count_above(fields_i.count, tile_room)) begin
          error_d = tpu_regs_pkg::ErrWeightOverflow;
        end else if ((fetch || kind_i.halt) && tiles_i != '0) begin
          error_d = tpu_regs_pkg::ErrWeightLeftover;
        end else if (kind_i.matmul && !fetch && count_above(fields_i.count, tiles_i)) begin
          error_d = tpu_regs_pkg::ErrWeightUnderflow;
        end
      end

      StDone:  state_d = StIdle;
      default: state_d = StIdle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q    <= StIdle;
      part_q     <= '0;
      span_q     <= '0;
      acc_q      <= '0;
      over_q     <= 1'b0;
      src_end_q  <= '0;
      dst_end_q  <= '0;
      bias_end_q <= '0;
      error_q    <= '0;
    end else begin
      state_q    <= state_d;
      part_q     <= part_d;
      span_q     <= span_d;
      acc_q      <= acc_d;
      over_q     <= over_d;
      src_end_q  <= src_end_d;
      dst_end_q  <= dst_end_d;
      bias_end_q <= bias_end_d;
      error_q    <= error_d;
    end
  end

  assign done_o  = state_q == StDone;
  assign error_o = error_q;

  `TPU_ASSUME(a_start_when_idle, !start_i || (state_q == StIdle), "start while a check is running")
  `TPU_ASSUME_NEXT(a_instr_stable, state_q != StIdle && state_q != StDone,
                   $stable(fields_i) && $stable(kind_i), "the instruction changed during its check")

endmodule
