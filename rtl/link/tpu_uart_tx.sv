// UART transmitter, 8N1, least significant bit first: takes a byte when it is
// idle and sends start bit, eight data bits and stop bit, each ClksPerBit
// cycles long. The line idles high, also during reset.
`include "tpu_assert.svh"

module tpu_uart_tx #(
  parameter int unsigned ClksPerBit = 16  // clock cycles per bit, 4..65535
) (
  input  logic       clk_i,
  input  logic       rst_ni,

  input  logic       valid_i,
  output logic       ready_o,
  input  logic [7:0] data_i,

  output logic       tx_o
);

  if (ClksPerBit < 4 || ClksPerBit > 65535) begin : g_bad_clks
    $error("tpu_uart_tx: ClksPerBit must be in 4..65535");
  end

  localparam int unsigned CountWidth = 16;
  localparam logic [CountWidth-1:0] FullBit = CountWidth'(ClksPerBit - 1);

  // The character's bits still to go out, the current one at bit 0; `bits`
  // counts them (0: idle).
  logic [9:0]            shift_d, shift_q;
  logic [3:0]            bits_d, bits_q;
  logic [CountWidth-1:0] count_d, count_q;
  logic                  take;

  always_comb begin
    ready_o = bits_q == '0;
    take    = valid_i && ready_o;
    shift_d = shift_q;
    bits_d  = bits_q;
    count_d = count_q;
    if (take) begin
      shift_d = {1'b1, data_i, 1'b0};
      bits_d  = 4'd10;
      count_d = FullBit;
    end else if (bits_q != '0) begin
      if (count_q == '0) begin
        shift_d = {1'b1, shift_q[9:1]};
        bits_d  = bits_q - 1'b1;
        count_d = FullBit;
      end else begin
        count_d = count_q - 1'b1;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      shift_q <= '1;
      bits_q  <= '0;
      count_q <= '0;
    end else begin
      shift_q <= shift_d;
      bits_q  <= bits_d;
      count_q <= count_d;
    end
  end

  assign tx_o = bits_q == '0 || shift_q[0];

  `TPU_ASSUME_NEXT(a_valid_held, valid_i && !ready_o, valid_i && $stable(data_i),
                   "byte withdrawn or changed before it was taken")

endmodule
