// XOR of a value's 64-bit words, the last one padded with zeros: what the
// handshake assertions hold stable ($stable) in place of a wide value, for
// which Verilator 5.006 would emit uncompilable sampled copies (over 512
// bits). Bit i lands on bit i mod 64. Folded word by word, not bit by bit: a
// simulator folds a 512-bit row in eight XORs.
module tpu_fold64 #(
  parameter int unsigned Width = 64
) (
  input  logic [Width-1:0] value_i,
  output logic [63:0]      fold_o
);

  if (Width < 1) begin : g_bad_width
    $error("tpu_fold64: Width must be >= 1");
  end

  localparam int unsigned Words = (Width + 63) / 64;

  logic [Words*64-1:0] padded;
  always_comb begin
    padded = '0;
    padded[Width-1:0] = value_i;
    fold_o = '0;
    for (int unsigned w = 0; w < Words; w++) fold_o ^= padded[w*64 +: 64];
  end

endmodule
