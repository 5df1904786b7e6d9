// The issue stage: fetches the program, decodes and checks each instruction,
// and dispatches it to its unit's queue once it cannot conflict with anything
// still in flight (docs/isa.md, "Execution").
//
// Instructions issue in program order, one at a time; the units then run in
// parallel. Hazards between units are found here by comparing the new
// instruction's footprint (the rows and host bytes it reads and writes) with
// every operation queued or running in the other units; the instruction waits
// until none conflicts. Hazards inside a unit need no check: each unit works
// in order, and the matrix unit orders its own accumulator reads and writes.
//
// Checks, in this order, each stopping the core with its error code:
// opcode; fields (reserved bits, zero count or rows, values out of range);
// on-chip ranges (first operand, second operand, bias or second-operand rows); host alignment;
// host range; accumulator overlap (fp32 ACTIVATE); weight-tile accounting.
// Extents need products such as (count - 1) * step, which one shared 16 x 32
// multiplier computes over five cycles.
//
// Weight tiles: U counts tiles that READ_WEIGHTS loaded and no MATMUL has
// claimed. MATMUL without FETCH claims `count` tiles (UNDERFLOW if fewer are
// there); READ_WEIGHTS may not push U above what the weight FIFO and the
// array's second weight buffer hold (OVERFLOW), which is what guarantees that
// loading never waits on a MATMUL that is not yet issued; MATMUL with FETCH
// and HALT need U = 0 (LEFTOVER).
`include "tpu_assert.svh"

module tpu_issue #(
  parameter int unsigned Dim         = 16,
  parameter int unsigned BusBytes    = 16,
  parameter int unsigned UbDepth     = 1024,
  parameter int unsigned AccDepth    = 1024,
  parameter int unsigned WeightTiles = 4,
  parameter int unsigned QueueDepth  = 4,
  parameter bit          Links       = 1'b0,  // ALLREDUCE is legal (the collective unit)
  parameter bit          Vector      = 1'b0,  // ELTWISE is legal (the vector unit)
  parameter bit          Int8        = 1'b0,  // the int8 flags are legal
  parameter bit          Float       = 1'b1,  // MATMUL without I8, ACTIVATE without REQ are legal
  localparam int unsigned FpBits     = tpu_core_pkg::FootprintBits,
  localparam int unsigned NumUnits   = tpu_core_pkg::NumUnits
) (
  input  logic                       clk_i,
  input  logic                       rst_ni,

  input  logic                       start_i,
  input  logic [31:0]                prog_addr_i,
  input  logic [23:0]                prog_count_i,

  // Instruction fetch through a read engine.
  output logic                       fetch_cmd_valid_o,
  input  logic                       fetch_cmd_ready_i,
  output logic [31:0]                fetch_cmd_addr_o,
  output logic [23:0]                fetch_cmd_rows_o,
  output logic                       fetch_abort_next_o,  // fetch abort from the next cycle on
  input  logic                       fetch_quiet_i,
  input  logic                       instr_valid_i,
  output logic                       instr_ready_o,
  input  logic [tpu_isa_pkg::InstrBits-1:0] instr_i,
  input  logic                       instr_error_i,  // the instruction's fetch failed

  // Unit queues, indexed by tpu_core_pkg::Unit*.
  output logic [NumUnits-1:0]        push_o,
  output tpu_core_pkg::op_t          op_o,         // to every unit but the weight unit
  output logic [FpBits-1:0]          fp_o,
  output tpu_core_pkg::op_t          weight_op_o,  // to the weight unit
  output logic [FpBits-1:0]          weight_fp_o,
  input  logic [NumUnits-1:0]        full_i,
  input  logic [NumUnits-1:0]        idle_i,
  input  logic [NumUnits*QueueDepth-1:0]        fp_valid_i,
  input  logic [NumUnits*QueueDepth*FpBits-1:0] fps_i,

  // Bus errors: stop everything, let the AXI traffic in flight finish. The
  // abort stays up while stopped (the units are idle then unless a bus error hit).
  input  logic                       bus_error_i,
  input  logic [7:0]                 bus_error_code_i,
  input  logic [23:0]                bus_error_pc_i,
  output logic                       abort_next_o,  // abort from the next cycle on
  input  logic                       axi_quiet_i,    // no unit has AXI traffic in flight

  output logic                       busy_o,
  output logic                       done_o,         // pulse: HALT completed
  output logic                       error_o,        // pulse: stopped with an error
  output logic [7:0]                 error_code_o,
  output logic [23:0]                error_pc_o,
  output logic [23:0]                pc_o,
  output logic                       issued_o,       // pulse: an instruction issued

  // For the performance counters: a MATMUL waits at issue for a READ_HOST,
  // or for another unit.
  output logic                       mm_wait_input_o,
  output logic                       mm_wait_other_o
);

  localparam int unsigned DimLog2      = $clog2(Dim);
  localparam int unsigned BusLog2      = $clog2(BusBytes);
  localparam int unsigned TileCapacity = WeightTiles + 1;
  localparam logic [16:0] TileCap      = TileCapacity[16:0];
  localparam logic [49:0] UbRows       = 50'(UbDepth);
  localparam logic [49:0] AccRows      = 50'(AccDepth);
  localparam logic [49:0] HostTop      = 50'h1_0000_0000;

  // ---------------------------------------------------------------------------
  // The instruction being issued and its fields.
  // ---------------------------------------------------------------------------
  logic [tpu_isa_pkg::InstrBits-1:0] ir_d, ir_q;
  logic [23:0] pc_d, pc_q;
  logic [31:0] prog_addr_d, prog_addr_q;     // latched at START
  logic [23:0] prog_count_d, prog_count_q;

  tpu_isa_pkg::fields_t fields;
  tpu_isa_pkg::kind_t   kind;
  logic                 value_error;

  tpu_decode #(.Dim(Dim), .Links(Links), .Vector(Vector), .Int8(Int8), .Float(Float)) u_decode (
    .instr_i      (ir_q),
    .fields_o     (fields),
    .kind_o       (kind),
    .field_error_o(value_error)
  );

  // What the instruction touches, beyond its kind.
  logic        fetches, seeds;
  logic [15:0] host_rows;
  logic        field_error;

  always_comb begin
    fetches = kind.matmul && kind.host_used;
    // A MATMUL reads accumulator rows if any of its iterations accumulates.
    seeds   = kind.matmul && (fields.flags[tpu_isa_pkg::MatmulFlagAcc0] ||
                              (fields.flags[tpu_isa_pkg::MatmulFlagAccn] && fields.count > 16'd1));
    host_rows   = kind.host_k_valid ? {7'd0, fields.k_valid} : fields.rows;
    field_error = value_error || (ir_q & ~tpu_isa_pkg::used_bits(fields.opcode)) != '0;
  end

  // States of the issue stage (the state machine is below).
  typedef enum logic [3:0] {
    Idle,        // waiting for START
    FetchCmd,    // asking the read engine for the program
    Fetch,       // waiting for the next instruction
    Check,       // opcode and field checks
    Measure,     // the five extent products
    Judge,       // range, alignment and overlap checks; footprints
    Dispatch,    // waiting for hazards and queue space
    Drain,       // SYNC or HALT: waiting for every unit
    Finish,      // stopping instruction fetch before DONE or ERROR
    BusAbort,    // a bus error: waiting for AXI traffic to end
    Stopped      // DONE or ERROR, until the core is reset
  } state_e;

  state_e      state_d, state_q;

  // ---------------------------------------------------------------------------
  // Extents: five products on one multiplier.
  // ---------------------------------------------------------------------------
  // The operands of each step are chosen a cycle ahead (step 0's in Check,
  // whatever its checks find) and kept in registers, so the multiplier starts
  // from flops.
  logic [2:0]  mul_next_step;
  logic [2:0]  mul_step_d, mul_step_q;
  logic [15:0] mul_a_d, mul_a_q;
  logic [31:0] mul_b_d, mul_b_q;
  logic [47:0] mul_p;
  logic [47:0] span_a_d, span_a_q, span_b_d, span_b_q, span_bias_d, span_bias_q;
  logic [47:0] row_span_d, row_span_q, iter_span_d, iter_span_q;

  always_comb begin
    mul_next_step = (state_q == Measure) ? mul_step_q + 1'b1 : 3'd0;
    unique case (mul_next_step)
      3'd0:    begin mul_a_d = fields.count - 1'b1;     mul_b_d = {16'd0, fields.step_a};    end
      3'd1:    begin mul_a_d = fields.count - 1'b1;     mul_b_d = {16'd0, fields.step_b};    end
      3'd2:    begin mul_a_d = fields.count - 1'b1;     mul_b_d = {16'd0, fields.bias_step}; end
      3'd3:    begin mul_a_d = host_rows - 1'b1; mul_b_d = fields.host_stride;        end
      default: begin mul_a_d = fields.count - 1'b1;     mul_b_d = fields.host_step;          end
    endcase
    mul_p = {32'd0, mul_a_q} * {16'd0, mul_b_q};
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      mul_a_q <= '0;
      mul_b_q <= '0;
    end else begin
      mul_a_q <= mul_a_d;
      mul_b_q <= mul_b_d;
    end
  end

  // Ranges of the instruction, as [lo, hi) with hi computed wide enough never
  // to wrap.
  logic [49:0] hi_a, hi_b, hi_bias, hi_host;
  logic [3:0]  row_log2;
  logic [31:0] align_mask;
  logic        range_a_bad, range_b_bad, range_bias_bad, align_bad, host_bad, overlap_bad;

  always_comb begin
    hi_a    = 50'(fields.addr_a) + 50'(span_a_q) + 50'(fields.rows);
    hi_b    = 50'(fields.addr_b) + 50'(span_b_q) + 50'(fields.rows);
    // A requantising ACTIVATE reads three rows (bias, multiplier, shift) per iteration, an
    // ELTWISE without ROW `rows` rows.
    hi_bias = 50'(fields.bias_addr) + 50'(span_bias_q) +
              (kind.bias_quant ? 50'd3 : kind.bias_rows ? 50'(fields.rows) : 50'd1);
    row_log2 = 4'(DimLog2 + 1);
    if (kind.host_fp32) row_log2 = 4'(DimLog2 + 2);
    if (kind.host_int8) row_log2 = 4'(DimLog2);
    hi_host = 50'(fields.host_addr) + 50'(iter_span_q) + 50'(row_span_q) + (50'd1 << row_log2);
    // Host addresses are aligned to the beat: a whole row, or the bus width.
    align_mask = (row_log2 < 4'(BusLog2)) ? (32'd1 << row_log2) - 1 : (32'd1 << BusLog2) - 1;

    range_a_bad    = kind.src_used && hi_a > (kind.src_acc ? AccRows : UbRows);
    range_b_bad    = kind.dst_used && hi_b > (kind.dst_acc ? AccRows : UbRows);
    range_bias_bad = kind.bias_used && hi_bias > AccRows;
    align_bad      = kind.host_used && ((fields.host_addr | fields.host_stride | fields.host_step) &
                                        align_mask) != '0;
    host_bad       = kind.host_used && hi_host > HostTop;
    // An fp32 ACTIVATE may rewrite its input rows in place, row for row, but
    // must not write its bias rows or input rows at another address.
    overlap_bad = 1'b0;
    if (kind.activate && kind.dst_acc) begin
      if (kind.bias_used && 50'(fields.addr_b) < hi_bias && 50'(fields.bias_addr) < hi_b) begin
        overlap_bad = 1'b1;
      end
      if ((fields.addr_a != fields.addr_b || fields.step_a != fields.step_b) &&
          50'(fields.addr_b) < hi_a && 50'(fields.addr_a) < hi_b) begin
        overlap_bad = 1'b1;
      end
    end
  end

  // ---------------------------------------------------------------------------
  // Footprints and the operations the units receive.
  // ---------------------------------------------------------------------------
  tpu_core_pkg::footprint_t fp_new, weight_fp_new;
  tpu_core_pkg::op_t        op_new, weight_op_new;
  tpu_core_pkg::op_t        op_d, op_q, weight_op_d, weight_op_q;
  logic [FpBits-1:0]        fp_d, fp_q, weight_fp_d, weight_fp_q;

  always_comb begin
    fp_new = '0;
    if (kind.src_used) begin
      fp_new.rd.space = kind.src_acc ? tpu_core_pkg::SpaceAcc : tpu_core_pkg::SpaceUb;
      fp_new.rd.lo    = fields.addr_a;
      fp_new.rd.hi    = hi_a[16:0];
    end
    if (seeds) begin
      fp_new.rd2.space = tpu_core_pkg::SpaceAcc;
      fp_new.rd2.lo    = fields.addr_b;
      fp_new.rd2.hi    = hi_b[16:0];
    end
    if (kind.bias_used) begin
      fp_new.rd2.space = tpu_core_pkg::SpaceAcc;
      fp_new.rd2.lo    = fields.bias_addr;
      fp_new.rd2.hi    = hi_bias[16:0];
    end
    if (kind.dst_used) begin
      fp_new.wr.space = kind.dst_acc ? tpu_core_pkg::SpaceAcc : tpu_core_pkg::SpaceUb;
      fp_new.wr.lo    = fields.addr_b;
      fp_new.wr.hi    = hi_b[16:0];
    end
    if (kind.in_place) fp_new.wr = fp_new.rd;
    if (kind.host_used) begin
      fp_new.host.dir = kind.host_write ? tpu_core_pkg::HostWrite : tpu_core_pkg::HostRead;
      fp_new.host.lo  = fields.host_addr;
      fp_new.host.hi  = hi_host[32:0];
    end

    op_new             = '0;
    op_new.pc          = pc_q;
    op_new.flags       = fields.flags;
    // ELTWISE's vop shares func's bits.
    op_new.func        = kind.eltwise ? fields.vop : fields.func;
    op_new.count       = fields.count;
    op_new.rows        = fields.rows;
    op_new.addr_a      = fields.addr_a;
    op_new.addr_b      = fields.addr_b;
    op_new.step_a      = fields.step_a;
    op_new.step_b      = fields.step_b;
    op_new.host_addr   = fields.host_addr;
    op_new.host_stride = fields.host_stride;
    // ACTIVATE's zero_point, clamp_lo and clamp_hi (REQ) travel in the same word.
    if (Int8 && kind.activate) begin
      op_new.host_stride = {8'd0, fields.clamp_hi, fields.clamp_lo, fields.zero_point};
    end
    op_new.host_step   = fields.host_step;
    op_new.alpha       = kind.activate ? fields.alpha : 16'd0;
    op_new.aux_lo      = kind.matmul ? {7'd0, fields.k_valid} : fields.bias_addr;
    op_new.aux_hi      = kind.matmul ? {7'd0, fields.n_valid} : fields.bias_step;
    // ALLREDUCE's total, offset and offset_step share words 4 to 6 with the host fields.
    if (kind.allreduce) begin
      op_new.host_addr   = fields.total;
      op_new.host_stride = fields.offset;
      op_new.host_step   = fields.offset_step;
    end

    // The weight unit gets READ_WEIGHTS as it is, and MATMUL with FETCH as
    // the READ_WEIGHTS it implies: k_valid rows per tile.
    weight_op_new = op_new;
    weight_fp_new = fp_new;
    if (fetches) begin
      weight_op_new             = '0;
      weight_op_new.pc          = pc_q;
      weight_op_new.count       = fields.count;
      weight_op_new.rows        = host_rows;
      weight_op_new.host_addr   = fields.host_addr;
      weight_op_new.host_stride = fields.host_stride;
      weight_op_new.host_step   = fields.host_step;
      weight_op_new.flags[tpu_isa_pkg::ReadWeightsFlagI8] = fields.flags[tpu_isa_pkg::MatmulFlagI8];
      weight_fp_new             = '0;
      weight_fp_new.host        = fp_new.host;
    end
  end

  // ---------------------------------------------------------------------------
  // Hazards against each unit's operations in flight.
  // ---------------------------------------------------------------------------
  // Judge compares the new footprint with every queue slot and keeps which
  // slots it conflicts with; Dispatch only masks that with the slots still
  // valid. This is exact: only this stage fills the queues, so from Judge to
  // the dispatch no slot becomes valid and a valid slot keeps its footprint.
  // It keeps the wide range compares out of the dispatch decision (the FPGA's
  // critical path) without a cycle more per instruction.
  logic [NumUnits*QueueDepth-1:0] conflicts, conflict_d, conflict_q;
  logic [NumUnits-1:0]            unit_hazard, targets;
  logic                           hazard, queues_free;

  for (genvar u = 0; u < NumUnits; u++) begin : g_hazard
    tpu_hazard_check #(.NumEntries(QueueDepth)) u_check (
      .new_fp_i  (fp_new),
      .fps_i     (fps_i[u*QueueDepth*FpBits +: QueueDepth*FpBits]),
      .conflict_o(conflicts[u*QueueDepth +: QueueDepth])
    );
    assign unit_hazard[u] = (conflict_q[u*QueueDepth +: QueueDepth] &
                             fp_valid_i[u*QueueDepth +: QueueDepth]) != '0;
  end

  always_comb begin
    targets = '0;
    targets[tpu_core_pkg::UnitLoad]   = kind.read_host;
    targets[tpu_core_pkg::UnitWeight] = kind.read_weights || fetches;
    targets[tpu_core_pkg::UnitMatmul] = kind.matmul;
    targets[tpu_core_pkg::UnitAct]    = kind.activate;
    targets[tpu_core_pkg::UnitStore]  = kind.write_host;
    targets[tpu_core_pkg::UnitCollective] = kind.allreduce;
    targets[tpu_core_pkg::UnitVector] = kind.eltwise;
    // A unit keeps its own operations in order; only other units can conflict.
    hazard      = (unit_hazard & ~targets) != '0;
    queues_free = (full_i & targets) == '0;
  end

  // ---------------------------------------------------------------------------
  // State machine
  // ---------------------------------------------------------------------------
  logic [16:0] unclaimed_d, unclaimed_q;  // U, weight tiles loaded and not claimed
  logic [7:0]  err_code_d, err_code_q;
  logic [23:0] err_pc_d, err_pc_q;
  logic        done_pulse, error_pulse;
  logic        dispatch_now;
  // Weight-tile accounting is judged in Judge and kept for Dispatch, like the
  // conflicts: U only changes when an instruction dispatches, so it is the
  // same in both states.
  logic [7:0]  weight_error, weight_error_d, weight_error_q;
  logic [16:0] unclaimed_next, unclaimed_next_d, unclaimed_next_q;  // U once dispatched

  always_comb begin
    weight_error = tpu_regs_pkg::ErrNone;
    if (kind.read_weights &&
        {1'b0, unclaimed_q} + {1'b0, 1'b0, fields.count} > {1'b0, TileCap}) begin
      weight_error = tpu_regs_pkg::ErrWeightOverflow;
    end
    if (kind.matmul && !fetches && 17'(fields.count) > unclaimed_q) begin
      weight_error = tpu_regs_pkg::ErrWeightUnderflow;
    end
    if (fetches && unclaimed_q != '0) weight_error = tpu_regs_pkg::ErrWeightLeftover;
    unclaimed_next = unclaimed_q;
    if (kind.read_weights) unclaimed_next = unclaimed_q + 17'(fields.count);
    if (kind.matmul && !fetches) unclaimed_next = unclaimed_q - 17'(fields.count);
    dispatch_now = state_q == Dispatch && weight_error_q == tpu_regs_pkg::ErrNone &&
                   !hazard && queues_free;
  end

  always_comb begin
    state_d     = state_q;
    ir_d        = ir_q;
    pc_d        = pc_q;
    mul_step_d  = mul_step_q;
    span_a_d    = span_a_q;
    span_b_d    = span_b_q;
    span_bias_d = span_bias_q;
    row_span_d  = row_span_q;
    iter_span_d = iter_span_q;
    op_d        = op_q;
    fp_d        = fp_q;
    conflict_d  = conflict_q;
    weight_error_d   = weight_error_q;
    unclaimed_next_d = unclaimed_next_q;
    weight_op_d = weight_op_q;
    weight_fp_d = weight_fp_q;
    unclaimed_d = unclaimed_q;
    err_code_d  = err_code_q;
    err_pc_d    = err_pc_q;
    prog_addr_d  = prog_addr_q;
    prog_count_d = prog_count_q;
    done_pulse  = 1'b0;
    error_pulse = 1'b0;

    fetch_cmd_valid_o = state_q == FetchCmd;
    fetch_cmd_addr_o  = prog_addr_q;
    fetch_cmd_rows_o  = prog_count_q;
    instr_ready_o     = state_q == Fetch && pc_q != prog_count_q;
    push_o            = '0;

    unique case (state_q)
      Idle: begin
        if (start_i) begin
          prog_addr_d  = prog_addr_i;
          prog_count_d = prog_count_i;
          pc_d        = '0;
          unclaimed_d = '0;
          err_code_d  = tpu_regs_pkg::ErrNone;
          err_pc_d    = '0;
          if (prog_addr_i[4:0] != '0) begin
            err_code_d = tpu_regs_pkg::ErrProgAlign;
            state_d    = Finish;
          end else if (prog_count_i == '0) begin
            err_code_d = tpu_regs_pkg::ErrProgramEnd;
            state_d    = Finish;
          end else begin
            state_d = FetchCmd;
          end
        end
      end
      FetchCmd: if (fetch_cmd_ready_i) state_d = Fetch;
      Fetch: begin
        if (pc_q == prog_count_q) begin
          err_code_d = tpu_regs_pkg::ErrProgramEnd;
          err_pc_d   = pc_q;
          state_d    = Drain;
        end else if (instr_valid_i && instr_error_i) begin
          err_code_d = tpu_regs_pkg::ErrBusRead;
          err_pc_d   = pc_q;
          state_d    = Drain;
        end else if (instr_valid_i) begin
          ir_d    = instr_i;
          state_d = Check;
        end
      end
      Check: begin
        err_pc_d = pc_q;
        if (!kind.legal) begin
          err_code_d = tpu_regs_pkg::ErrIllegalOpcode;
          state_d    = Drain;
        end else if (field_error) begin
          err_code_d = tpu_regs_pkg::ErrIllegalField;
          state_d    = Drain;
        end else begin
          mul_step_d = '0;
          state_d    = Measure;
        end
      end
      Measure: begin
        unique case (mul_step_q)
          3'd0:    span_a_d    = mul_p;
          3'd1:    span_b_d    = mul_p;
          3'd2:    span_bias_d = mul_p;
          3'd3:    row_span_d  = mul_p;
          default: iter_span_d = mul_p;
        endcase
        mul_step_d = mul_step_q + 1'b1;
        if (mul_step_q == 3'd4) state_d = Judge;
      end
      Judge: begin
        op_d        = op_new;
        fp_d        = fp_new;
        conflict_d  = conflicts;
        weight_error_d   = weight_error;
        unclaimed_next_d = unclaimed_next;
        weight_op_d = weight_op_new;
        weight_fp_d = weight_fp_new;
        if (range_a_bad) begin
          err_code_d = kind.src_acc ? tpu_regs_pkg::ErrAccRange : tpu_regs_pkg::ErrUbRange;
          state_d    = Drain;
        end else if (range_b_bad) begin
          err_code_d = kind.dst_acc ? tpu_regs_pkg::ErrAccRange : tpu_regs_pkg::ErrUbRange;
          state_d    = Drain;
        end else if (range_bias_bad) begin
          err_code_d = tpu_regs_pkg::ErrAccRange;
          state_d    = Drain;
        end else if (align_bad) begin
          err_code_d = tpu_regs_pkg::ErrHostAlign;
          state_d    = Drain;
        end else if (host_bad) begin
          err_code_d = tpu_regs_pkg::ErrHostRange;
          state_d    = Drain;
        end else if (overlap_bad) begin
          err_code_d = tpu_regs_pkg::ErrAccOverlap;
          state_d    = Drain;
        end else if (kind.sync || kind.halt) begin
          state_d = Drain;
        end else begin
          state_d = Dispatch;
        end
      end
      Dispatch: begin
        if (weight_error_q != tpu_regs_pkg::ErrNone) begin
          err_code_d = weight_error_q;
          state_d    = Drain;
        end else if (dispatch_now) begin
          push_o      = targets;
          unclaimed_d = unclaimed_next_q;
          pc_d        = pc_q + 1'b1;
          state_d = Fetch;
        end
      end
      Drain: begin
        // Everything issued before completes, whether the core stops with an
        // error or goes on (SYNC) or stops (HALT).
        if (idle_i == '1) begin
          if (err_code_q != tpu_regs_pkg::ErrNone) begin
            state_d = Finish;
          end else if (kind.halt && unclaimed_q != '0) begin
            err_code_d = tpu_regs_pkg::ErrWeightLeftover;
            state_d    = Finish;
          end else if (kind.halt) begin
            state_d = Finish;
          end else begin
            pc_d    = pc_q + 1'b1;
            state_d = Fetch;
          end
        end
      end
      Finish: begin
        if (fetch_quiet_i) begin
          done_pulse  = err_code_q == tpu_regs_pkg::ErrNone;
          error_pulse = err_code_q != tpu_regs_pkg::ErrNone;
          state_d     = Stopped;
        end
      end
      BusAbort: begin
        if (axi_quiet_i && fetch_quiet_i) begin
          error_pulse = 1'b1;
          state_d     = Stopped;
        end
      end
      Stopped: ;
      default: state_d = Idle;
    endcase

    // A bus error overrides everything but an earlier stop.
    if (bus_error_i && state_q != Idle && state_q != Stopped && state_q != BusAbort) begin
      err_code_d = bus_error_code_i;
      err_pc_d   = bus_error_pc_i;
      state_d    = BusAbort;
    end
  end

  // Aborts hold until the core is reset: work cut off by a bus error must not
  // resume once the core has stopped, nor a read engine take leftover beats
  // from its buffer (it would then count credits it never gave). They are
  // decoded from the next state: each unit keeps them in a flop of its own
  // (tpu_array_core), as if decoded from the state register.
  assign abort_next_o       = state_d == BusAbort || state_d == Stopped;
  assign fetch_abort_next_o = abort_next_o || state_d == Finish;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q     <= Idle;
      ir_q        <= '0;
      pc_q        <= '0;
      mul_step_q  <= '0;
      span_a_q    <= '0;
      span_b_q    <= '0;
      span_bias_q <= '0;
      row_span_q  <= '0;
      iter_span_q <= '0;
      op_q        <= '0;
      fp_q        <= '0;
      conflict_q  <= '0;
      weight_error_q   <= tpu_regs_pkg::ErrNone;
      unclaimed_next_q <= '0;
      weight_op_q <= '0;
      weight_fp_q <= '0;
      unclaimed_q <= '0;
      err_code_q  <= tpu_regs_pkg::ErrNone;
      err_pc_q    <= '0;
      prog_addr_q  <= '0;
      prog_count_q <= '0;
    end else begin
      state_q     <= state_d;
      ir_q        <= ir_d;
      pc_q        <= pc_d;
      mul_step_q  <= mul_step_d;
      span_a_q    <= span_a_d;
      span_b_q    <= span_b_d;
      span_bias_q <= span_bias_d;
      row_span_q  <= row_span_d;
      iter_span_q <= iter_span_d;
      op_q        <= op_d;
      fp_q        <= fp_d;
      conflict_q  <= conflict_d;
      weight_error_q   <= weight_error_d;
      unclaimed_next_q <= unclaimed_next_d;
      weight_op_q <= weight_op_d;
      weight_fp_q <= weight_fp_d;
      unclaimed_q <= unclaimed_d;
      err_code_q  <= err_code_d;
      err_pc_q    <= err_pc_d;
      prog_addr_q  <= prog_addr_d;
      prog_count_q <= prog_count_d;
    end
  end

  assign op_o            = op_q;
  assign fp_o            = fp_q;
  assign weight_op_o     = weight_op_q;
  assign weight_fp_o     = weight_fp_q;
  assign busy_o          = state_q != Idle && state_q != Stopped;
  assign done_o          = done_pulse;
  assign error_o         = error_pulse;
  assign error_code_o    = err_code_q;
  assign error_pc_o      = err_pc_q;
  assign pc_o            = pc_q;
  assign issued_o        = dispatch_now || (state_q == Drain && idle_i == '1 && kind.sync &&
                                            err_code_q == tpu_regs_pkg::ErrNone);
  assign mm_wait_input_o = state_q == Dispatch && kind.matmul &&
                           unit_hazard[tpu_core_pkg::UnitLoad];
  assign mm_wait_other_o = state_q == Dispatch && kind.matmul &&
                           !unit_hazard[tpu_core_pkg::UnitLoad] && (hazard || !queues_free);

`ifndef SYNTHESIS
  `TPU_ASSERT(a_push_fits, (push_o & full_i) == '0, "pushed into a full queue")
  `TPU_ASSERT(a_tiles_bounded, unclaimed_q <= TileCap,
              "more weight tiles loaded ahead than the FIFO holds")

  // The conflicts kept from Judge are those of the footprint being dispatched
  // with the queues as they are now.
  logic [NumUnits*QueueDepth-1:0] conflicts_now;
  for (genvar u = 0; u < NumUnits; u++) begin : g_hazard_now
    tpu_hazard_check #(.NumEntries(QueueDepth)) u_check (
      .new_fp_i  (fp_q),
      .fps_i     (fps_i[u*QueueDepth*FpBits +: QueueDepth*FpBits]),
      .conflict_o(conflicts_now[u*QueueDepth +: QueueDepth])
    );
  end
  `TPU_ASSERT(a_conflicts_current,
              state_q != Dispatch || (((conflict_q ^ conflicts_now) & fp_valid_i) == '0),
              "the conflicts found in Judge no longer hold in Dispatch")
  `TPU_ASSERT(a_weight_error_current,
              state_q != Dispatch ||
              (weight_error_q == weight_error && unclaimed_next_q == unclaimed_next),
              "the weight-tile accounting judged in Judge no longer holds in Dispatch")
`endif

endmodule
