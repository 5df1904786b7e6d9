// The instruction checks of the sequential core (tpu_seq_top): the "Errors" of
// docs/isa.md, in their order, one step per cycle through one 16 x 16
// multiplier and one 34-bit accumulator. The array core's issue stage
// (tpu_issue) computes every span in parallel, in the cycle it issues; here
// an instruction waits a dozen cycles, which costs nothing next to the
// hundreds it takes to run, and the arithmetic is shared.
//
// A span of on-chip rows ends at base + (count - 1) * step + rows (rows is 1
// for the bias); the host bytes end at host_addr + (count - 1) * host_step +
// (rows - 1) * host_stride + the row's bytes. Both are built in the
// accumulator, a 32-bit operand as two 16-bit halves. A host span may reach
// 2^49, but anything from 2^34 up is past 2^32 all the same: such bits and
// carries only set a sticky flag, so the accumulator needs 34 bits, not 50.
module tpu_seq_check #(
  parameter int unsigned Dim         = 4,
  parameter int unsigned UbDepth     = 256,
  parameter int unsigned AccDepth    = 256,
  parameter int unsigned WeightTiles = 2
) (
  input  logic         clk_i,
  input  logic         rst_ni,

  input  logic         start_i,     // check instr_i (held until done_o)
  input  logic [255:0] instr_i,
  input  logic         stray_i,     // a bit instr_i's opcode does not use is set
  input  logic [4:0]   tiles_i,     // weight tiles loaded and not yet claimed
  output logic         done_o,      // one cycle; error_o is valid with it
  output logic [7:0]   error_o      // tpu_regs_pkg::Err*, ErrNone if the instruction may run
);

  // Fields (tpu_isa_pkg, generated from rtl/isa.toml).
  logic [7:0]  opcode, flags;
  logic [3:0]  func;
  logic [15:0] count, rows, addr_a, addr_b, step_a, step_b, alpha, bias_addr, bias_step;
  logic [31:0] host_addr, host_stride, host_step;
  logic [8:0]  k_valid, n_valid;

  assign opcode      = instr_i[tpu_isa_pkg::FieldOpcodeLsb +: 8];
  assign flags       = instr_i[tpu_isa_pkg::FieldFlagsLsb +: 8];
  assign func        = instr_i[tpu_isa_pkg::FieldFuncLsb +: 4];
  assign count       = instr_i[tpu_isa_pkg::FieldCountLsb +: 16];
  assign rows        = instr_i[tpu_isa_pkg::FieldRowsLsb +: 16];
  assign addr_a      = instr_i[tpu_isa_pkg::FieldAddrALsb +: 16];
  assign addr_b      = instr_i[tpu_isa_pkg::FieldAddrBLsb +: 16];
  assign step_a      = instr_i[tpu_isa_pkg::FieldStepALsb +: 16];
  assign step_b      = instr_i[tpu_isa_pkg::FieldStepBLsb +: 16];
  assign host_addr   = instr_i[tpu_isa_pkg::FieldHostAddrLsb +: 32];
  assign alpha       = instr_i[tpu_isa_pkg::FieldAlphaLsb +: 16];
  assign host_stride = instr_i[tpu_isa_pkg::FieldHostStrideLsb +: 32];
  assign host_step   = instr_i[tpu_isa_pkg::FieldHostStepLsb +: 32];
  assign k_valid     = instr_i[tpu_isa_pkg::FieldKValidLsb +: 9];
  assign n_valid     = instr_i[tpu_isa_pkg::FieldNValidLsb +: 9];
  assign bias_addr   = instr_i[tpu_isa_pkg::FieldBiasAddrLsb +: 16];
  assign bias_step   = instr_i[tpu_isa_pkg::FieldBiasStepLsb +: 16];

  // What the instruction touches (isa::footprint in sw/lib/isa.cpp).
  logic is_read_host, is_read_weights, is_matmul, is_activate, is_write_host, is_halt;
  logic legal_opcode, moves_data, fetch, bias, f32, host_acc;
  logic src_used, src_acc, dst_used, dst_acc, bias_used, host_used;
  logic [15:0] host_rows_minus1;
  logic [8:0]  host_row_bytes;
  logic [2:0]  beat_mask;

  always_comb begin
    is_read_host    = opcode == tpu_isa_pkg::OpReadHost;
    is_read_weights = opcode == tpu_isa_pkg::OpReadWeights;
    is_matmul       = opcode == tpu_isa_pkg::OpMatmul;
    is_activate     = opcode == tpu_isa_pkg::OpActivate;
    is_write_host   = opcode == tpu_isa_pkg::OpWriteHost;
    is_halt         = opcode == tpu_isa_pkg::OpHalt;
    legal_opcode    = is_read_host || is_read_weights || is_matmul || is_activate ||
                      is_write_host || opcode == tpu_isa_pkg::OpSync || is_halt;
    moves_data      = is_read_host || is_read_weights || is_matmul || is_activate || is_write_host;
    fetch    = is_matmul && flags[tpu_isa_pkg::MatmulFlagFetch];
    bias     = is_activate && flags[tpu_isa_pkg::ActivateFlagBias];
    f32      = is_activate && flags[tpu_isa_pkg::ActivateFlagF32];
    // READ_HOST.ACC and WRITE_HOST.ACC are both flag bit 0.
    host_acc = flags[tpu_isa_pkg::ReadHostFlagAcc];

    src_used  = is_matmul || is_activate || is_write_host;
    src_acc   = is_activate || (is_write_host && host_acc);
    dst_used  = is_read_host || is_matmul || is_activate;
    dst_acc   = (is_read_host && host_acc) || is_matmul || f32;
    bias_used = bias;
    host_used = is_read_host || is_read_weights || fetch || is_write_host;

    host_rows_minus1 = fetch ? 16'(k_valid) - 16'd1 : rows - 16'd1;
    host_row_bytes   = (host_acc && (is_read_host || is_write_host)) ? 9'(4 * Dim) : 9'(2 * Dim);
    // HOST_ALIGN: a multiple of the row or of the 4-byte bus, whichever is smaller.
    beat_mask = (host_row_bytes < 9'd4) ? 3'(host_row_bytes - 9'd1) : 3'd3;
  end

  // value > 2^log2: a bit above log2, or bit log2 and any below it. Depths and Dim are powers
  // of two, so the comparisons with them and with 2^32 need no carry chains.
  function automatic logic above_pow2(input logic [33:0] value, input int unsigned log2);
    logic above, below;
    above = 1'b0;
    below = 1'b0;
    for (int b = 0; b < 34; b++) begin
      if (b > log2) above |= value[b];
      if (b < log2) below |= value[b];
    end
    above_pow2 = above || (value[log2] && below);
  endfunction

  // value > limit, for a 5-bit limit (weight tiles): the low bits alone need a carry chain.
  function automatic logic count_above(input logic [15:0] value, input logic [4:0] limit);
    count_above = value[15:5] != '0 || value[4:0] > limit;
  endfunction

  localparam int unsigned DimLog2 = $clog2(Dim);
  logic [4:0] tile_room;   // the weight tiles that may still be loaded
  assign tile_room = 5'(WeightTiles + 1) - tiles_i;

  logic field_error;
  always_comb begin
    field_error = stray_i || (moves_data && (count == '0 || rows == '0));
    if (is_read_weights && above_pow2(34'(rows), DimLog2)) field_error = 1'b1;
    if (is_matmul) begin
      if (k_valid == '0 || above_pow2(34'(k_valid), DimLog2) || n_valid == '0 ||
          above_pow2(34'(n_valid), DimLog2)) begin
        field_error = 1'b1;
      end
      if (!fetch && (host_addr != '0 || host_stride != '0 || host_step != '0)) field_error = 1'b1;
    end
    if (is_activate) begin
      if (func >= 4'(tpu_isa_pkg::FuncCount)) field_error = 1'b1;
      if (func != tpu_isa_pkg::FuncLeaky && alpha != '0) field_error = 1'b1;
      if (!bias && (bias_addr != '0 || bias_step != '0)) field_error = 1'b1;
    end
  end

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
    mul_a = count - 16'd1;
    mul_b = step_a;
    unique case (state_q)
      StSpanMul: begin
        unique case (span_q)
          SpanSrc:  mul_b = step_a;
          SpanDst:  mul_b = step_b;
          default:  mul_b = bias_step;
        endcase
      end
      StHostMul: begin
        mul_a = part_q[1] ? host_rows_minus1 : count - 16'd1;
        unique case (part_q)
          2'd0:    mul_b = host_step[15:0];
          2'd1:    mul_b = host_step[31:16];
          2'd2:    mul_b = host_stride[15:0];
          default: mul_b = host_stride[31:16];
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
  assign past_ub   = above_pow2(acc_q, $clog2(UbDepth));
  assign past_acc  = above_pow2(acc_q, $clog2(AccDepth));
  assign past_host = over_q || above_pow2(acc_q, 32);

  // The first iteration's host end, where the host accumulation starts.
  logic [32:0] host_row_end;
  assign host_row_end = {1'b0, host_addr} + {24'd0, host_row_bytes};

  // The span in hand, and its first iteration's end.
  logic        span_used, span_acc;
  logic [15:0] span_base, span_rows;
  logic [16:0] span_rows_end;
  always_comb begin
    span_rows = rows;
    unique case (span_q)
      SpanSrc: begin
        span_used = src_used;
        span_acc  = src_acc;
        span_base = addr_a;
      end
      SpanDst: begin
        span_used = dst_used;
        span_acc  = dst_acc;
        span_base = addr_b;
      end
      default: begin
        span_used = bias_used;
        span_acc  = 1'b1;
        span_base = bias_addr;
        span_rows = 16'd1;
      end
    endcase
    span_rows_end = {1'b0, span_base} + {1'b0, span_rows};
  end

  logic in_place;
  assign in_place = addr_a == addr_b && step_a == step_b;

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
        if (!legal_opcode) begin
          error_d = tpu_regs_pkg::ErrIllegalOpcode;
          state_d = StDone;
        end else if (field_error) begin
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
        if (host_used) begin
          state_d = StHostMul;
          if (((host_addr[2:0] | host_stride[2:0] | host_step[2:0]) & beat_mask) != '0) begin
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
        if (f32 && ((bias && tpu_core_pkg::rows_overlap(addr_b, dst_end_q, bias_addr, bias_end_q)) ||
                    (!in_place && tpu_core_pkg::rows_overlap(addr_b, dst_end_q, addr_a, src_end_q))))
        begin
          error_d = tpu_regs_pkg::ErrAccOverlap;
        end else if (is_read_weights && count_above(count, tile_room)) begin
          error_d = tpu_regs_pkg::ErrWeightOverflow;
        end else if ((fetch || is_halt) && tiles_i != '0) begin
          error_d = tpu_regs_pkg::ErrWeightLeftover;
        end else if (is_matmul && !fetch && count_above(count, tiles_i)) begin
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

`ifndef SYNTHESIS
  a_start_when_idle: assert property (@(posedge clk_i) disable iff (!rst_ni)
      start_i |-> state_q == StIdle)
    else $error("tpu_seq_check: start while a check is running");
  a_instr_stable: assert property (@(posedge clk_i) disable iff (!rst_ni)
      state_q != StIdle && state_q != StDone |=> $stable(instr_i[31:0]) && $stable(instr_i[255:224]))
    else $error("tpu_seq_check: the instruction changed during its check");
`endif

endmodule
