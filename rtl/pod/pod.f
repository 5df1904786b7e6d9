// The inter-chip links of a pod (docs/pod.md): the sending and the receiving end of one
// link, which the array core's collective unit (rtl/core/tpu_collective_unit.sv) drives.
-F ../prim/prim.f
tpu_link_tx.sv
tpu_link_rx.sv
