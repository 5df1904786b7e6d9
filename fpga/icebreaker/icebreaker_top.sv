// iCEBreaker (Lattice iCE40UP5K): the TPU board (rtl/board/tpu_board.sv) on the 12 MHz oscillator,
// talking to the host through the FT2232H's second channel as a UART.
//
// LEDs: green a request arriving or a reply going out, red the core's interrupt (DONE or ERROR
// with IRQ_ENABLE). The user button resets.
module icebreaker_top #(
  parameter int unsigned Sequential   = 1,
  parameter int unsigned CounterWidth = 40,
  parameter int unsigned Dim          = 1,
  parameter int unsigned MulStages    = 1,
  parameter int unsigned AddStages    = 1,
  parameter int unsigned UbDepth      = 256,
  parameter int unsigned AccDepth     = 256,
  parameter int unsigned WeightTiles  = 2,
  parameter int unsigned BusBytes     = 4,
  parameter int unsigned ActLanes     = 1,
  parameter int unsigned QueueDepth   = 1,
  parameter int unsigned ReadBufBeats = 4,
  parameter int unsigned Int8         = 0,
  parameter int unsigned Float        = 1,
  parameter int unsigned MemBytes     = 8192,
  parameter int unsigned ClockHz      = 12_000_000,  // the oscillator's, without a PLL
  parameter int unsigned Baud         = 1_000_000
) (
  input  logic CLK,
  input  logic RX,      // from the host
  output logic TX,      // to the host
  input  logic BTN_N,   // low while pressed
  output logic LEDR_N,
  output logic LEDG_N
);

  logic rst_n, irq, rx_active, tx_active, activity;

  tpu_reset_sync u_reset (
    .clk_i (CLK),
    .rst_ni(BTN_N),
    .rst_no(rst_n)
  );

  tpu_board #(
    .Sequential(Sequential), .CounterWidth(CounterWidth), .Dim(Dim), .MulStages(MulStages),
    .AddStages(AddStages), .UbDepth(UbDepth), .AccDepth(AccDepth), .WeightTiles(WeightTiles),
    .BusBytes(BusBytes), .ActLanes(ActLanes), .QueueDepth(QueueDepth),
    .ReadBufBeats(ReadBufBeats), .Int8(Int8), .Float(Float), .MemBytes(MemBytes),
    .ClockHz(ClockHz), .Baud(Baud)
  ) u_board (
    .clk_i      (CLK),
    .rst_ni     (rst_n),
    .uart_rx_i  (RX),
    .uart_tx_o  (TX),
    .irq_o      (irq),
    .rx_active_o(rx_active),
    .tx_active_o(tx_active)
  );

  // About 50 ms per activity flash.
  tpu_pulse_stretch #(.CountBits($clog2(ClockHz / 20))) u_activity (
    .clk_i(CLK), .rst_ni(rst_n), .pulse_i(rx_active || tx_active), .stretched_o(activity)
  );

  assign LEDG_N = !activity;
  assign LEDR_N = !irq;

endmodule
