rtl/tpu_fifo.sv
rtl/tpu_ram_sdp.sv
rtl/tpu_link_pkg.sv
rtl/tpu_uart_rx.sv
rtl/tpu_uart_tx.sv
rtl/tpu_link_bridge.sv
rtl/tpu_axi_ram.sv
rtl/tpu_board.sv
