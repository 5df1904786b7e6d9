// Proof harness for tpu_mxu, the matrix unit with its stream control (tpu_mxu_ctrl) and the
// systolic array (docs/verification.md). The stream handshakes are checked at the unit's ports;
// the data are free (the arithmetic is proved by the MAC cell's proofs). The checks of
// tpu_mxu_ctrl (a tile committed with all its weight rows, weights reloaded only behind the
// commit wavefront) and the array's expectations of it (no weight overwritten before its commit,
// no commit without a weight) are checked with them.
//
// Assumed, a real environment: the weight, activation and seed sources hold a beat, unchanged,
// until it is taken (tpu_mxu's own expectations, restated here from the protocol). The result
// consumer is free: it may hold res_ready low as long as it likes.
//
// Checked: a result row held, unchanged, until it is taken; an activation row and its seed row
// taken together; one result row for each activation row taken, in order (res_last on exactly
// the rows taken with act_last), none without one, at most Latency in flight; and, while no
// result waits for the consumer, the oldest row's result within Latency - 1 cycles of the cycle
// after its activation was taken.
`include "tpu_assert.svh"

module formal_mxu_harness #(
  parameter int unsigned Rows      = 2,
  parameter int unsigned Cols      = 2,
  parameter int unsigned MulStages = 0,
  parameter int unsigned AddStages = 0,
  parameter bit          Int8      = 1'b0,
  parameter bit          Float     = 1'b1
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               wgt_valid_i,
  input  logic [Cols*16-1:0] wgt_data_i,
  input  logic               act_valid_i,
  input  logic [Rows*16-1:0] act_data_i,
  input  logic               act_last_i,
  input  logic               act_int8_i,
  input  logic               seed_valid_i,
  input  logic [Cols*32-1:0] seed_data_i,
  input  logic               res_ready_i
);

  // Cycles from an activation row taken to its result (tpu_mxu), while the unit advances.
  localparam int unsigned Latency    = Cols + MulStages + Rows * (AddStages + 1);
  localparam int unsigned CountWidth = $clog2(Latency + 2);

  logic               wgt_ready, act_ready, seed_ready, res_valid, res_last;
  logic [Cols*32-1:0] res_data;

  tpu_mxu #(
    .Rows(Rows), .Cols(Cols), .MulStages(MulStages), .AddStages(AddStages), .Int8(Int8),
    .Float(Float)
  ) u_dut (
    .clk_i, .rst_ni,
    .wgt_valid_i, .wgt_ready_o(wgt_ready), .wgt_data_i,
    .act_valid_i, .act_ready_o(act_ready), .act_data_i, .act_last_i, .act_int8_i,
    .seed_valid_i, .seed_ready_o(seed_ready), .seed_data_i,
    .res_valid_o(res_valid), .res_ready_i, .res_data_o(res_data), .res_last_o(res_last)
  );

  // Reset in the first cycle, then none.
  logic started_q = 1'b0;
  always_ff @(posedge clk_i) started_q <= 1'b1;
  always_comb assume (rst_ni == started_q);

  // The sources: a beat offered stays offered, unchanged, until it is taken.
  `TPU_ASSUME_NEXT(p_wgt_held, wgt_valid_i && !wgt_ready,
                   wgt_valid_i && $stable(wgt_data_i), "weight beat changed or withdrawn")
  `TPU_ASSUME_NEXT(p_act_held, act_valid_i && !act_ready,
                   act_valid_i && $stable(act_data_i) && $stable(act_last_i) &&
                   $stable(act_int8_i), "activation beat changed or withdrawn")
  `TPU_ASSUME_NEXT(p_seed_held, seed_valid_i && !seed_ready,
                   seed_valid_i && $stable(seed_data_i), "seed beat changed or withdrawn")

  logic act_fire, seed_fire, res_fire;
  assign act_fire  = act_valid_i && act_ready;
  assign seed_fire = seed_valid_i && seed_ready;
  assign res_fire  = res_valid && res_ready_i;

  // Rows taken whose results are not yet taken, and their act_last marks, oldest in bit 0.
  logic [CountWidth-1:0] inflight_d, inflight_q;
  logic [Latency:0]      lasts_d, lasts_q;
  always_comb begin
    lasts_d    = lasts_q;
    inflight_d = inflight_q;
    if (act_fire) begin
      for (int i = 0; i <= Latency; i++) begin
        if (CountWidth'(i) == inflight_q) lasts_d[i] = act_last_i;
      end
      inflight_d = inflight_d + 1'b1;
    end
    if (res_fire) begin
      lasts_d    = lasts_d >> 1;
      inflight_d = inflight_d - 1'b1;
    end
  end
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      inflight_q <= '0;
      lasts_q    <= '0;
    end else begin
      inflight_q <= inflight_d;
      lasts_q    <= lasts_d;
    end
  end

  // The result stream's obligation.
  `TPU_ASSERT_NEXT(a_res_held, res_valid && !res_ready_i,
                   res_valid && $stable(res_data) && $stable(res_last),
                   "result changed or withdrawn before it was taken")
  // Activations and seeds are joined.
  `TPU_ASSERT(a_act_with_seed, act_fire == seed_fire, "activation and seed taken apart")
  // One result per row, in order.
  `TPU_ASSERT(a_res_for_row, !res_valid || inflight_q != '0, "a result with no row taken")
  `TPU_ASSERT(a_res_last, !res_valid || res_last == lasts_q[0], "res_last on the wrong row")
  `TPU_ASSERT(a_inflight, 32'(inflight_q) <= Latency, "more rows in flight than the pipeline holds")
  // Bounded response: while no result waits for the consumer, the unit advances every cycle.
  `TPU_ASSERT_WITHIN(a_res_comes, inflight_q != '0 && !res_valid, Latency - 1,
                     "a row's result late")

endmodule
