// Checks that Verilator (--assert) and SymbiYosys both read: immediate assertions in
// clocked blocks, because open-source Yosys reads no concurrent SVA. A module includes
// this file and uses the macros after its clk_i and rst_ni ports are declared; each check
// is off while rst_ni is low. Synthesis sees none of them.
//
//   `TPU_ASSERT(name, cond, msg)              cond holds in every cycle
//   `TPU_ASSERT_NEXT(name, pre, post, msg)    pre in one cycle |=> post in the next;
//                                             post may use $past and $stable
//   `TPU_ASSERT_WITHIN(name, waiting, n, msg) waiting holds for at most n cycles in a
//                                             row: bounded response, the form liveness
//                                             takes here
//   `TPU_ASSUME(name, cond, msg)              what the module expects of its inputs
//   `TPU_ASSUME_NEXT(name, pre, post, msg)    the same, pre |=> post
//   `TPU_ASSUME_WITHIN(name, waiting, n, msg) the same, bounded response (a fair partner)
//
// An assumption is checked like an assertion in simulation. In a proof it constrains
// the inputs of the module proved; scripts/formal.py turns the assumptions of every
// module below that one into assertions, so a unit inside the proved one is checked
// against what it expects, not trusted.
`ifndef TPU_ASSERT_SVH
`define TPU_ASSERT_SVH

`ifdef SYNTHESIS

`define TPU_ASSERT(name, cond, msg)
`define TPU_ASSERT_NEXT(name, pre, post, msg)
`define TPU_ASSERT_WITHIN(name, waiting, n, msg)
`define TPU_ASSUME(name, cond, msg)
`define TPU_ASSUME_NEXT(name, pre, post, msg)
`define TPU_ASSUME_WITHIN(name, waiting, n, msg)

`else

`ifdef FORMAL
`define TPU_CHECK_FAIL(msg)
`else
`define TPU_CHECK_FAIL(msg) else $error("%m: %s", msg)
`endif

`define TPU_ASSERT(name, cond, msg) \
  always_ff @(posedge clk_i) begin \
    if (rst_ni) begin \
      name: assert (cond) `TPU_CHECK_FAIL(msg); \
    end \
  end

`define TPU_ASSUME(name, cond, msg) \
  always_ff @(posedge clk_i) begin \
    if (rst_ni) begin \
      name: assume (cond) `TPU_CHECK_FAIL(msg); \
    end \
  end

// pre is registered (cleared by reset), so post is checked in the cycle after pre, and
// never in the first cycle out of reset.
`define TPU_NEXT_CHECK(kind, name, pre, post, msg) \
  logic name``_armed_q; \
  always_ff @(posedge clk_i or negedge rst_ni) begin \
    if (!rst_ni) name``_armed_q <= 1'b0; \
    else         name``_armed_q <= (pre); \
  end \
  always_ff @(posedge clk_i) begin \
    if (rst_ni && name``_armed_q) begin \
      name: kind (post) `TPU_CHECK_FAIL(msg); \
    end \
  end

`define TPU_ASSERT_NEXT(name, pre, post, msg) `TPU_NEXT_CHECK(assert, name, pre, post, msg)
`define TPU_ASSUME_NEXT(name, pre, post, msg) `TPU_NEXT_CHECK(assume, name, pre, post, msg)

// waiting's run length so far, this cycle included, saturating above n.
`define TPU_WITHIN_CHECK(kind, name, waiting, n, msg) \
  logic [$clog2((n) + 2)-1:0] name``_count_q, name``_count_d; \
  always_comb begin \
    name``_count_d = name``_count_q; \
    if (!(waiting))                                         name``_count_d = '0; \
    else if (name``_count_q <= ($bits(name``_count_q))'(n)) name``_count_d = name``_count_q + 1'b1; \
  end \
  always_ff @(posedge clk_i or negedge rst_ni) begin \
    if (!rst_ni) name``_count_q <= '0; \
    else         name``_count_q <= name``_count_d; \
  end \
  always_ff @(posedge clk_i) begin \
    if (rst_ni) begin \
      name: kind (name``_count_d <= ($bits(name``_count_q))'(n)) `TPU_CHECK_FAIL(msg); \
    end \
  end

`define TPU_ASSERT_WITHIN(name, waiting, n, msg) `TPU_WITHIN_CHECK(assert, name, waiting, n, msg)
`define TPU_ASSUME_WITHIN(name, waiting, n, msg) `TPU_WITHIN_CHECK(assume, name, waiting, n, msg)

`endif

`endif
