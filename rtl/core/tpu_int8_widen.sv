// An int8 host row (Lanes bytes, from bit 0) as on-chip lanes: each byte
// sign-extended into a 16-bit lane, so that the unified buffer and the weight
// FIFO hold int8 values where bf16 ones would sit (docs/isa.md, "int8 mode").
// Without int8_i the row passes as it is.
module tpu_int8_widen #(
  parameter int unsigned Lanes = 16
) (
  input  logic                  int8_i,
  input  logic [Lanes*16-1:0]   row_i,
  output logic [Lanes*16-1:0]   lanes_o
);

  always_comb begin
    lanes_o = row_i;
    if (int8_i) begin
      for (int unsigned l = 0; l < Lanes; l++) begin
        lanes_o[l*16 +: 16] = {{8{row_i[l*8 + 7]}}, row_i[l*8 +: 8]};
      end
    end
  end

endmodule
