// tpu_board's own files: the host link, the board memory (an AXI4 RAM) and the board. A build
// lists the core before them (rtl/top/top.f, or one core and rtl/top/shell.f).
-F ../link/link.f
tpu_axi_ram.sv
tpu_board.sv
