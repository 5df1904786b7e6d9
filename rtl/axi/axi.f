// AXI4 master engines of the array core's DMA: burst logic, read and write engines, and the
// read multiplexer.
-F ../prim/prim.f
tpu_axi_bursts.sv
tpu_axi_reader.sv
tpu_axi_writer.sv
tpu_axi_rd_mux.sv
