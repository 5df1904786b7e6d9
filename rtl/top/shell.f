// tpu_top's shell alone: registers, counters and the AXI4 ports around a core. A build lists
// the core it needs first (rtl/core/core.f, rtl/seq/seq.f); top.f lists both.
-F ../isa/isa.f
tpu_counter_ram.sv
tpu_regs.sv
tpu_top.sv
