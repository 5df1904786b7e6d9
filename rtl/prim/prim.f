// Primitives: registers, delays, FIFOs, RAMs, reset copies and synchronisers, and the
// package of shared constants and helpers.
tpu_pkg.sv
tpu_pipe_reg.sv
tpu_delay.sv
tpu_fifo.sv
tpu_ram_sdp.sv
tpu_ram_fifo.sv
tpu_reset_copy.sv
tpu_flop_copy.sv
tpu_reset_sync.sv
tpu_pulse_stretch.sv
