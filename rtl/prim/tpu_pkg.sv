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
  // Latency of one lane of requantisation (tpu_requant).
  localparam int unsigned RequantLatency = 6;

  // Largest legal array edge (TPU v1's array is 256 x 256).
  localparam int unsigned ArrayDimMax = 256;

  // Number of leading zeros of a nonzero byte, from its bits 7..1 (bit 0 is
  // then the leading one). The nibble and the pair are chosen by ?:, which a
  // simulator compiles to conditional moves where a priority chain of ifs
  // would branch, and mispredict, on every other operand.
  function automatic logic [2:0] lzc8(input logic [7:1] upper);
    logic       nibble_zero, pair_zero;
    logic [3:1] nibble;  // its bit 0 is the leading one if these are zeros
    nibble_zero = upper[7:4] == 4'h0;
    nibble      = nibble_zero ? upper[3:1] : upper[7:5];
    pair_zero   = nibble[3:2] == 2'b00;
    lzc8 = {nibble_zero, pair_zero, pair_zero ? !nibble[1] : !nibble[3]};
  endfunction

  // Number of leading zeros of a nonzero 32-bit value, from its bits 31..1
  // (bit 0 is then the leading one): every byte's test and count side by
  // side, then the first nonzero byte's count. A serial search (half, byte,
  // nibble) would be a deep chain of LUTs.
  function automatic logic [4:0] lzc32(input logic [31:1] value);
    logic [2:0] in_byte3, in_byte2, in_byte1, in_byte0;
    in_byte3 = lzc8(value[31:25]);
    in_byte2 = lzc8(value[23:17]);
    in_byte1 = lzc8(value[15:9]);
    in_byte0 = lzc8(value[7:1]);
    lzc32 = value[31:24] != 8'h0 ? {2'd0, in_byte3} :
            value[23:16] != 8'h0 ? {2'd1, in_byte2} :
            value[15:8] != 8'h0  ? {2'd2, in_byte1} : {2'd3, in_byte0};
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
