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
  localparam int unsigned ActFuncSplitLatency /*verilator public*/ = 12;

  // Largest legal array edge (TPU v1's array is 256 x 256).
  localparam int unsigned ArrayDimMax = 256;

  // Number of leading zeros of a 27-bit value (27 when it is zero); used to
  // normalise an fp32 sum after cancellation.
  function automatic logic [4:0] lzc27(input logic [26:0] value);
    logic [4:0] count;
    count = 5'd27;
    for (int bit_idx = 0; bit_idx < 27; bit_idx++) begin
      if (value[bit_idx]) count = 5'd26 - bit_idx[4:0];
    end
    lzc27 = count;
  endfunction

endpackage
