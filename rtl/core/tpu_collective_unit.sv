// ALLREDUCE: the collective unit of the array core (docs/pod.md). It sums
// accumulator rows across the chips of a pod by a ring all-reduce, N-REDUCE of
// docs/numerics.md, over two inter-chip links: one to the next chip of the
// ring, one from the previous chip.
//
// The operation's values are cut into POD.SIZE chunks by their flat index in
// the whole tensor (`total` values). Its rows come in `count` segments of
// `rows` rows: segment i starts at accumulator row addr_a + i * step_a and at
// flat index offset + i * offset_step, so that a pass of a large tensor can
// hold a slice of every chunk and its ring steps all move data at once. Each
// side of a step works through the segments in turn, a cycle to find a
// segment's rows in the chunk and one to move on.
//
// The ring runs 2 (N - 1) steps. In step k chip i sends chunk (i - k) mod N and
// receives chunk (i - k - 1) mod N: in the first N - 1 steps (reduce-scatter)
// it adds what it receives to its own values, in the others (all-gather) it
// copies it. Step k + 1 sends what step k wrote, so a step starts once the rows
// of the last one are written. A step's sends and receives overlap: the rows
// to send come from the accumulators' mirror copy (tpu_banked_mem's MirrorRd),
// the rows to add to from the first copy, so that the unit reads two rows and
// writes one every cycle while the link keeps up.
//
// Chunk c holds the flat indices [floor(c * total / N), floor((c + 1) * total
// / N)). The unit divides total by N once (a bit per cycle), then walks the
// boundaries down a chunk per step, keeping c * total = B * N + R with
// 0 <= R < N, so no multiplier or further divider is needed.
//
// With the flag PS, the same unit runs the parameter-server algorithm the ring
// is measured against: every chip's rows travel the ring to chip 0 (chips
// forward what they receive as it comes, without storing it), chip 0 adds them
// in the order they arrive, then the sums travel the ring once more, each chip
// keeping them and passing them on. Chip 0's link carries N - 1 tensors where
// the ring's carry 2 (N - 1) / N of one.
//
// Before step 0 each chip sends a header row (its position, the pod size, PS,
// the operation's rows, total and offset, and a 16-bit fold of count and
// offset_step); the receiver checks it against its own: POD_MISMATCH if it
// differs. The headers cross while the unit divides. POD_CONFIG if POD is not a legal position.
// LINK_TIMEOUT if nothing moves for LINK_TIMEOUT cycles. Each error stops the
// unit and, through the issue stage, the core.
`include "tpu_assert.svh"

module tpu_collective_unit #(
  parameter int unsigned Dim         = 16,
  parameter int unsigned AddStages   = 0,
  parameter int unsigned AccDepth    = 1024,
  parameter int unsigned QueueDepth  = 4,
  parameter int unsigned LinkLanes   = 16,
  parameter int unsigned LinkCredits = 32,
  localparam int unsigned AccAddrWidth = $clog2(AccDepth),
  localparam int unsigned RowBits      = Dim * 32,
  localparam int unsigned BeatBits     = LinkLanes * 32,
  localparam int unsigned QOffWidth    = (QueueDepth > 1) ? $clog2(QueueDepth) : 1
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  input  logic                        abort_i,

  input  logic                        push_i,
  input  tpu_core_pkg::op_t           push_op_i,
  input  logic [tpu_core_pkg::FootprintBits-1:0] push_fp_i,
  output logic                        full_o,
  output logic [QueueDepth-1:0]       fp_valid_o,
  output logic [QueueDepth*tpu_core_pkg::FootprintBits-1:0] fps_o,

  input  logic [7:0]                  pod_id_i,
  input  logic [7:0]                  pod_size_i,
  input  logic [31:0]                 link_timeout_i,

  // Accumulator rows to send (the mirror copy), rows to add to, and the sums.
  output logic                        send_rd_req_o,
  output logic [AccAddrWidth-1:0]     send_rd_addr_o,
  input  logic                        send_rd_gnt_i,
  input  logic [RowBits-1:0]          send_rd_data_i,
  output logic                        recv_rd_req_o,
  output logic [AccAddrWidth-1:0]     recv_rd_addr_o,
  input  logic                        recv_rd_gnt_i,
  input  logic [RowBits-1:0]          recv_rd_data_i,
  output logic                        wr_req_o,
  output logic [AccAddrWidth-1:0]     wr_addr_o,
  output logic [RowBits-1:0]          wr_data_o,
  input  logic                        wr_gnt_i,

  // The links: to the next chip and from the previous one.
  output logic                        tx_valid_o,
  output logic                        tx_head_o,
  output logic [BeatBits-1:0]         tx_data_o,
  input  logic                        tx_credit_i,
  input  logic                        rx_valid_i,
  input  logic                        rx_head_i,
  input  logic [BeatBits-1:0]         rx_data_i,
  output logic                        rx_credit_o,

  output logic                        error_o,
  output logic [7:0]                  error_code_o,
  output logic [23:0]                 pc_o,
  output logic                        sent_beat_o,      // for LINK_SENT_BEATS
  output logic                        received_beat_o,  // for LINK_RECEIVED_BEATS
  output logic                        stall_o,          // for LINK_STALL
  output logic                        idle_o
);

  if (Dim < 4) begin : g_bad_dim
    $error("tpu_collective_unit: Dim must be >= 4 (a header row holds 113 bits)");
  end

  localparam int unsigned DimLog2  = $clog2(Dim);
  localparam int unsigned TxDepth  = 4;  // rows read and not yet on the link
  localparam int unsigned WrDepth  = 4 + AddStages;  // sums not yet written
  localparam int unsigned PipeLen  = 1 + AddStages;  // a row's cycles from read to sum
  localparam logic [39:0] DimWide  = 40'(Dim);

  // ---------------------------------------------------------------------------
  // The queue of ALLREDUCE operations: the head runs; it leaves when done.
  // ---------------------------------------------------------------------------
  tpu_core_pkg::op_t head, unused_peek;
  logic queue_empty, pop;
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

  // The operation's fields: ALLREDUCE keeps total in host_addr and offset in host_stride.
  logic [15:0] op_rows, op_base, op_count, op_step;
  logic [31:0] op_total, op_offset, op_offset_step;
  logic        op_ps;
  assign op_ps     = head.flags[tpu_isa_pkg::AllreduceFlagPs];
  assign op_count  = head.count;
  assign op_step   = head.step_a;
  assign op_offset_step = head.host_step;
  assign op_rows   = head.rows;
  assign op_base   = head.addr_a;
  assign op_total  = head.host_addr;
  assign op_offset = head.host_stride;

  // ---------------------------------------------------------------------------
  // The links
  // ---------------------------------------------------------------------------
  logic               txq_in_valid, txq_in_ready, txq_in_head;
  logic [RowBits-1:0] txq_in_data;
  logic               txq_valid, txq_ready, txq_head;
  logic [RowBits-1:0] txq_data;
  logic [$clog2(TxDepth+1)-1:0] txq_count;
  logic               tx_stall, tx_idle;

  tpu_fifo #(.Width(RowBits + 1), .Depth(TxDepth)) u_tx_queue (
    .clk_i, .rst_ni,
    .in_valid_i (txq_in_valid),
    .in_ready_o (txq_in_ready),
    .in_data_i  ({txq_in_head, txq_in_data}),
    .out_valid_o(txq_valid),
    .out_ready_i(txq_ready),
    .out_data_o ({txq_head, txq_data}),
    .count_o    (txq_count)
  );

  tpu_link_tx #(.Dim(Dim), .LinkLanes(LinkLanes), .Credits(LinkCredits)) u_tx (
    .clk_i, .rst_ni,
    .row_valid_i  (txq_valid),
    .row_ready_o  (txq_ready),
    .row_head_i   (txq_head),
    .row_data_i   (txq_data),
    .link_valid_o (tx_valid_o),
    .link_head_o  (tx_head_o),
    .link_data_o  (tx_data_o),
    .link_credit_i(tx_credit_i),
    .stall_o      (tx_stall),
    .idle_o       (tx_idle)
  );

  logic               rxr_valid, rxr_ready, rxr_head;
  logic [RowBits-1:0] rxr_data;

  tpu_link_rx #(.Dim(Dim), .LinkLanes(LinkLanes), .Credits(LinkCredits)) u_rx (
    .clk_i, .rst_ni,
    .link_valid_i (rx_valid_i),
    .link_head_i  (rx_head_i),
    .link_data_i  (rx_data_i),
    .link_credit_o(rx_credit_o),
    .row_valid_o  (rxr_valid),
    .row_ready_i  (rxr_ready),
    .row_head_o   (rxr_head),
    .row_data_o   (rxr_data)
  );

  // ---------------------------------------------------------------------------
  // State
  // ---------------------------------------------------------------------------
  typedef enum logic [2:0] {
    Idle,      // waiting for an operation
    Divide,    // total / N, a bit per cycle
    Locate,    // walking the chunk boundaries down to this chip's chunks
    StepSetup, // the rows of this step's chunks
    Run,       // the step's sends and receives
    Failed     // stopped with an error, or aborted, until the core is reset
  } state_e;

  state_e      state_d, state_q;
  logic [7:0]  size_d, size_q, id_d, id_q;   // N and i, latched per operation
  // Division: quotient q and remainder r of total / N.
  logic [31:0] quot_d, quot_q;
  logic [7:0]  rem_d, rem_q;
  logic [5:0]  div_bit_d, div_bit_q;
  // Boundaries: lo_r = B(c_r) with remainder br_rem, c_r = the chunk received this step;
  // lo_s = B(c_s) and hi_s = B(c_s + 1) for the chunk sent, c_s = c_r + 1 mod N.
  logic [31:0] lo_r_d, lo_r_q, lo_s_d, lo_s_q, hi_s_d, hi_s_q;
  logic [7:0]  br_rem_d, br_rem_q, c_r_d, c_r_q;
  logic [31:0] last_b_d, last_b_q;   // B(N - 1)
  logic [7:0]  last_rem_d, last_rem_q;
  logic [8:0]  walk_d, walk_q;       // Locate: boundary steps still to take
  logic [8:0]  step_d, step_q;       // the step, 0 .. 2N - 3
  // The step's rows (local: 0 .. rows - 1): next to send and end, next to receive and end.
  logic [16:0] s_next_d, s_next_q, s_end_d, s_end_q, r_next_d, r_next_q, r_end_d, r_end_q;
  // The segment each side is in: its index, first flat index and first accumulator row, and
  // whether its rows are still to be worked out (the cycle after it starts).
  logic [15:0] s_seg_d, s_seg_q, r_seg_d, r_seg_q, s_row_d, s_row_q, r_row_d, r_row_q;
  logic [39:0] s_base_d, s_base_q, r_base_d, r_base_q;
  logic        s_load_d, s_load_q, r_load_d, r_load_q;
  logic        s_active_d, s_active_q, r_active_d, r_active_q;  // this step sends, receives
  logic [31:0] s_lo_d, s_lo_q, s_hi_d, s_hi_q;  // the flat indices sent this step
  logic        head_sent_d, head_sent_q, head_seen_d, head_seen_q;
  // What the step does with the rows it receives: add them to its own or copy them (into the
  // lanes of mask_lo .. mask_hi - 1), and pass them on to the next chip (PS), or only that.
  logic        r_add_d, r_add_q, r_store_d, r_store_q, r_fwd_d, r_fwd_q;
  logic [31:0] mask_lo_d, mask_lo_q, mask_hi_d, mask_hi_q;
  logic [8:0]  last_step_d, last_step_q;
  logic        send_inflight_d, send_inflight_q;  // a send read returns this cycle
  logic [31:0] quiet_d, quiet_q;     // cycles without progress
  logic [7:0]  err_code_d, err_code_q;
  logic        error_d, error_q;

  // ---------------------------------------------------------------------------
  // Boundary arithmetic
  // ---------------------------------------------------------------------------
  // One chunk down: from B(c) (remainder rem) to B(c - 1); from c = 0 to B(N - 1).
  logic [31:0] dec_b;
  logic [7:0]  dec_rem, dec_c;

  always_comb begin
    if (c_r_q == '0) begin
      dec_b   = last_b_q;
      dec_rem = last_rem_q;
      dec_c   = size_q - 1'b1;
    end else begin
      dec_b   = lo_r_q - quot_q - 32'(br_rem_q < rem_q);
      dec_rem = (br_rem_q < rem_q) ? br_rem_q + size_q - rem_q : br_rem_q - rem_q;
      dec_c   = c_r_q - 1'b1;
    end
  end

  // A segment covers flat indices [base, base + rows * Dim).
  logic [39:0] seg_span;
  assign seg_span = 40'(op_rows) << DimLog2;

  // The local rows [first, end) that hold values of [lo, hi).
  function automatic logic [33:0] chunk_rows(input logic [31:0] lo, input logic [31:0] hi,
                                             input logic [39:0] p_lo, input logic [39:0] p_hi);
    logic [39:0] a, b;
    logic [16:0] first, last_end;
    a = (40'(lo) > p_lo) ? 40'(lo) : p_lo;
    b = (40'(hi) < p_hi) ? 40'(hi) : p_hi;
    if (a >= b) begin
      first    = '0;
      last_end = '0;
    end else begin
      first    = 17'((a - p_lo) >> DimLog2);
      last_end = 17'((b - p_lo + DimWide - 40'd1) >> DimLog2);
    end
    chunk_rows = {first, last_end};
  endfunction

  // The chunk received ends where the chunk sent starts, but for the last chunk.
  logic [31:0] hi_r, hi_s_next;
  logic [33:0] send_span, recv_span;
  assign hi_r      = (c_r_q == size_q - 1'b1) ? op_total : lo_s_q;
  // A step down: chunk c_r becomes the chunk sent.
  assign hi_s_next = hi_r;
  assign send_span = chunk_rows(s_lo_q, s_hi_q, s_base_q, s_base_q + seg_span);
  assign recv_span = chunk_rows(mask_lo_q, mask_hi_q, r_base_q, r_base_q + seg_span);

  // ---------------------------------------------------------------------------
  // Receive pipeline: read the own row, add (or copy), queue the result for writing.
  // ---------------------------------------------------------------------------
  logic               recv_issue;        // a received row's own row is read this cycle
  logic               add_mode;          // this step adds (reduce-scatter)
  logic [Dim-1:0]     lane_mask;         // lanes of the received row in the chunk
  logic [39:0]        row_flat;          // flat index of lane 0 of row r_next
  logic [PipeLen-1:0] pipe_valid_d, pipe_valid_q;
  logic [$clog2(PipeLen+1)-1:0] pipe_count;

  assign add_mode = r_add_q;
  assign row_flat = r_base_q + (40'(r_next_q) << DimLog2);

  always_comb begin
    for (int unsigned l = 0; l < Dim; l++) begin
      lane_mask[l] = row_flat + 40'(l) >= 40'(mask_lo_q) && row_flat + 40'(l) < 40'(mask_hi_q);
    end
  end

  // Stage 1 (the cycle after the read): the received row and what to do with it.
  localparam int unsigned MetaBits = AccAddrWidth + Dim + 1;
  logic [RowBits-1:0]  s1_recv_d, s1_recv_q;
  logic [MetaBits-1:0] s1_meta_d, s1_meta_q;

  assign s1_recv_d = recv_issue ? rxr_data : s1_recv_q;
  assign s1_meta_d = recv_issue ? {AccAddrWidth'(r_row_q + r_next_q[15:0]), lane_mask, add_mode} :
                                  s1_meta_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s1_recv_q <= '0;
      s1_meta_q <= '0;
    end else begin
      s1_recv_q <= s1_recv_d;
      s1_meta_q <= s1_meta_d;
    end
  end

  // The sums, and beside them what the merge needs, delayed alike.
  logic [RowBits-1:0]  sums, own_late, recv_late;
  logic [MetaBits-1:0] meta_late;

  for (genvar l = 0; l < Dim; l++) begin : g_lane
    tpu_fp32_add #(.PipeStages(AddStages)) u_add (
      .clk_i, .rst_ni,
      .en_i (1'b1),
      .x_i  (s1_recv_q[l*32 +: 32]),
      .y_i  (recv_rd_data_i[l*32 +: 32]),
      .sum_o(sums[l*32 +: 32])
    );
  end

  tpu_delay #(.Width(2 * RowBits + MetaBits), .Depth(AddStages)) u_merge_delay (
    .clk_i, .rst_ni,
    .en_i  (1'b1),
    .data_i({recv_rd_data_i, s1_recv_q, s1_meta_q}),
    .data_o({own_late, recv_late, meta_late})
  );

  logic [AccAddrWidth-1:0] late_addr;
  logic [Dim-1:0]          late_mask;
  logic                    late_add;
  logic [RowBits-1:0]      merged;

  assign {late_addr, late_mask, late_add} = meta_late;

  always_comb begin
    for (int unsigned l = 0; l < Dim; l++) begin
      merged[l*32 +: 32] = !late_mask[l] ? own_late[l*32 +: 32] :
                           late_add      ? sums[l*32 +: 32] : recv_late[l*32 +: 32];
    end
  end

  logic wrq_valid, wrq_in_ready;
  logic [$clog2(WrDepth+1)-1:0] wrq_count;

  tpu_fifo #(.Width(AccAddrWidth + RowBits), .Depth(WrDepth)) u_write_queue (
    .clk_i, .rst_ni,
    .in_valid_i (pipe_valid_q[PipeLen-1]),
    .in_ready_o (wrq_in_ready),
    .in_data_i  ({late_addr, merged}),
    .out_valid_o(wrq_valid),
    .out_ready_i(wr_gnt_i),
    .out_data_o ({wr_addr_o, wr_data_o}),
    .count_o    (wrq_count)
  );
  assign wr_req_o = wrq_valid;

  always_comb begin
    pipe_count = '0;
    for (int unsigned s = 0; s < PipeLen; s++) pipe_count += $bits(pipe_count)'(pipe_valid_q[s]);
  end
  assign pipe_valid_d = PipeLen'({pipe_valid_q, recv_issue});

  // ---------------------------------------------------------------------------
  // Control
  // ---------------------------------------------------------------------------
  logic [RowBits-1:0] header_row, expected_header;
  logic               header_ok, progress, recv_room, fwd_room, step_done, waiting;
  logic               ps_sends;    // PS: this step sends the accumulator rows
  logic               send_last_seg, recv_last_seg, send_done, recv_done;
  logic               forwarding;  // a received row passed on this cycle
  logic [7:0]         prev_id;
  // The header has room for 113 bits in a row of four lanes: count and offset_step go in as a
  // 16-bit check, enough to catch chips that disagree on them.
  logic [15:0]        segments_check;
  assign segments_check = op_count ^ op_offset_step[15:0] ^ op_offset_step[31:16];
  logic [8:0]         trial;  // Divide: the remainder with the next dividend bit, less N

  assign prev_id   = (id_q == '0) ? size_q - 1'b1 : id_q - 1'b1;
  always_comb begin
    header_row      = '0;
    header_row[112:0]      = {segments_check, op_ps, op_offset, op_total, op_rows, size_q, id_q};
    expected_header = '0;
    expected_header[112:0] = {segments_check, op_ps, op_offset, op_total, op_rows, size_q,
                              prev_id};
  end
  assign header_ok = rxr_head && rxr_data == expected_header;

  // Room for one more row in the receive pipeline and the write queue; in the send queue for a
  // row passed on (PS, whose steps that pass rows on send nothing else).
  assign recv_room = 32'(pipe_count) + 32'(wrq_count) < 32'(WrDepth);
  assign fwd_room  = txq_in_ready && !send_inflight_q && head_sent_q;
  assign ps_sends  = (id_q == '0) ? step_q == last_step_q : step_q == '0;
  // A side is done with a step when it has worked through the rows of its last segment.
  assign send_last_seg = 17'(s_seg_q) + 17'd1 >= 17'(op_count);
  assign recv_last_seg = 17'(r_seg_q) + 17'd1 >= 17'(op_count);
  assign send_done = !s_active_q || (!s_load_q && s_next_q == s_end_q && send_last_seg);
  assign recv_done = !r_active_q || (!r_load_q && r_next_q == r_end_q && recv_last_seg);

  always_comb begin
    state_d         = state_q;
    size_d          = size_q;
    id_d            = id_q;
    quot_d          = quot_q;
    rem_d           = rem_q;
    div_bit_d       = div_bit_q;
    lo_r_d          = lo_r_q;
    lo_s_d          = lo_s_q;
    hi_s_d          = hi_s_q;
    br_rem_d        = br_rem_q;
    c_r_d           = c_r_q;
    last_b_d        = last_b_q;
    last_rem_d      = last_rem_q;
    walk_d          = walk_q;
    step_d          = step_q;
    s_next_d        = s_next_q;
    s_end_d         = s_end_q;
    r_next_d        = r_next_q;
    r_end_d         = r_end_q;
    head_sent_d     = head_sent_q;
    head_seen_d     = head_seen_q;
    r_add_d         = r_add_q;
    s_seg_d         = s_seg_q;
    r_seg_d         = r_seg_q;
    s_base_d        = s_base_q;
    r_base_d        = r_base_q;
    s_row_d         = s_row_q;
    r_row_d         = r_row_q;
    s_load_d        = s_load_q;
    r_load_d        = r_load_q;
    s_active_d      = s_active_q;
    r_active_d      = r_active_q;
    s_lo_d          = s_lo_q;
    s_hi_d          = s_hi_q;
    r_store_d       = r_store_q;
    r_fwd_d         = r_fwd_q;
    mask_lo_d       = mask_lo_q;
    mask_hi_d       = mask_hi_q;
    last_step_d     = last_step_q;
    err_code_d      = err_code_q;
    error_d         = error_q;
    pop             = 1'b0;
    send_rd_req_o   = 1'b0;
    recv_rd_req_o   = 1'b0;
    recv_issue      = 1'b0;
    rxr_ready       = 1'b0;
    txq_in_valid    = send_inflight_q;
    txq_in_head     = 1'b0;
    txq_in_data     = send_rd_data_i;
    send_inflight_d = 1'b0;
    step_done       = 1'b0;
    waiting         = 1'b0;
    forwarding      = 1'b0;
    trial           = {rem_q, quot_q[31]} - {1'b0, size_q};

    unique case (state_q)
      Idle: begin
        if (!queue_empty) begin
          size_d = pod_size_i;
          id_d   = pod_id_i;
          if (pod_size_i < 8'd2 || pod_id_i >= pod_size_i) begin
            err_code_d = tpu_regs_pkg::ErrPodConfig;
            error_d    = 1'b1;
            state_d    = Failed;
          end else begin
            quot_d      = op_total;
            rem_d       = '0;
            div_bit_d   = '0;
            head_sent_d = 1'b0;
            head_seen_d = 1'b0;
            state_d     = Divide;
          end
        end
      end
      Divide: begin
        // Restoring division: the dividend shifts out of quot as quotient bits shift in.
        if (!trial[8]) begin
          rem_d  = trial[7:0];
          quot_d = {quot_q[30:0], 1'b1};
        end else begin
          rem_d  = {rem_q[6:0], quot_q[31]};
          quot_d = {quot_q[30:0], 1'b0};
        end
        div_bit_d = div_bit_q + 1'b1;
        if (div_bit_q == 6'd31) begin
          // B(N) = total with remainder 0; B(N - 1) is one chunk below it.
          lo_r_d   = op_total;
          br_rem_d = '0;
          c_r_d    = size_q;
          walk_d   = 9'(size_q) - 9'(id_q) + 9'd1;
          state_d  = Locate;
        end
      end
      Locate: begin
        if (c_r_q == size_q) begin
          // The first step down from B(N), kept as B(N - 1) for the wrap past chunk 0.
          last_b_d   = op_total - quot_q - 32'(rem_q != '0);
          last_rem_d = (rem_q != '0) ? size_q - rem_q : '0;
        end
        hi_s_d   = hi_s_next;
        lo_s_d   = lo_r_q;
        lo_r_d   = dec_b;
        br_rem_d = dec_rem;
        c_r_d    = dec_c;
        if (c_r_q == size_q) begin
          lo_r_d   = op_total - quot_q - 32'(rem_q != '0);
          br_rem_d = (rem_q != '0) ? size_q - rem_q : '0;
        end
        walk_d = walk_q - 1'b1;
        if (walk_q == 9'd1) begin
          step_d      = '0;
          // The ring: 2 (N - 1) steps. PS: chip 0 receives N - 1 tensors, then sends the sums;
          // chip i sends its own, forwards i - 1, then keeps (and forwards) the sums.
          last_step_d = !op_ps ? 9'(size_q) + 9'(size_q) - 9'd3 :
                        (id_q == '0) ? 9'(size_q) - 9'd1 : 9'(id_q);
          state_d     = StepSetup;
        end
      end
      StepSetup: begin
        // Each side starts at segment 0 and works out its rows in the first cycle of Run.
        s_seg_d  = '0;
        r_seg_d  = '0;
        s_base_d = 40'(op_offset);
        r_base_d = 40'(op_offset);
        s_row_d  = op_base;
        r_row_d  = op_base;
        s_load_d = 1'b1;
        r_load_d = 1'b1;
        s_next_d = '0;
        s_end_d  = '0;
        r_next_d = '0;
        r_end_d  = '0;
        if (!op_ps) begin
          s_active_d = 1'b1;
          r_active_d = 1'b1;
          s_lo_d    = lo_s_q;
          s_hi_d    = hi_s_q;
          r_add_d   = step_q < 9'(size_q) - 9'd1;
          r_store_d = 1'b1;
          r_fwd_d   = 1'b0;
          mask_lo_d = lo_r_q;
          mask_hi_d = hi_r;
        end else begin
          // Every step moves the whole pass; a step either sends from the accumulators or
          // receives.
          s_active_d = ps_sends;
          r_active_d = !ps_sends;
          s_lo_d    = '0;
          s_hi_d    = op_total;
          r_add_d   = id_q == '0;
          r_store_d = id_q == '0 || step_q == last_step_q;
          r_fwd_d   = id_q != '0 && !(step_q == last_step_q && 9'(id_q) == 9'(size_q) - 9'd1);
          mask_lo_d = '0;
          mask_hi_d = op_total;
        end
        state_d = Run;
      end
      Run: begin
        // The header has gone first; then the rows of the chunk sent, segment by segment.
        if (s_active_q && s_load_q) begin
          s_next_d = send_span[33:17];
          s_end_d  = send_span[16:0];
          s_load_d = 1'b0;
        end else if (s_active_q && s_next_q == s_end_q && !send_last_seg) begin
          s_seg_d  = s_seg_q + 1'b1;
          s_base_d = s_base_q + 40'(op_offset_step);
          s_row_d  = s_row_q + op_step;
          s_load_d = 1'b1;
        end else if (s_active_q && head_sent_q && s_next_q != s_end_q &&
                     32'(txq_count) + 32'(send_inflight_q) < 32'(TxDepth)) begin
          send_rd_req_o = 1'b1;
          if (send_rd_gnt_i) begin
            s_next_d        = s_next_q + 1'b1;
            send_inflight_d = 1'b1;
          end
        end
        // The header has come first; then the rows of the chunk received.
        if (!head_seen_q) begin
          waiting = !rxr_valid;
        end else if (r_active_q && r_load_q) begin
          r_next_d = recv_span[33:17];
          r_end_d  = recv_span[16:0];
          r_load_d = 1'b0;
        end else if (r_active_q && r_next_q == r_end_q && !recv_last_seg) begin
          r_seg_d  = r_seg_q + 1'b1;
          r_base_d = r_base_q + 40'(op_offset_step);
          r_row_d  = r_row_q + op_step;
          r_load_d = 1'b1;
        end else if (r_active_q && r_next_q != r_end_q) begin
          waiting = !rxr_valid;
          if (rxr_valid && rxr_head) begin
            err_code_d = tpu_regs_pkg::ErrPodMismatch;
            error_d    = 1'b1;
            state_d    = Failed;
          end else if (rxr_valid && !r_store_q) begin
            // PS: a row for a chip further on, passed on as it comes.
            if (fwd_room) begin
              rxr_ready    = 1'b1;
              forwarding   = 1'b1;
              txq_in_valid = 1'b1;
              txq_in_data  = rxr_data;
              r_next_d     = r_next_q + 1'b1;
            end
          end else if (rxr_valid && recv_room && (!r_fwd_q || fwd_room)) begin
            recv_rd_req_o = 1'b1;
            if (recv_rd_gnt_i) begin
              rxr_ready  = 1'b1;
              recv_issue = 1'b1;
              r_next_d   = r_next_q + 1'b1;
              if (r_fwd_q) begin
                forwarding   = 1'b1;
                txq_in_valid = 1'b1;
                txq_in_data  = rxr_data;
              end
            end
          end
        end
        step_done = head_sent_q && head_seen_q && send_done && !send_inflight_q && recv_done &&
                    pipe_valid_q == '0 && wrq_count == '0 && !error_d;
        if (step_done) begin
          if (step_q == last_step_q) begin
            pop     = 1'b1;
            state_d = Idle;
          end else begin
            step_d   = step_q + 1'b1;
            hi_s_d   = hi_s_next;
            lo_s_d   = lo_r_q;
            lo_r_d   = dec_b;
            br_rem_d = dec_rem;
            c_r_d    = dec_c;
            state_d  = StepSetup;
          end
        end
      end
      Failed: ;
      default: state_d = Idle;
    endcase

    // The headers cross while the unit divides and walks the boundaries: the rows cannot come
    // before them, and the link latency hides behind the arithmetic.
    if (state_q != Idle && state_q != Failed) begin
      if (!head_sent_q && txq_in_ready && !send_inflight_q) begin
        txq_in_valid = 1'b1;
        txq_in_head  = 1'b1;
        txq_in_data  = header_row;
        head_sent_d  = 1'b1;
      end
      if (!head_seen_q && rxr_valid) begin
        rxr_ready   = 1'b1;
        head_seen_d = 1'b1;
        if (!header_ok) begin
          err_code_d = tpu_regs_pkg::ErrPodMismatch;
          error_d    = 1'b1;
          state_d    = Failed;
        end
      end
    end

    // No progress for LINK_TIMEOUT cycles: a neighbour does not answer.
    if (state_q == Run && link_timeout_i != '0 && quiet_q >= link_timeout_i) begin
      err_code_d = tpu_regs_pkg::ErrLinkTimeout;
      error_d    = 1'b1;
      state_d    = Failed;
    end
    // Another unit's bus error stops this one where it is.
    if (abort_i) state_d = Failed;
  end

  assign progress = state_q != Run || txq_in_valid || rxr_ready || rx_valid_i ||
                    tx_valid_o || wr_gnt_i;
  assign quiet_d  = progress ? '0 : quiet_q + 1'b1;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q         <= Idle;
      size_q          <= '0;
      id_q            <= '0;
      quot_q          <= '0;
      rem_q           <= '0;
      div_bit_q       <= '0;
      lo_r_q          <= '0;
      lo_s_q          <= '0;
      hi_s_q          <= '0;
      br_rem_q        <= '0;
      c_r_q           <= '0;
      last_b_q        <= '0;
      last_rem_q      <= '0;
      walk_q          <= '0;
      step_q          <= '0;
      s_next_q        <= '0;
      s_end_q         <= '0;
      r_next_q        <= '0;
      r_end_q         <= '0;
      head_sent_q     <= 1'b0;
      head_seen_q     <= 1'b0;
      r_add_q         <= 1'b0;
      s_seg_q         <= '0;
      r_seg_q         <= '0;
      s_base_q        <= '0;
      r_base_q        <= '0;
      s_row_q         <= '0;
      r_row_q         <= '0;
      s_load_q        <= 1'b0;
      r_load_q        <= 1'b0;
      s_active_q      <= 1'b0;
      r_active_q      <= 1'b0;
      s_lo_q          <= '0;
      s_hi_q          <= '0;
      r_store_q       <= 1'b0;
      r_fwd_q         <= 1'b0;
      mask_lo_q       <= '0;
      mask_hi_q       <= '0;
      last_step_q     <= '0;
      send_inflight_q <= 1'b0;
      pipe_valid_q    <= '0;
      quiet_q         <= '0;
      err_code_q      <= tpu_regs_pkg::ErrNone;
      error_q         <= 1'b0;
    end else begin
      state_q         <= state_d;
      size_q          <= size_d;
      id_q            <= id_d;
      quot_q          <= quot_d;
      rem_q           <= rem_d;
      div_bit_q       <= div_bit_d;
      lo_r_q          <= lo_r_d;
      lo_s_q          <= lo_s_d;
      hi_s_q          <= hi_s_d;
      br_rem_q        <= br_rem_d;
      c_r_q           <= c_r_d;
      last_b_q        <= last_b_d;
      last_rem_q      <= last_rem_d;
      walk_q          <= walk_d;
      step_q          <= step_d;
      s_next_q        <= s_next_d;
      s_end_q         <= s_end_d;
      r_next_q        <= r_next_d;
      r_end_q         <= r_end_d;
      head_sent_q     <= head_sent_d;
      head_seen_q     <= head_seen_d;
      r_add_q         <= r_add_d;
      s_seg_q         <= s_seg_d;
      r_seg_q         <= r_seg_d;
      s_base_q        <= s_base_d;
      r_base_q        <= r_base_d;
      s_row_q         <= s_row_d;
      r_row_q         <= r_row_d;
      s_load_q        <= s_load_d;
      r_load_q        <= r_load_d;
      s_active_q      <= s_active_d;
      r_active_q      <= r_active_d;
      s_lo_q          <= s_lo_d;
      s_hi_q          <= s_hi_d;
      r_store_q       <= r_store_d;
      r_fwd_q         <= r_fwd_d;
      mask_lo_q       <= mask_lo_d;
      mask_hi_q       <= mask_hi_d;
      last_step_q     <= last_step_d;
      send_inflight_q <= send_inflight_d;
      pipe_valid_q    <= pipe_valid_d;
      quiet_q         <= quiet_d;
      err_code_q      <= err_code_d;
      error_q         <= error_d;
    end
  end

  assign send_rd_addr_o  = AccAddrWidth'(s_row_q + s_next_q[15:0]);
  assign recv_rd_addr_o  = AccAddrWidth'(r_row_q + r_next_q[15:0]);
  assign error_o         = error_q;
  assign error_code_o    = err_code_q;
  assign pc_o            = head.pc;
  assign sent_beat_o     = tx_valid_o;
  assign received_beat_o = rx_valid_i;
  assign stall_o         = state_q == Run && (tx_stall || waiting);
  assign idle_o          = queue_empty && txq_count == '0 && tx_idle && state_q != Failed;

  `TPU_ASSERT(a_write_room, !pipe_valid_q[PipeLen-1] || wrq_in_ready,
              "a sum found the write queue full")
  `TPU_ASSERT(a_send_room, !txq_in_valid || txq_in_ready, "a row to send found the send queue full")
  `TPU_ASSERT(a_rows_in_segment,
              state_q != Run || (s_end_q <= 17'(op_rows) && r_end_q <= 17'(op_rows)),
              "a chunk reaches past a segment's rows")
  `TPU_ASSERT(a_boundaries_ordered,
              !(state_q == Run && !op_ps) || (lo_r_q <= hi_r && lo_s_q <= hi_s_q),
              "chunk boundaries out of order")
  `TPU_ASSERT(a_one_row_source, !(send_inflight_q && forwarding),
              "a row read to send and a row passed on in one cycle")

endmodule
