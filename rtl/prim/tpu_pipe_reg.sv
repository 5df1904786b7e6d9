// One optional pipeline register with a clock enable. With Enable = 0 it is a
// wire, which is how the arithmetic units turn their stage boundaries on and off.
module tpu_pipe_reg #(
  parameter int unsigned Width  = 1,
  parameter bit          Enable = 1'b1
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             en_i,
  input  logic [Width-1:0] data_i,
  output logic [Width-1:0] data_o
);

  if (Width < 1) begin : g_bad_width
    $error("tpu_pipe_reg: Width must be >= 1");
  end

  if (Enable) begin : g_reg
    logic [Width-1:0] data_d, data_q;

    always_comb begin
      data_d = data_q;
      if (en_i) data_d = data_i;
    end

    always_ff @(posedge clk_i or negedge rst_ni) begin
      if (!rst_ni) data_q <= '0;
      else         data_q <= data_d;
    end

    assign data_o = data_q;
  end else begin : g_wire
    assign data_o = data_i;
    logic unused_ctrl;
    assign unused_ctrl = ^{clk_i, rst_ni, en_i};
  end

endmodule
