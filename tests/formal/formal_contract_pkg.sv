// What the numerics contract (docs/numerics.md) changes about IEEE 754, as functions
// that wrap SymFPU's IEEE reference circuits in the equivalence miters: the operands'
// flush (N-IN), the flush of results below 2^-126 and the canonical NaN (N-MUL, N-ADD).
// Nothing else of the contract is here: the rounding itself is SymFPU's.
package formal_contract_pkg;

  // N-IN: a subnormal operand becomes a zero of its sign. A NaN's payload is left to the
  // reference, whose NaN results are canonicalised on the way out.
  function automatic logic [31:0] flush_in(input logic [31:0] v);
    flush_in = v[30:23] == 8'h00 ? {v[31], 31'h0} : v;
  endfunction

  // A bf16 operand as the fp32 of the same value (exact), flushed.
  function automatic logic [31:0] widen(input logic [15:0] v);
    widen = flush_in({v, 16'h0});
  endfunction

  // A result: any NaN is the canonical one; a subnormal result is a zero of its sign.
  function automatic logic [31:0] canonical_out(input logic [31:0] o);
    if (o[30:23] == 8'hFF && o[22:0] != 23'h0) canonical_out = 32'h7FC0_0000;
    else if (o[30:23] == 8'h00)                canonical_out = {o[31], 31'h0};
    else                                       canonical_out = o;
  endfunction

endpackage
