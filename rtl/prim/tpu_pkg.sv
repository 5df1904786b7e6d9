// Shared constants and helpers of the TPU datapath.
// Number formats and rule IDs (N-IN ... N-OUT) follow docs/numerics.md.
package tpu_pkg;

  // Canonical quiet NaNs (positive, zero payload).
  localparam logic [31:0] Fp32CanonicalNan = 32'h7FC0_0000;
  localparam logic [15:0] Bf16CanonicalNan = 16'h7FC0;

  // Legal ranges of the arithmetic units' pipeline-register parameters.
  localparam int unsigned MulStagesMax = 2;
  localparam int unsigned AddStagesMax = 3;
  localparam int unsigned RoundStagesMax = 1;

  // Latency of the activation function unit (tpu_act_func) in enabled cycles.
  localparam int unsigned ActFuncLatency /*verilator public*/ = 5;
  // ... and with its SplitStages, for FPGA clocks.
  localparam int unsigned ActFuncSplitLatency /*verilator public*/ = 13;

  // Largest legal array edge (TPU v1's array is 256 x 256).
  localparam int unsigned ArrayDimMax = 256;

  // Number of leading zeros of a nonzero byte, from its bits 7..1 (bit 0 is
  // then the leading one). No loop: Yosys infers a latch for a loop variable
  // of a function called in some branches of an if only.
  function automatic logic [2:0] lzc8(input logic [7:1] upper);
    if      (upper[7]) lzc8 = 3'd0;
    else if (upper[6]) lzc8 = 3'd1;
    else if (upper[5]) lzc8 = 3'd2;
    else if (upper[4]) lzc8 = 3'd3;
    else if (upper[3]) lzc8 = 3'd4;
    else if (upper[2]) lzc8 = 3'd5;
    else if (upper[1]) lzc8 = 3'd6;
    else               lzc8 = 3'd7;
  endfunction

  // Number of leading zeros of a nonzero 32-bit value (31 for zero). The
  // halves, bytes, nibbles and pairs are chosen by ?: (conditional moves in a
  // simulator, where a priority chain of ifs mispredicts), and the zero tests
  // of the upper half and of each upper byte do not wait for a choice, so the
  // logic stays a few LUTs deep.
  function automatic logic [4:0] lzc32(input logic [31:0] value);
    logic        half_zero, byte_zero, nibble_zero, pair_zero;
    logic [15:0] half;
    logic [7:0]  first_byte;
    logic [3:1]  nibble;  // the chosen nibble; its bit 0 is the leading one if these are zeros
    half_zero   = value[31:16] == 16'h0;
    byte_zero   = half_zero ? value[15:8] == 8'h0 : value[31:24] == 8'h0;
    half        = half_zero ? value[15:0] : value[31:16];
    first_byte  = byte_zero ? half[7:0] : half[15:8];
    nibble_zero = first_byte[7:4] == 4'h0;
    nibble      = nibble_zero ? first_byte[3:1] : first_byte[7:5];
    pair_zero   = nibble[3:2] == 2'b00;
    lzc32 = {half_zero, byte_zero, nibble_zero, pair_zero, pair_zero ? !nibble[1] : !nibble[3]};
  endfunction

  // value > 2^log2: a bit above log2, or bit log2 and any below it. Depths and array sizes are
  // powers of two, so comparisons with them, and with 2^32, need no carry chain.
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

  // Rows [lo_a, hi_a) and [lo_b, hi_b) share a row. Empty ranges share nothing.
  function automatic logic rows_overlap(input logic [15:0] lo_a, input logic [16:0] hi_a,
                                        input logic [15:0] lo_b, input logic [16:0] hi_b);
    rows_overlap = ({1'b0, lo_a} < hi_b) && ({1'b0, lo_b} < hi_a);
  endfunction

endpackage
