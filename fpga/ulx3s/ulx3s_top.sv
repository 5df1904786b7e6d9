// ULX3S (Lattice ECP5 LFE5U-85F): the TPU board (rtl/board/tpu_board.sv) clocked from
// the 25 MHz oscillator through the PLL (ulx3s_pll, which the flow generates
// for ClockHz with ecppll), talking to the host through the FTDI UART.
//
// LEDs: 0 heartbeat, 1 a request arriving, 2 a reply going out, 3 the core's
// interrupt (DONE or ERROR with IRQ_ENABLE), 7 PLL locked. FIRE1 resets.
module ulx3s_top #(
  parameter int unsigned Sequential   = 0,
  parameter int unsigned CounterWidth = 64,
  parameter int unsigned Dim          = 4,
  parameter int unsigned MulStages    = 1,
  parameter int unsigned AddStages    = 2,
  parameter int unsigned UbDepth      = 2048,
  parameter int unsigned AccDepth     = 1024,
  parameter int unsigned WeightTiles  = 2,
  parameter int unsigned BusBytes     = 8,
  parameter int unsigned ActLanes     = 1,
  parameter int unsigned QueueDepth   = 2,
  parameter int unsigned ReadBufBeats = 16,
  parameter int unsigned Int8         = 0,
  parameter int unsigned Float        = 1,
  parameter int unsigned MemBytes     = 131072,
  parameter int unsigned ClockHz      = 50_000_000,  // what ulx3s_pll makes of 25 MHz
  parameter int unsigned Baud         = 1_000_000
) (
  input  logic       clk_25mhz,
  input  logic       ftdi_txd,    // the host's transmit line, into the FPGA
  output logic       ftdi_rxd,    // to the host
  input  logic       btn_fire1,   // high while pressed
  output logic [7:0] led,
  output logic       wifi_gpio0   // held high: the ESP32 leaves the board alone
);

  logic clk, locked, rst_n, irq, rx_active, tx_active;

  ulx3s_pll u_pll (
    .clkin  (clk_25mhz),
    .clkout0(clk),
    .locked
  );

  tpu_reset_sync u_reset (
    .clk_i (clk),
    .rst_ni(locked && !btn_fire1),
    .rst_no(rst_n)
  );

  tpu_board #(
    .Sequential(Sequential), .CounterWidth(CounterWidth), .Dim(Dim), .MulStages(MulStages),
    .AddStages(AddStages), .UbDepth(UbDepth), .AccDepth(AccDepth), .WeightTiles(WeightTiles),
    .BusBytes(BusBytes), .ActLanes(ActLanes), .QueueDepth(QueueDepth),
    .ReadBufBeats(ReadBufBeats), .Int8(Int8), .Float(Float), .MemBytes(MemBytes),
    .ClockHz(ClockHz), .Baud(Baud)
  ) u_board (
    .clk_i      (clk),
    .rst_ni     (rst_n),
    .uart_rx_i  (ftdi_txd),
    .uart_tx_o  (ftdi_rxd),
    .irq_o      (irq),
    .rx_active_o(rx_active),
    .tx_active_o(tx_active)
  );

  // About 50 ms per activity flash, about a second per heartbeat.
  localparam int unsigned FlashBits = $clog2(ClockHz / 20);
  localparam int unsigned BeatBits  = $clog2(ClockHz);

  logic                rx_led, tx_led;
  logic [BeatBits-1:0] beat_d, beat_q;

  tpu_pulse_stretch #(.CountBits(FlashBits)) u_rx_led (
    .clk_i(clk), .rst_ni(rst_n), .pulse_i(rx_active), .stretched_o(rx_led)
  );
  tpu_pulse_stretch #(.CountBits(FlashBits)) u_tx_led (
    .clk_i(clk), .rst_ni(rst_n), .pulse_i(tx_active), .stretched_o(tx_led)
  );

  assign beat_d = beat_q + 1'b1;
  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) beat_q <= '0;
    else        beat_q <= beat_d;
  end

  assign led        = {locked, 3'b000, irq, tx_led, rx_led, beat_q[BeatBits-1]};
  assign wifi_gpio0 = 1'b1;

endmodule
