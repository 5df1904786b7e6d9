// The UART host link: its generated package, receiver, transmitter and the frame bridge.
-F ../isa/isa.f
tpu_link_pkg.sv
tpu_uart_rx.sv
tpu_uart_tx.sv
tpu_link_bridge.sv
