// Stretches one-cycle events to at least 2^CountBits cycles, so that an LED
// shows them: the output stays high until that many cycles after the last one.
module tpu_pulse_stretch #(
  parameter int unsigned CountBits = 20  // 1..32
) (
  input  logic clk_i,
  input  logic rst_ni,
  input  logic pulse_i,
  output logic stretched_o
);

  if (CountBits < 1 || CountBits > 32) begin : g_bad_bits
    $error("tpu_pulse_stretch: CountBits must be in 1..32");
  end

  logic [CountBits-1:0] left_d, left_q;

  assign left_d = pulse_i ? '1 : (left_q != '0) ? left_q - 1'b1 : left_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) left_q <= '0;
    else         left_q <= left_d;
  end

  assign stretched_o = left_q != '0;

endmodule
