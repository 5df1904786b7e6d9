// UART receiver, 8N1, least significant bit first. The line passes two
// synchronising flops; a character starts at a falling edge, and each bit is
// sampled in its middle, so a sender may be off by almost half a bit over the
// ten bits of a character. A start bit that is high again at its middle was a
// glitch and is ignored. A character whose stop bit reads low is delivered with
// frame_error_o set: the byte is not to be trusted.
`include "tpu_assert.svh"

module tpu_uart_rx #(
  parameter int unsigned ClksPerBit = 16  // clock cycles per bit, 4..65535
) (
  input  logic       clk_i,
  input  logic       rst_ni,

  input  logic       rx_i,           // the line, idle high, asynchronous to clk_i

  output logic       valid_o,        // one cycle per character
  output logic [7:0] data_o,
  output logic       frame_error_o   // with valid_o: the stop bit was low
);

  if (ClksPerBit < 4 || ClksPerBit > 65535) begin : g_bad_clks
    $error("tpu_uart_rx: ClksPerBit must be in 4..65535");
  end

  localparam int unsigned CountWidth = 16;
  localparam logic [CountWidth-1:0] FullBit = CountWidth'(ClksPerBit - 1);
  localparam logic [CountWidth-1:0] HalfBit = CountWidth'(ClksPerBit / 2 - 1);

  typedef enum logic [1:0] {Idle, Start, Data, Stop} state_e;

  state_e                state_d, state_q;
  logic [1:0]            sync_d, sync_q;
  logic [CountWidth-1:0] count_d, count_q;
  logic [2:0]            bit_d, bit_q;
  logic [7:0]            shift_d, shift_q;
  logic                  valid_d, valid_q, error_d, error_q;
  logic                  line, sample;

  always_comb begin
    sync_d  = {sync_q[0], rx_i};
    line    = sync_q[1];
    sample  = count_q == '0;
    state_d = state_q;
    count_d = sample ? FullBit : count_q - 1'b1;
    bit_d   = bit_q;
    shift_d = shift_q;
    valid_d = 1'b0;
    error_d = error_q;
    unique case (state_q)
      Idle: begin
        count_d = HalfBit;
        if (!line) state_d = Start;
      end
      Start: if (sample) begin
        bit_d   = '0;
        state_d = line ? Idle : Data;
      end
      Data: if (sample) begin
        shift_d = {line, shift_q[7:1]};
        bit_d   = bit_q + 1'b1;
        if (bit_q == 3'd7) state_d = Stop;
      end
      Stop: if (sample) begin
        valid_d = 1'b1;
        error_d = !line;
        state_d = Idle;
      end
      default: state_d = Idle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= Idle;
      sync_q  <= 2'b11;
      count_q <= '0;
      bit_q   <= '0;
      shift_q <= '0;
      valid_q <= 1'b0;
      error_q <= 1'b0;
    end else begin
      state_q <= state_d;
      sync_q  <= sync_d;
      count_q <= count_d;
      bit_q   <= bit_d;
      shift_q <= shift_d;
      valid_q <= valid_d;
      error_q <= error_d;
    end
  end

  assign valid_o       = valid_q;
  assign data_o        = shift_q;
  assign frame_error_o = error_q;

  `TPU_ASSERT_NEXT(a_valid_one_cycle, valid_q, !valid_q,
                   "a character is delivered for more than one cycle")

endmodule
