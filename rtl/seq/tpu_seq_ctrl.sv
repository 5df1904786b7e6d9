// The sequencer and datapath of the sequential core (tpu_seq_core): it fetches
// an instruction, checks it (tpu_seq_check), and runs it to completion before
// it fetches the next, one lane of one row at a time:
//
//   READ_HOST    one bus read per lane, written to the unified buffer (UB) or
//                the accumulators (ACC)
//   READ_WEIGHTS one bus read per weight of the tile's first `rows` rows, +0
//                for the others, into the next free slot of the weight store
//   MATMUL       per column j of each row: S = seed, then S = add(S, mul(a_k,
//                W[k][j])) for k = 0 .. Dim-1 (N-ORDER), one multiply-add at a
//                time, then ACC = S; with FETCH the iteration's tile is read
//                first, as READ_WEIGHTS would
//   ACTIVATE     per lane: x from ACC, add the bias, the function
//                (tpu_seq_act), then bf16 (N-OUT) to UB or fp32 to ACC
//   WRITE_HOST   one bus write per lane (byte strobes for a bf16 lane)
//
// The results are those of the array core bit for bit: the same arithmetic in
// the same order (tpu_bf16_mul; tpu_seq_add and tpu_seq_act compute the bits of
// tpu_fp32_add and tpu_act_func over many cycles, in a fraction of the logic).
// Everything the array core overlaps runs here one after the other, so a
// program's meaning ("as if each instruction ran to completion before the next
// began", docs/isa.md) holds by construction, and no hazard checks are needed.
//
// Memories are addressed by lane: UB word = row * Dim + lane, ACC likewise,
// weight word = (slot * Dim + k) * Dim + j. Each has one port (tpu_seq_ram), a
// read or a write a cycle, and a registered read.
`include "tpu_assert.svh"

module tpu_seq_ctrl #(
  parameter int unsigned Dim         = 4,
  parameter int unsigned UbDepth     = 256,
  parameter int unsigned AccDepth    = 256,
  parameter int unsigned WeightTiles = 2,
  localparam int unsigned DimLog2    = $clog2(Dim),
  localparam int unsigned LaneWidth  = (DimLog2 > 0) ? DimLog2 : 1,
  localparam int unsigned SlotWidth  = $clog2(WeightTiles + 1),
  localparam int unsigned UbAddrWidth  = $clog2(UbDepth) + DimLog2,
  localparam int unsigned AccAddrWidth = $clog2(AccDepth) + DimLog2,
  localparam int unsigned WgtAddrWidth = SlotWidth + 2 * DimLog2,
  // An on-chip row address: the checks keep rows within the memories.
  localparam int unsigned RowWidth = (UbDepth > AccDepth) ? $clog2(UbDepth) : $clog2(AccDepth)
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,       // the core reset

  // From and to the register block (tpu_regs).
  input  logic                    start_i,
  input  logic [31:0]             prog_addr_i,
  input  logic [23:0]             prog_count_i,
  output logic                    busy_o,
  output logic                    done_o,       // pulse: HALT reached
  output logic                    error_o,      // pulse: stopped with error_code_o
  output logic [7:0]              error_code_o,
  output logic [23:0]             error_pc_o,
  output logic [23:0]             pc_o,
  output logic                    issued_o,     // pulse: an instruction passed its checks
  output logic                    row_done_o,   // pulse: a MATMUL row is complete
  output logic                    mac_o,        // pulse: a multiply-add with k < k_valid, j < n_valid

  // Host memory (tpu_seq_bus).
  output logic                    bus_req_valid_o,
  input  logic                    bus_req_ready_i,
  output logic                    bus_req_write_o,
  output logic [31:0]             bus_req_addr_o,
  output logic [31:0]             bus_req_wdata_o,
  output logic [3:0]              bus_req_wstrb_o,
  input  logic                    bus_rsp_valid_i,
  input  logic [31:0]             bus_rsp_rdata_i,
  input  logic                    bus_rsp_error_i,

  // The unified buffer: bf16 lanes.
  output logic                    ub_wr_en_o,
  output logic                    ub_rd_en_o,
  output logic [UbAddrWidth-1:0]  ub_addr_o,
  output logic [15:0]             ub_wr_data_o,
  input  logic [15:0]             ub_rd_data_i,

  // The accumulators: fp32 lanes.
  output logic                    acc_wr_en_o,
  output logic                    acc_rd_en_o,
  output logic [AccAddrWidth-1:0] acc_addr_o,
  output logic [31:0]             acc_wr_data_o,
  input  logic [31:0]             acc_rd_data_i,

  // The weight store: WeightTiles + 1 tiles of bf16 weights, in slots used in turn.
  output logic                    wgt_wr_en_o,
  output logic                    wgt_rd_en_o,
  output logic [WgtAddrWidth-1:0] wgt_addr_o,
  output logic [15:0]             wgt_wr_data_o,
  input  logic [15:0]             wgt_rd_data_i
);

  localparam logic [LaneWidth-1:0] LastLane = LaneWidth'(Dim - 1);
  localparam logic [15:0] NegZeroBf16 = 16'h8000;  // the unused lanes' activation (docs/isa.md)

  typedef enum logic [4:0] {
    StIdle,
    StNext,        // the next instruction: PROGRAM_END, or fetch it
    StFetchReq,    // request instruction word word_q
    StFetchWait,
    StCheck,       // start tpu_seq_check
    StCheckWait,
    StRhReq,       // READ_HOST: read a lane from host memory
    StRhWait,
    StWtReq,       // a weight tile (READ_WEIGHTS, MATMUL with FETCH): one weight
    StWtWait,
    StMmSeed,      // MATMUL: read the seed of column lane_q
    StMmOperands,  // read a_k and W[k][j]; take the seed at k = 0
    StMmAdd,       // hand S and their product to the adder
    StMmSum,       // S = their sum
    StMmWrite,     // ACC = S
    StAcRead,      // ACTIVATE: read x
    StAcBias,      // take x; read the bias lane
    StAcAdd,       // hand x and the bias to the adder
    StAcSum,       // x = their sum
    StAcFunc,      // hand x to the function unit
    StAcWait,      // write its result
    StWhRead,      // WRITE_HOST: read the lane
    StWhReq,       // write it to host memory
    StWhWait,
    StStop         // one cycle: done_o or error_o
  } state_e;

  state_e state_d, state_q;

  // ---------------------------------------------------------------------------
  // The instruction and its fields
  // ---------------------------------------------------------------------------
  logic [255:0] instr_d, instr_q;
  logic [2:0]   word_d, word_q;
  logic         stray_d, stray_q;
  logic [31:0]  fetch_addr_d, fetch_addr_q;
  logic [23:0]  pc_d, pc_q;

  tpu_isa_pkg::fields_t fields;
  tpu_isa_pkg::kind_t   kind;
  logic                 field_error;

  tpu_decode #(.Dim(Dim)) u_decode (
    .instr_i      (instr_q),
    .fields_o     (fields),
    .kind_o       (kind),
    .field_error_o(field_error)
  );

  logic acc_flag, fetch, accumulate_first, accumulate_rest, bias, f32;
  always_comb begin
    // READ_HOST.ACC and WRITE_HOST.ACC are both flag bit 0. Each flag is read in the states
    // of its opcode only.
    acc_flag         = fields.flags[tpu_isa_pkg::ReadHostFlagAcc];
    fetch            = fields.flags[tpu_isa_pkg::MatmulFlagFetch];
    accumulate_first = fields.flags[tpu_isa_pkg::MatmulFlagAcc0];
    accumulate_rest  = fields.flags[tpu_isa_pkg::MatmulFlagAccn];
    bias             = fields.flags[tpu_isa_pkg::ActivateFlagBias];
    f32              = fields.flags[tpu_isa_pkg::ActivateFlagF32];
  end

  // The bits of word `word` an instruction with opcode `op` may set.
  function automatic logic [31:0] used_bits(input logic [7:0] op, input logic [2:0] word);
    logic [255:0] all;
    all = tpu_isa_pkg::used_bits(op);
    used_bits = all[32 * word +: 32];
  endfunction

  logic [7:0] word_opcode;  // the opcode, from the word arriving when it is word 0
  assign word_opcode = (word_q == 3'd0) ? bus_rsp_rdata_i[7:0] : fields.opcode;

  // ---------------------------------------------------------------------------
  // Loops and addresses: iteration, row, lane, and k for MATMUL. Bases move by
  // their steps per iteration, rows by one (on chip) or host_stride (host),
  // lanes by their size in host memory.
  // ---------------------------------------------------------------------------
  logic [15:0]          iter_d, iter_q, row_d, row_q;
  logic [LaneWidth-1:0] lane_d, lane_q, k_d, k_q;
  // An iteration's bases are the instruction's own address fields, which move on by their steps
  // once the checks have read them: a_base, b_base, bias_row and h_base below. On-chip rows are
  // base + row; a host row's address moves on by host_stride, and a lane is an offset in it.
  logic [15:0]          a_base, b_base, bias_row;
  logic [RowWidth-1:0]  a_row, b_row;
  logic [31:0]          h_base, h_row_d, h_row_q, h_lane;

  assign a_base      = fields.addr_a;
  assign b_base      = fields.addr_b;
  assign bias_row    = fields.bias_addr;
  assign h_base      = fields.host_addr;

  logic        last_lane, last_k, last_iter, tile_phase, last_row, host_row, acc_lanes;
  logic [15:0] row_count, next_row, next_iter, next_a_base, next_b_base;
  logic [31:0] next_h_base, next_h_row;

  always_comb begin
    tile_phase = state_q == StWtReq || state_q == StWtWait;
    // A tile has Dim rows, of which the first `rows` (k_valid with FETCH) come from the host.
    row_count  = tile_phase ? 16'(Dim) : fields.rows;
    host_row   = row_q < (kind.matmul ? 16'(fields.k_valid) : fields.rows);
    last_lane  = lane_q == LastLane;
    last_k     = k_q == LastLane;
    next_row   = row_q + 16'd1;
    next_iter  = iter_q + 16'd1;
    last_row   = next_row == row_count;
    last_iter  = next_iter == fields.count;
    // fp32 lanes of 4 bytes in host memory, else bf16 lanes of 2.
    acc_lanes  = acc_flag && (kind.read_host || kind.write_host);
    h_lane     = h_row_q + (acc_lanes ? 32'(lane_q) << 2 : 32'(lane_q) << 1);
    a_row      = RowWidth'(a_base + row_q);
    b_row      = RowWidth'(b_base + row_q);
    next_a_base = a_base + fields.step_a;
    next_b_base = b_base + fields.step_b;
    next_h_base = h_base + fields.host_step;
    next_h_row  = h_row_q + fields.host_stride;
  end

  // On-chip word addresses: row * Dim + lane.
  logic [UbAddrWidth-1:0]  ub_a_addr, ub_b_addr;
  logic [AccAddrWidth-1:0] acc_a_addr, acc_b_addr, acc_bias_addr;
  logic [WgtAddrWidth-1:0] wgt_load_addr, wgt_use_addr;
  logic [SlotWidth-1:0]    head_d, head_q, tail_d, tail_q;
  logic [4:0]              tiles_d, tiles_q;   // loaded and not yet used

  // Lanes fill the low bits a row leaves zero, so the addresses are concatenations (an OR), not sums.
  always_comb begin
    ub_a_addr     = (UbAddrWidth'(a_row) << DimLog2) | UbAddrWidth'(k_q);
    ub_b_addr     = (UbAddrWidth'(b_row) << DimLog2) | UbAddrWidth'(lane_q);
    acc_a_addr    = (AccAddrWidth'(a_row) << DimLog2) | AccAddrWidth'(lane_q);
    acc_b_addr    = (AccAddrWidth'(b_row) << DimLog2) | AccAddrWidth'(lane_q);
    acc_bias_addr = (AccAddrWidth'(bias_row) << DimLog2) | AccAddrWidth'(lane_q);
    // Weight k of column j of the tile in slot s; a loaded row is row_q, column lane_q.
    wgt_load_addr = (((WgtAddrWidth'(tail_q) << DimLog2) | WgtAddrWidth'(row_q[LaneWidth-1:0]))
                     << DimLog2) | WgtAddrWidth'(lane_q);
    wgt_use_addr  = (((WgtAddrWidth'(head_q) << DimLog2) | WgtAddrWidth'(k_q)) << DimLog2) |
                    WgtAddrWidth'(lane_q);
  end

  // ---------------------------------------------------------------------------
  // Arithmetic: the array core's multiplier and rounding, without pipeline
  // registers (their operands stay put while the adder or the memory takes the
  // result), and the sequential adder and function unit.
  // ---------------------------------------------------------------------------
  logic [31:0] s_d, s_q, product, sum, add_operand;
  logic        add_in_valid, add_in_ready, add_out_valid, add_out_ready;
  logic [15:0] activation, y_bf16;
  logic        act_in_valid, act_in_ready, act_out_valid, act_out_ready;
  logic [31:0] act_y;

  assign activation = (32'(k_q) < 32'(fields.k_valid)) ? ub_rd_data_i : NegZeroBf16;

  tpu_bf16_mul #(.PipeStages(0)) u_mul (
    .clk_i, .rst_ni, .en_i(1'b1), .a_i(activation), .b_i(wgt_rd_data_i), .product_o(product)
  );

  assign add_operand = kind.activate ? acc_rd_data_i : product;

  // The operands stay at the memories' outputs until the adder takes them: the
  // bias, or a_k and W[k][j] through the multiplier.
  tpu_seq_add u_add (
    .clk_i, .rst_ni,
    .in_valid_i (add_in_valid),
    .in_ready_o (add_in_ready),
    .x_i        (s_q),
    .y_i        (add_operand),
    .out_valid_o(add_out_valid),
    .out_ready_i(add_out_ready),
    .sum_o      (sum)
  );

  tpu_seq_act u_act (
    .clk_i, .rst_ni,
    .in_valid_i (act_in_valid),
    .in_ready_o (act_in_ready),
    .func_i     (fields.func),
    .alpha_i    (fields.alpha),
    .x_i        (s_q),
    .out_valid_o(act_out_valid),
    .out_ready_i(act_out_ready),
    .y_o        (act_y)
  );

  tpu_fp32_to_bf16 #(.PipeStages(0)) u_round (
    .clk_i, .rst_ni, .en_i(1'b1), .value_i(act_y), .value_o(y_bf16)
  );

  // ---------------------------------------------------------------------------
  // Checks
  // ---------------------------------------------------------------------------
  logic       check_start, check_done;
  logic [7:0] check_error;

  tpu_seq_check #(
    .Dim(Dim), .UbDepth(UbDepth), .AccDepth(AccDepth), .WeightTiles(WeightTiles)
  ) u_check (
    .clk_i, .rst_ni,
    .start_i      (check_start),
    .fields_i     (fields),
    .kind_i       (kind),
    .field_error_i(field_error),
    .stray_i      (stray_q),
    .tiles_i      (tiles_q),
    .done_o       (check_done),
    .error_o      (check_error)
  );

  // ---------------------------------------------------------------------------
  // The sequencer
  // ---------------------------------------------------------------------------
  logic [7:0]  error_code_d, error_code_q;
  logic [23:0] error_pc_d, error_pc_q;
  logic        advance, iter_done;
  state_e      iter_first;   // where an iteration of the instruction starts

  always_comb begin
    unique case (1'b1)
      kind.read_host:    iter_first = StRhReq;
      kind.read_weights: iter_first = StWtReq;
      kind.matmul:       iter_first = fetch ? StWtReq : StMmSeed;
      kind.activate:     iter_first = StAcRead;
      default:         iter_first = StWhRead;
    endcase
  end

  always_comb begin
    state_d      = state_q;
    instr_d      = instr_q;
    word_d       = word_q;
    stray_d      = stray_q;
    fetch_addr_d = fetch_addr_q;
    pc_d         = pc_q;
    iter_d       = iter_q;
    row_d        = row_q;
    lane_d       = lane_q;
    k_d          = k_q;
    h_row_d      = h_row_q;
    head_d       = head_q;
    tail_d       = tail_q;
    tiles_d      = tiles_q;
    s_d          = s_q;
    error_code_d = error_code_q;
    error_pc_d   = error_pc_q;

    advance         = 1'b0;
    iter_done       = 1'b0;
    check_start     = 1'b0;
    issued_o        = 1'b0;
    row_done_o      = 1'b0;
    mac_o           = 1'b0;
    bus_req_valid_o = 1'b0;
    bus_req_write_o = 1'b0;
    bus_req_addr_o  = h_lane;
    bus_req_wdata_o = '0;
    bus_req_wstrb_o = '0;
    // Writes go to the B row (the destination), weights to the loading slot.
    ub_wr_en_o      = 1'b0;
    ub_rd_en_o      = 1'b0;
    ub_addr_o       = ub_b_addr;
    ub_wr_data_o    = h_lane[1] ? bus_rsp_rdata_i[31:16] : bus_rsp_rdata_i[15:0];
    acc_wr_en_o     = 1'b0;
    acc_rd_en_o     = 1'b0;
    acc_addr_o      = acc_b_addr;
    acc_wr_data_o   = bus_rsp_rdata_i;
    wgt_wr_en_o     = 1'b0;
    wgt_rd_en_o     = 1'b0;
    wgt_addr_o      = wgt_load_addr;
    wgt_wr_data_o   = h_lane[1] ? bus_rsp_rdata_i[31:16] : bus_rsp_rdata_i[15:0];
    act_in_valid    = 1'b0;
    add_in_valid    = 1'b0;
    add_out_ready   = 1'b0;
    act_out_ready   = 1'b0;

    unique case (state_q)
      StIdle: begin
        if (start_i) begin
          pc_d         = '0;
          fetch_addr_d = prog_addr_i;
          tiles_d      = '0;
          head_d       = '0;
          tail_d       = '0;
          error_pc_d   = '0;
          error_code_d = tpu_regs_pkg::ErrNone;
          state_d      = StNext;
          if (prog_addr_i[4:0] != '0) begin
            error_code_d = tpu_regs_pkg::ErrProgAlign;
            state_d      = StStop;
          end
        end
      end

      StNext: begin
        word_d  = '0;
        stray_d = 1'b0;
        state_d = StFetchReq;
        if (pc_q == prog_count_i) begin
          error_code_d = tpu_regs_pkg::ErrProgramEnd;
          error_pc_d   = pc_q;
          state_d      = StStop;
        end
      end
      StFetchReq: begin
        bus_req_valid_o = 1'b1;
        bus_req_addr_o  = fetch_addr_q;
        if (bus_req_ready_i) state_d = StFetchWait;
      end
      StFetchWait: begin
        if (bus_rsp_valid_i) begin
          // A constant index per word: for a variable part-select Yosys builds a shift network.
          for (int w = 0; w < 8; w++) begin
            if (word_q == 3'(w)) instr_d[32 * w +: 32] = bus_rsp_rdata_i;
          end
          stray_d      = stray_q || (bus_rsp_rdata_i & ~used_bits(word_opcode, word_q)) != '0;
          fetch_addr_d = fetch_addr_q + 32'd4;
          word_d       = word_q + 3'd1;
          state_d      = (word_q == 3'd7) ? StCheck : StFetchReq;
          if (bus_rsp_error_i) begin
            error_code_d = tpu_regs_pkg::ErrBusRead;
            error_pc_d   = pc_q;
            state_d      = StStop;
          end
        end
      end

      StCheck: begin
        check_start = 1'b1;
        state_d     = StCheckWait;
      end
      StCheckWait: begin
        if (check_done) begin
          // The first iteration's bases; the loops start at zero.
          iter_d     = '0;
          row_d      = '0;
          lane_d     = '0;
          k_d        = '0;
          h_row_d    = h_base;
          // A run-time error is this instruction's, too.
          error_pc_d = pc_q;
          if (check_error != tpu_regs_pkg::ErrNone) begin
            error_code_d = check_error;
            state_d      = StStop;
          end else begin
            pc_d     = pc_q + 24'd1;
            issued_o = !kind.halt;
            if (kind.halt)      state_d = StStop;
            else if (kind.sync) state_d = StNext;
            else              state_d = iter_first;
          end
        end
      end

      // READ_HOST
      StRhReq: begin
        bus_req_valid_o = 1'b1;
        if (bus_req_ready_i) state_d = StRhWait;
      end
      StRhWait: begin
        if (bus_rsp_valid_i) begin
          if (bus_rsp_error_i) begin
            error_code_d = tpu_regs_pkg::ErrBusRead;
            state_d      = StStop;
          end else begin
            ub_wr_en_o  = !acc_flag;
            acc_wr_en_o = acc_flag;
            advance     = 1'b1;
            state_d     = StRhReq;
          end
        end
      end

      // Weight tiles: rows below the host rows from host memory, the rest +0.
      StWtReq: begin
        if (host_row) begin
          bus_req_valid_o = 1'b1;
          if (bus_req_ready_i) state_d = StWtWait;
        end else begin
          wgt_wr_en_o   = 1'b1;
          wgt_wr_data_o = '0;
          advance       = 1'b1;
        end
      end
      StWtWait: begin
        if (bus_rsp_valid_i) begin
          if (bus_rsp_error_i) begin
            error_code_d = tpu_regs_pkg::ErrBusRead;
            state_d      = StStop;
          end else begin
            wgt_wr_en_o = 1'b1;
            advance     = 1'b1;
            state_d     = StWtReq;
          end
        end
      end

      // MATMUL
      StMmSeed: begin
        acc_rd_en_o   = 1'b1;
        k_d           = '0;
        state_d       = StMmOperands;
      end
      StMmOperands: begin
        if (k_q == '0) begin
          s_d = ((iter_q == '0) ? accumulate_first : accumulate_rest) ? acc_rd_data_i : '0;
        end
        ub_rd_en_o  = 1'b1;
        ub_addr_o   = ub_a_addr;
        wgt_rd_en_o = 1'b1;
        wgt_addr_o  = wgt_use_addr;
        state_d     = StMmAdd;
      end
      StMmAdd: begin
        add_in_valid = 1'b1;
        if (add_in_ready) state_d = StMmSum;
      end
      StMmSum: begin
        add_out_ready = 1'b1;
        if (add_out_valid) begin
          s_d     = sum;
          mac_o   = 32'(k_q) < 32'(fields.k_valid) && 32'(lane_q) < 32'(fields.n_valid);
          k_d     = k_q + 1'b1;
          state_d = last_k ? StMmWrite : StMmOperands;
        end
      end
      StMmWrite: begin
        acc_wr_en_o   = 1'b1;
        acc_wr_data_o = s_q;
        row_done_o    = last_lane;
        advance       = 1'b1;
        state_d       = StMmSeed;
      end

      // ACTIVATE
      StAcRead: begin
        acc_rd_en_o = 1'b1;
        acc_addr_o  = acc_a_addr;
        state_d     = StAcBias;
      end
      StAcBias: begin
        s_d           = acc_rd_data_i;
        acc_rd_en_o   = bias;
        acc_addr_o    = acc_bias_addr;
        state_d       = bias ? StAcAdd : StAcFunc;
      end
      StAcAdd: begin
        add_in_valid = 1'b1;
        if (add_in_ready) state_d = StAcSum;
      end
      StAcSum: begin
        add_out_ready = 1'b1;
        if (add_out_valid) begin
          s_d     = sum;
          state_d = StAcFunc;
        end
      end
      StAcFunc: begin
        act_in_valid = 1'b1;
        if (act_in_ready) state_d = StAcWait;
      end
      StAcWait: begin
        act_out_ready = 1'b1;
        if (act_out_valid) begin
          ub_wr_en_o    = !f32;
          ub_wr_data_o  = y_bf16;
          acc_wr_en_o   = f32;
          acc_wr_data_o = act_y;
          advance       = 1'b1;
          state_d       = StAcRead;
        end
      end

      // WRITE_HOST
      StWhRead: begin
        ub_rd_en_o    = !acc_flag;
        ub_addr_o     = (UbAddrWidth'(a_row) << DimLog2) | UbAddrWidth'(lane_q);
        acc_rd_en_o   = acc_flag;
        acc_addr_o    = acc_a_addr;
        state_d       = StWhReq;
      end
      StWhReq: begin
        bus_req_valid_o = 1'b1;
        bus_req_write_o = 1'b1;
        bus_req_wdata_o = acc_flag ? acc_rd_data_i : {ub_rd_data_i, ub_rd_data_i};
        bus_req_wstrb_o = acc_flag ? 4'b1111 : (h_lane[1] ? 4'b1100 : 4'b0011);
        if (bus_req_ready_i) state_d = StWhWait;
      end
      StWhWait: begin
        if (bus_rsp_valid_i) begin
          if (bus_rsp_error_i) begin
            error_code_d = tpu_regs_pkg::ErrBusWrite;
            state_d      = StStop;
          end else begin
            advance = 1'b1;
            state_d = StWhRead;
          end
        end
      end

      StStop:  state_d = StIdle;
      default: state_d = StIdle;
    endcase

    // The element in hand is finished: the next lane, row, tile phase or iteration.
    if (advance) begin
      if (!last_lane) begin
        lane_d   = lane_q + 1'b1;
      end else if (!last_row) begin
        lane_d   = '0;
        row_d    = next_row;
        h_row_d  = next_h_row;
      end else begin
        lane_d = '0;
        row_d  = '0;
        if (tile_phase) begin
          tail_d  = tail_q + 1'b1;
          tiles_d = tiles_q + 5'd1;
          if (kind.matmul) begin
            // The iteration's own tile is in: now its rows.
            state_d   = StMmSeed;
          end else begin
            iter_done = 1'b1;
          end
        end else begin
          if (kind.matmul) begin
            head_d  = head_q + 1'b1;
            tiles_d = tiles_q - 5'd1;
          end
          iter_done = 1'b1;
        end
      end
    end

    if (iter_done) begin
      if (last_iter) begin
        state_d = StNext;
      end else begin
        iter_d     = next_iter;
        instr_d[tpu_isa_pkg::FieldAddrALsb +: 16]    = next_a_base;
        instr_d[tpu_isa_pkg::FieldAddrBLsb +: 16]    = next_b_base;
        if (kind.activate) begin
          instr_d[tpu_isa_pkg::FieldBiasAddrLsb +: 16] = bias_row + fields.bias_step;
        end else begin
          instr_d[tpu_isa_pkg::FieldHostAddrLsb +: 32] = next_h_base;
        end
        h_row_d    = next_h_base;
        state_d    = iter_first;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q      <= StIdle;
      instr_q      <= '0;
      word_q       <= '0;
      stray_q      <= 1'b0;
      fetch_addr_q <= '0;
      pc_q         <= '0;
      iter_q       <= '0;
      row_q        <= '0;
      lane_q       <= '0;
      k_q          <= '0;
      h_row_q      <= '0;
      head_q       <= '0;
      tail_q       <= '0;
      tiles_q      <= '0;
      s_q          <= '0;
      error_code_q <= '0;
      error_pc_q   <= '0;
    end else begin
      state_q      <= state_d;
      instr_q      <= instr_d;
      word_q       <= word_d;
      stray_q      <= stray_d;
      fetch_addr_q <= fetch_addr_d;
      pc_q         <= pc_d;
      iter_q       <= iter_d;
      row_q        <= row_d;
      lane_q       <= lane_d;
      k_q          <= k_d;
      h_row_q      <= h_row_d;
      head_q       <= head_d;
      tail_q       <= tail_d;
      tiles_q      <= tiles_d;
      s_q          <= s_d;
      error_code_q <= error_code_d;
      error_pc_q   <= error_pc_d;
    end
  end

  assign busy_o       = state_q != StIdle;
  assign done_o       = state_q == StStop && error_code_q == tpu_regs_pkg::ErrNone;
  assign error_o      = state_q == StStop && error_code_q != tpu_regs_pkg::ErrNone;
  assign error_code_o = error_code_q;
  assign error_pc_o   = error_pc_q;
  assign pc_o         = pc_q;

  `TPU_ASSERT(a_tiles_in_range, tiles_q <= 5'(WeightTiles + 1),
              "more weight tiles loaded than the store holds")
  `TPU_ASSERT(a_tile_to_use, state_q != StMmOperands || (tiles_q != '0),
              "a MATMUL row with no weight tile loaded")
  `TPU_ASSERT_NEXT(a_bus_request_held, bus_req_valid_o && !bus_req_ready_i,
                   bus_req_valid_o && $stable(bus_req_addr_o),
                   "a bus request was withdrawn or changed before it was taken")

endmodule
