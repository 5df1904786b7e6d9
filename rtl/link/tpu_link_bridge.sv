// The board end of the UART host link (docs/link.md, rtl/defs/link.toml): takes
// request frames from the UART receiver, carries them out on the core's
// registers (an AXI4-Lite master) or on board memory (a byte port), and sends
// the reply frame to the UART transmitter.
//
// A request is checked whole before anything is done: the payload waits in a
// buffer until the CRC has matched, so a corrupt or truncated request has no
// effect and gets an error reply. A request that stops arriving for
// FrameTimeoutBits bit times is answered with TIMEOUT. Bytes that arrive while
// a request is carried out or answered are dropped: the host waits for each
// reply before it sends again, so only the rest of a broken frame is lost.
`include "tpu_assert.svh"

module tpu_link_bridge #(
  parameter int unsigned MemBytes   = 131072,      // board memory, a power of two, 256..2^24
  parameter int unsigned ClksPerBit = 50,          // of the UART, for the request timeout
  parameter int unsigned ClockHz    = 50_000_000,  // for the INFO record
  parameter int unsigned Baud       = 1_000_000,   // for the INFO record
  localparam int unsigned MemAddrWidth = $clog2(MemBytes),
  localparam int unsigned RegAddrWidth = tpu_regs_pkg::RegAddrWidth
) (
  input  logic                    clk_i,
  input  logic                    rst_ni,

  // From the UART receiver.
  input  logic                    rx_valid_i,
  input  logic [7:0]              rx_data_i,
  input  logic                    rx_error_i,

  // To the UART transmitter.
  output logic                    tx_valid_o,
  input  logic                    tx_ready_i,
  output logic [7:0]              tx_data_o,

  // AXI4-Lite master: the core's registers.
  output logic [RegAddrWidth-1:0] m_axil_awaddr,
  output logic                    m_axil_awvalid,
  input  logic                    m_axil_awready,
  output logic [31:0]             m_axil_wdata,
  output logic [3:0]              m_axil_wstrb,
  output logic                    m_axil_wvalid,
  input  logic                    m_axil_wready,
  input  logic [1:0]              m_axil_bresp,
  input  logic                    m_axil_bvalid,
  output logic                    m_axil_bready,
  output logic [RegAddrWidth-1:0] m_axil_araddr,
  output logic                    m_axil_arvalid,
  input  logic                    m_axil_arready,
  input  logic [31:0]             m_axil_rdata,
  input  logic [1:0]              m_axil_rresp,
  input  logic                    m_axil_rvalid,
  output logic                    m_axil_rready,

  // Board memory, one byte per access: a request is held until granted; read
  // data come back later with mem_rvalid_i.
  output logic                    mem_req_o,
  output logic                    mem_we_o,
  output logic [MemAddrWidth-1:0] mem_addr_o,
  output logic [7:0]              mem_wdata_o,
  input  logic                    mem_gnt_i,
  input  logic                    mem_rvalid_i,
  input  logic [7:0]              mem_rdata_i
);

  if (MemBytes < 256 || MemBytes > (1 << 24) || (MemBytes & (MemBytes - 1)) != 0)
  begin : g_bad_mem
    $error("tpu_link_bridge: MemBytes must be a power of two in 256..2^24");
  end
  if (ClksPerBit < 4 || ClksPerBit > 65535) begin : g_bad_clks
    $error("tpu_link_bridge: ClksPerBit must be in 4..65535");
  end
  if ((tpu_link_pkg::MaxPayload & (tpu_link_pkg::MaxPayload - 1)) != 0) begin : g_bad_payload
    $error("tpu_link_bridge: the protocol's MaxPayload must be a power of two");
  end

  localparam int unsigned MaxPayload   = tpu_link_pkg::MaxPayload;
  localparam int unsigned BufAddrWidth = $clog2(MaxPayload);
  localparam int unsigned TimeoutCycles = tpu_link_pkg::FrameTimeoutBits * ClksPerBit;
  localparam int unsigned IdleWidth    = $clog2(TimeoutCycles + 1);
  localparam int unsigned HeaderBytes  = 8;   // command, tag, address, length
  localparam int unsigned ReplyHeader  = 5;   // sync, status, tag, length
  localparam int unsigned InfoBits     = tpu_link_pkg::InfoBytes * 8;
  localparam logic [IdleWidth-1:0] LastIdle = IdleWidth'(TimeoutCycles - 1);

  // The INFO record, each field at its offset.
  localparam logic [InfoBits-1:0] InfoRecord =
      (InfoBits'(tpu_link_pkg::Version)    << (8 * tpu_link_pkg::InfoVersionOffset))    |
      (InfoBits'(tpu_link_pkg::MaxPayload) << (8 * tpu_link_pkg::InfoMaxPayloadOffset)) |
      (InfoBits'(MemBytes)                 << (8 * tpu_link_pkg::InfoMemBytesOffset))   |
      (InfoBits'(ClockHz)                  << (8 * tpu_link_pkg::InfoClockHzOffset))    |
      (InfoBits'(Baud)                     << (8 * tpu_link_pkg::InfoBaudOffset));

  // CRC-32 of IEEE 802.3, reflected (zlib's crc32): the register starts at all
  // ones and is sent inverted, least significant byte first. Run on over a
  // frame and its own CRC, the register ends at the CRC's residue whatever the
  // frame, so a request's CRC is checked without storing it.
  localparam logic [31:0] CrcResidue = 32'hDEBB_20E3;
  function automatic logic [31:0] crc32_byte(input logic [31:0] crc, input logic [7:0] data);
    logic [31:0] c;
    c = crc ^ {24'h0, data};
    for (int i = 0; i < 8; i++) c = c[0] ? ((c >> 1) ^ 32'hEDB8_8320) : (c >> 1);
    crc32_byte = c;
  endfunction

  typedef enum logic [3:0] {
    Hunt,      // waiting for the request sync byte
    Header,    // command, tag, address, length
    Payload,
    Crc,
    Check,     // the request is complete: decide what to do
    RegRead,   // AXI4-Lite read in flight
    RegWrite,  // AXI4-Lite write in flight
    MemWrite,  // payload buffer to board memory
    Reply
  } state_e;

  state_e             state_d, state_q;
  logic [63:0]        header_d, header_q;      // shifted in: byte 0 ends at [7:0]
  logic [15:0]        count_d, count_q;        // byte index within the current part
  logic [31:0]        word_d, word_q;          // first payload bytes; READ_REG data
  logic [31:0]        crc_d, crc_q;
  logic               bad_char_d, bad_char_q;
  logic [IdleWidth-1:0] idle_d, idle_q;
  logic [7:0]         status_d, status_q;
  logic [15:0]        reply_len_d, reply_len_q;
  logic [MemAddrWidth-1:0] mem_ptr_d, mem_ptr_q;
  logic               waiting_d, waiting_q;    // a memory access granted, or a buffer read issued
  logic               tx_valid_d, tx_valid_q;
  logic [7:0]         tx_data_d, tx_data_q;
  logic               aw_pending_d, aw_pending_q, w_pending_d, w_pending_q;
  logic               ar_pending_d, ar_pending_q;

  logic [7:0]         command, tag;
  logic [31:0]        address;
  logic [15:0]        length;
  logic               buf_wr, buf_rd;
  logic [7:0]         buf_rdata;
  logic [32:0]        mem_end;
  logic [15:0]        mem_count;
  logic               known_command, length_ok, address_ok;
  logic [15:0]        reply_bytes;
  logic [3:0]         payload_byte;            // of INFO and READ_REG replies
  logic               tx_take;
  logic [31:0]        crc_next;                // crc_q after the byte received or sent

  assign command = header_q[7:0];
  assign tag     = header_q[15:8];
  assign address = header_q[47:16];
  assign length  = header_q[63:48];

  // READ_MEM's byte count is its payload; WRITE_MEM's is the payload's length.
  assign mem_count = (command == tpu_link_pkg::CmdReadMem) ? word_q[15:0] : length;
  assign mem_end   = {1'b0, address} + {17'h0, mem_count};

  always_comb begin
    known_command = 1'b1;
    length_ok     = 1'b0;
    address_ok    = 1'b0;
    unique case (command)
      tpu_link_pkg::CmdInfo: begin
        length_ok  = length == 16'd0;
        address_ok = 1'b1;
      end
      tpu_link_pkg::CmdReadReg, tpu_link_pkg::CmdWriteReg: begin
        length_ok  = length == ((command == tpu_link_pkg::CmdWriteReg) ? 16'd4 : 16'd0);
        address_ok = address[1:0] == 2'b00 && address[31:RegAddrWidth] == '0;
      end
      tpu_link_pkg::CmdReadMem, tpu_link_pkg::CmdWriteMem: begin
        length_ok  = (command == tpu_link_pkg::CmdReadMem) ? length == 16'd2 : 1'b1;
        // At most a power of two: no bit above it, or exactly it (no carry chain).
        length_ok  = length_ok && mem_count != '0 &&
                     (mem_count[15:BufAddrWidth] == '0 || mem_count == 16'(MaxPayload));
        address_ok = mem_end[32:MemAddrWidth] == '0 || mem_end == 33'(MemBytes);
      end
      default: known_command = 1'b0;
    endcase
  end

  // ---------------------------------------------------------------------------
  // The payload buffer
  // ---------------------------------------------------------------------------
  tpu_ram_sdp #(.Width(8), .Depth(MaxPayload)) u_payload (
    .clk_i,
    .wr_en_i  (buf_wr),
    .wr_addr_i(count_q[BufAddrWidth-1:0]),
    .wr_data_i(rx_data_i),
    .rd_en_i  (buf_rd),
    .rd_addr_i(count_q[BufAddrWidth-1:0]),
    .rd_data_o(buf_rdata)
  );

  // ---------------------------------------------------------------------------
  // The frame state machine
  // ---------------------------------------------------------------------------
  assign tx_take       = tx_valid_q && tx_ready_i;
  // One CRC network for both directions: a request is received whole before its reply is sent.
  assign crc_next      = crc32_byte(crc_q, (state_q == Reply) ? tx_data_q : rx_data_i);
  assign reply_bytes   = 16'(ReplyHeader) + reply_len_q;
  assign payload_byte  = 4'(count_q - 16'(ReplyHeader));

  // Memory requests depend on the state alone, not on the grant (no combinational loop through
  // the memory's arbiter): WRITE_MEM writes each byte once the buffer has read it; READ_MEM
  // fetches each payload byte of the reply when the transmitter register is free.
  always_comb begin
    mem_we_o  = state_q == MemWrite;
    mem_req_o = 1'b0;
    if (state_q == MemWrite) mem_req_o = waiting_q;
    if (state_q == Reply) begin
      mem_req_o = !tx_valid_q && !waiting_q && command == tpu_link_pkg::CmdReadMem &&
                  count_q >= 16'(ReplyHeader) && count_q < reply_bytes;
    end
  end

  always_comb begin
    state_d      = state_q;
    header_d     = header_q;
    count_d      = count_q;
    word_d       = word_q;
    crc_d        = crc_q;
    bad_char_d   = bad_char_q;
    idle_d       = '0;
    status_d     = status_q;
    reply_len_d  = reply_len_q;
    mem_ptr_d    = mem_ptr_q;
    waiting_d    = waiting_q;
    tx_valid_d   = tx_valid_q && !tx_ready_i;
    tx_data_d    = tx_data_q;
    aw_pending_d = aw_pending_q && !m_axil_awready;
    w_pending_d  = w_pending_q && !m_axil_wready;
    ar_pending_d = ar_pending_q && !m_axil_arready;
    buf_wr       = 1'b0;
    buf_rd       = 1'b0;

    unique case (state_q)
      Hunt: begin
        count_d    = '0;
        crc_d      = '1;
        bad_char_d = 1'b0;
        word_d     = '0;
        header_d   = '0;
        if (rx_valid_i && !rx_error_i && rx_data_i == tpu_link_pkg::RequestSync) state_d = Header;
      end

      Header, Payload, Crc: begin
        idle_d = idle_q + 1'b1;
        if (rx_valid_i) begin
          idle_d     = '0;
          bad_char_d = bad_char_q || rx_error_i;
          count_d    = count_q + 1'b1;
          crc_d      = crc_next;
          unique case (state_q)
            Header: begin
              header_d = {rx_data_i, header_q[63:8]};
              if (count_q == 16'(HeaderBytes - 1)) begin
                count_d = '0;
                // header_d holds the whole header now; rx_data_i is the length's high byte.
                state_d = ({rx_data_i, header_q[63:56]} == '0) ? Crc : Payload;
              end
            end
            Payload: begin
              buf_wr = count_q[15:BufAddrWidth] == '0;
              if (count_q[15:2] == '0) word_d[8*count_q[1:0] +: 8] = rx_data_i;
              if (count_q == length - 1'b1) begin
                count_d = '0;
                state_d = Crc;
              end
            end
            default: begin  // Crc
              if (count_q == 16'd3) state_d = Check;
            end
          endcase
        end else if (idle_q == LastIdle) begin
          // An incomplete header names no command and no tag: both read 0.
          if (state_q == Header) header_d = '0;
          status_d    = tpu_link_pkg::StatusTimeout;
          reply_len_d = '0;
          count_d     = '0;
          crc_d       = '1;
          state_d     = Reply;
        end
      end

      Check: begin
        count_d     = '0;
        mem_ptr_d   = address[MemAddrWidth-1:0];
        waiting_d   = 1'b0;
        reply_len_d = '0;
        status_d    = tpu_link_pkg::StatusOk;
        state_d     = Reply;
        if (crc_q != CrcResidue || bad_char_q) status_d = tpu_link_pkg::StatusCorrupt;
        else if (!known_command)              status_d = tpu_link_pkg::StatusBadCommand;
        else if (!length_ok)                  status_d = tpu_link_pkg::StatusBadLength;
        else if (!address_ok)                 status_d = tpu_link_pkg::StatusBadAddress;
        else begin
          unique case (command)
            tpu_link_pkg::CmdInfo:     reply_len_d = 16'(tpu_link_pkg::InfoBytes);
            tpu_link_pkg::CmdReadReg: begin
              reply_len_d  = 16'd4;
              ar_pending_d = 1'b1;
              state_d      = RegRead;
            end
            tpu_link_pkg::CmdWriteReg: begin
              aw_pending_d = 1'b1;
              w_pending_d  = 1'b1;
              state_d      = RegWrite;
            end
            tpu_link_pkg::CmdReadMem:  reply_len_d = mem_count;
            default:                   state_d = MemWrite;  // WRITE_MEM
          endcase
        end
        crc_d = '1;  // the reply's
      end

      RegRead: if (!ar_pending_q && m_axil_rvalid) begin
        word_d  = m_axil_rdata;
        state_d = Reply;
        if (m_axil_rresp != 2'b00) begin
          status_d    = tpu_link_pkg::StatusBusError;
          reply_len_d = '0;
        end
      end

      RegWrite: if (!aw_pending_q && !w_pending_q && m_axil_bvalid) begin
        state_d = Reply;
        if (m_axil_bresp != 2'b00) status_d = tpu_link_pkg::StatusBusError;
      end

      // Each byte: read it from the buffer, then write it until granted.
      MemWrite: begin
        if (!waiting_q) begin
          buf_rd    = 1'b1;
          waiting_d = 1'b1;
        end else begin
          if (mem_gnt_i) begin
            waiting_d = 1'b0;
            mem_ptr_d = mem_ptr_q + 1'b1;
            count_d   = count_q + 1'b1;
            if (count_q == length - 1'b1) begin
              count_d = '0;
              state_d = Reply;
            end
          end
        end
      end

      // Bytes 0 .. reply_bytes - 1, then the four CRC bytes, which shift out of
      // crc_q. A byte is loaded once the previous one has gone; READ_MEM's are
      // fetched first.
      Reply: begin
        if (tx_take) begin
          if (count_q >= reply_bytes)  crc_d = crc_q >> 8;
          else if (count_q != '0)      crc_d = crc_next;
          count_d = count_q + 1'b1;
          if (count_q == reply_bytes + 16'd3) state_d = Hunt;
        end else if (!tx_valid_q) begin
          tx_valid_d = 1'b1;
          if (count_q == 16'd0)      tx_data_d = tpu_link_pkg::ReplySync;
          else if (count_q == 16'd1) tx_data_d = status_q;
          else if (count_q == 16'd2) tx_data_d = tag;
          else if (count_q == 16'd3) tx_data_d = reply_len_q[7:0];
          else if (count_q == 16'd4) tx_data_d = reply_len_q[15:8];
          else if (count_q >= reply_bytes) begin
            tx_data_d = ~crc_q[7:0];
          end else if (command == tpu_link_pkg::CmdInfo) begin
            tx_data_d = InfoRecord[8*payload_byte +: 8];
          end else if (command == tpu_link_pkg::CmdReadReg) begin
            tx_data_d = word_q[8*payload_byte[1:0] +: 8];
          end else begin  // READ_MEM: fetch the byte, then send it
            tx_valid_d = 1'b0;
            if (!waiting_q) begin
              if (mem_gnt_i) waiting_d = 1'b1;
            end else if (mem_rvalid_i) begin
              tx_valid_d = 1'b1;
              tx_data_d  = mem_rdata_i;
              waiting_d  = 1'b0;
              mem_ptr_d  = mem_ptr_q + 1'b1;
            end
          end
        end
      end

      default: state_d = Hunt;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q      <= Hunt;
      header_q     <= '0;
      count_q      <= '0;
      word_q       <= '0;
      crc_q        <= '1;
      bad_char_q   <= 1'b0;
      idle_q       <= '0;
      status_q     <= '0;
      reply_len_q  <= '0;
      mem_ptr_q    <= '0;
      waiting_q    <= 1'b0;
      tx_valid_q   <= 1'b0;
      tx_data_q    <= '0;
      aw_pending_q <= 1'b0;
      w_pending_q  <= 1'b0;
      ar_pending_q <= 1'b0;
    end else begin
      state_q      <= state_d;
      header_q     <= header_d;
      count_q      <= count_d;
      word_q       <= word_d;
      crc_q        <= crc_d;
      bad_char_q   <= bad_char_d;
      idle_q       <= idle_d;
      status_q     <= status_d;
      reply_len_q  <= reply_len_d;
      mem_ptr_q    <= mem_ptr_d;
      waiting_q    <= waiting_d;
      tx_valid_q   <= tx_valid_d;
      tx_data_q    <= tx_data_d;
      aw_pending_q <= aw_pending_d;
      w_pending_q  <= w_pending_d;
      ar_pending_q <= ar_pending_d;
    end
  end

  assign tx_valid_o  = tx_valid_q;
  assign tx_data_o   = tx_data_q;
  assign mem_addr_o  = mem_ptr_q;
  assign mem_wdata_o = buf_rdata;

  assign m_axil_awaddr  = address[RegAddrWidth-1:0];
  assign m_axil_awvalid = aw_pending_q;
  assign m_axil_wdata   = word_q;
  assign m_axil_wstrb   = 4'hF;
  assign m_axil_wvalid  = w_pending_q;
  assign m_axil_bready  = state_q == RegWrite && !aw_pending_q && !w_pending_q;
  assign m_axil_araddr  = address[RegAddrWidth-1:0];
  assign m_axil_arvalid = ar_pending_q;
  assign m_axil_rready  = state_q == RegRead && !ar_pending_q;

  `TPU_ASSERT_NEXT(a_tx_held, tx_valid_o && !tx_ready_i, tx_valid_o && $stable(tx_data_o),
                   "reply byte withdrawn or changed before it was taken")
  `TPU_ASSERT_NEXT(a_mem_held, mem_req_o && !mem_gnt_i,
                   mem_req_o && $stable({mem_we_o, mem_addr_o, mem_wdata_o}),
                   "memory request withdrawn or changed before its grant")
  `TPU_ASSERT_NEXT(a_ar_held, m_axil_arvalid && !m_axil_arready,
                   m_axil_arvalid && $stable(m_axil_araddr), "AR withdrawn before it was taken")
  `TPU_ASSERT_NEXT(a_aw_held, m_axil_awvalid && !m_axil_awready,
                   m_axil_awvalid && $stable(m_axil_awaddr), "AW withdrawn before it was taken")
  `TPU_ASSERT_NEXT(a_w_held, m_axil_wvalid && !m_axil_wready,
                   m_axil_wvalid && $stable(m_axil_wdata), "W withdrawn before it was taken")
  `TPU_ASSERT(a_mem_for_mem_commands, !mem_req_o || (state_q == MemWrite || state_q == Reply),
              "memory access outside a WRITE_MEM or READ_MEM")
  `TPU_ASSERT(a_one_axil_access, !(m_axil_arvalid && (m_axil_awvalid || m_axil_wvalid)),
              "a register read and write at once")

  // ---------------------------------------------------------------------------
  // Never left waiting (checks only; tests/formal/formal_link_bridge_harness.sv proves them
  // for every byte sequence and every behaviour of the partners)
  // ---------------------------------------------------------------------------
  // Whatever bytes arrive, the bridge gets back to Hunt. A request that stops arriving is
  // answered with TIMEOUT after TimeoutCycles quiet cycles; every other state moves on as soon
  // as its partner (the UART transmitter, the core's registers, board memory) has answered.
  // steps_to_hunt counts the cycles of its own the bridge still needs when no byte arrives:
  // one for each quiet cycle of a request, each reply byte loaded and each taken, each READ_MEM
  // byte granted and returned, each AXI4-Lite handshake, each WRITE_MEM byte read and granted.
  // It falls in every cycle no partner holds the bridge up and never rises while one does, so
  // from a request's last byte the bridge is back in Hunt within ToHunt cycles of its own:
  // the TIMEOUT reply (BareReplySteps) after TimeoutCycles, or a full READ_MEM reply.
  localparam int unsigned BareReplySteps = 2 * (ReplyHeader + 4);            // load, take
  localparam int unsigned MostReplySteps = 3 * MaxPayload + BareReplySteps;  // READ_MEM's
  localparam int unsigned ToHunt = (TimeoutCycles + BareReplySteps > MostReplySteps + 1)
                                   ? TimeoutCycles + BareReplySteps : MostReplySteps + 1;
  // Room for a counter's run as well, and for the 16-bit counts whole.
  localparam int unsigned StepWidth = ($clog2(ToHunt + 1) + 1 > 17) ? $clog2(ToHunt + 1) + 1 : 17;
  typedef logic [StepWidth-1:0] steps_t;

  // The reply from byte `index` on, that byte loaded (or, READ_MEM's, being fetched) or not.
  function automatic steps_t reply_steps(input logic [15:0] index, input logic loaded,
                                         input logic fetching, input logic [15:0] len,
                                         input logic read_mem);
    steps_t payload_end, after, steps;
    payload_end = steps_t'(ReplyHeader) + steps_t'(len);
    after       = steps_t'(index) + 1'b1;
    steps       = (payload_end + steps_t'(3) - steps_t'(index)) << 1;  // the bytes after it
    if (read_mem && after < payload_end)  // and READ_MEM's fetches of them
      steps = steps + payload_end - ((after > steps_t'(ReplyHeader)) ? after
                                                                     : steps_t'(ReplyHeader));
    if (loaded) steps = steps + steps_t'(1);
    else if (read_mem && index >= 16'(ReplyHeader) && steps_t'(index) < payload_end)
      steps = steps + (fetching ? steps_t'(2) : steps_t'(3));
    else steps = steps + steps_t'(2);
    reply_steps = steps;
  endfunction

  // From the state machine's registers, passed in, so that a check can pass their $past: in
  // Yosys the $past of a function's result would only see the cycles the check is made in.
  function automatic steps_t steps_to_hunt(
      input state_e state, input logic [IdleWidth-1:0] idle, input logic [15:0] index,
      input logic waiting, input logic loaded, input logic pending, input logic [15:0] len,
      input logic read_mem, input logic [15:0] request_len);
    steps_t steps, reply;
    reply = reply_steps(16'd0, 1'b0, 1'b0, len, read_mem);
    case (state)
      Hunt:                 steps = '0;
      Header, Payload, Crc: steps = steps_t'(TimeoutCycles + BareReplySteps) - steps_t'(idle);
      Check:                steps = steps_t'(MostReplySteps + 1);
      RegRead, RegWrite:    steps = reply + (pending ? steps_t'(2) : steps_t'(1));
      MemWrite:             steps = reply - steps_t'(waiting) +
                                    ((steps_t'(request_len) - steps_t'(index)) << 1);
      Reply:                steps = reply_steps(index, loaded, waiting, len, read_mem);
      default:              steps = steps_t'(1);
    endcase
    steps_to_hunt = steps;
  endfunction

  // Now (the state passed in: Yosys takes a function of no arguments for a constant one).
  function automatic steps_t steps_now(input state_e state);
    steps_now = steps_to_hunt(state, idle_q, count_q, waiting_q, tx_valid_q,
                              ar_pending_q || aw_pending_q || w_pending_q, reply_len_q,
                              command == tpu_link_pkg::CmdReadMem, length);
  endfunction

  // Held up: a request not yet taken or an answer not yet come, at any port.
  function automatic logic held_up();
    held_up = (tx_valid_o && !tx_ready_i) || (mem_req_o && !mem_gnt_i) ||
              (state_q == Reply && waiting_q && !mem_rvalid_i) ||
              (m_axil_arvalid && !m_axil_arready) || (m_axil_rready && !m_axil_rvalid) ||
              (m_axil_awvalid && !m_axil_awready) || (m_axil_wvalid && !m_axil_wready) ||
              (m_axil_bready && !m_axil_bvalid);
  endfunction

  function automatic logic receiving();
    receiving = state_q == Header || state_q == Payload || state_q == Crc;
  endfunction

  `TPU_ASSERT_WITHIN(a_frame_timeout, receiving() && !rx_valid_i, TimeoutCycles,
                     "a request that stopped arriving left the bridge waiting")
  `TPU_ASSERT(a_to_hunt_bound, state_q == Hunt ||  // 1 to ToHunt
              steps_t'(steps_now(state_q) - 1'b1) < steps_t'(ToHunt),
              "more steps to Hunt than the bound")
  `TPU_ASSERT_NEXT(a_to_hunt_falls,
                   state_q != Hunt && !held_up() && !(receiving() && rx_valid_i),
                   state_q == Hunt ||
                   steps_now(state_q) <
                   steps_to_hunt($past(state_q), $past(idle_q), $past(count_q),
                                 $past(waiting_q), $past(tx_valid_q),
                                 $past(ar_pending_q || aw_pending_q || w_pending_q),
                                 $past(reply_len_q),
                                 $past(command == tpu_link_pkg::CmdReadMem), $past(length)),
                   "a cycle not held up brought the bridge no closer to Hunt")
  `TPU_ASSERT_NEXT(a_to_hunt_held, state_q != Hunt && held_up() && !(receiving() && rx_valid_i),
                   state_q == Hunt ||
                   steps_now(state_q) <=
                   steps_to_hunt($past(state_q), $past(idle_q), $past(count_q),
                                 $past(waiting_q), $past(tx_valid_q),
                                 $past(ar_pending_q || aw_pending_q || w_pending_q),
                                 $past(reply_len_q),
                                 $past(command == tpu_link_pkg::CmdReadMem), $past(length)),
                   "a partner holding the bridge up sent it further from Hunt")
  // The same as a bounded response: with partners that keep up, Hunt within ToHunt cycles
  // of the last byte.
  `TPU_ASSERT_WITHIN(a_back_to_hunt,
                     state_q != Hunt && !held_up() && !(receiving() && rx_valid_i), ToHunt,
                     "the bridge did not get back to Hunt in time")

  // A corrupt request does nothing and is answered CORRUPT.
  `TPU_ASSERT_NEXT(a_corrupt_answered, state_q == Check && (crc_q != CrcResidue || bad_char_q),
                   state_q == Reply && status_q == tpu_link_pkg::StatusCorrupt &&
                   reply_len_q == '0, "a corrupt request not answered CORRUPT")

  // What the steps rest on: the counters in their ranges, each state with its command.
  `TPU_ASSERT(a_state_known, state_q <= Reply, "state out of range")
  `TPU_ASSERT(a_quiet_counted, !receiving() ||
              (idle_q <= LastIdle && 32'(a_frame_timeout_count_q) == 32'(idle_q) &&
               32'(a_back_to_hunt_count_q) == 32'(idle_q)),
              "idle_q is not the run of quiet cycles")
  `TPU_ASSERT(a_steps_counted,
              state_q == Hunt || 32'(a_back_to_hunt_count_q) + 32'(steps_now(state_q)) <= ToHunt,
              "more cycles to Hunt than the bound")
  `TPU_ASSERT(a_tx_in_reply, !tx_valid_q || state_q == Reply, "a reply byte outside Reply")
  `TPU_ASSERT(a_waiting_for_memory, !waiting_q || state_q == MemWrite ||
              (state_q == Reply && !tx_valid_q && command == tpu_link_pkg::CmdReadMem &&
               count_q >= 16'(ReplyHeader) && count_q < reply_bytes),
              "waiting for memory outside a memory access")
  `TPU_ASSERT(a_reply_in_range, state_q != Reply ||
              (reply_len_q <= 16'(MaxPayload) && count_q <= reply_bytes + 16'd3 &&
               (reply_len_q == '0 || command == tpu_link_pkg::CmdInfo ||
                command == tpu_link_pkg::CmdReadReg || command == tpu_link_pkg::CmdReadMem)),
              "reply byte count out of range")
  `TPU_ASSERT(a_mem_write_in_range, state_q != MemWrite ||
              (command == tpu_link_pkg::CmdWriteMem && length != '0 &&
               length <= 16'(MaxPayload) && count_q < length && reply_len_q == '0),
              "WRITE_MEM byte count out of range")
  `TPU_ASSERT(a_reg_read_state, state_q != RegRead ||
              (command == tpu_link_pkg::CmdReadReg && reply_len_q == 16'd4 && count_q == '0 &&
               !aw_pending_q && !w_pending_q), "READ_REG state out of step")
  `TPU_ASSERT(a_reg_write_state, state_q != RegWrite ||
              (command == tpu_link_pkg::CmdWriteReg && reply_len_q == '0 && count_q == '0 &&
               !ar_pending_q), "WRITE_REG state out of step")
  `TPU_ASSERT(a_ar_in_read, !ar_pending_q || state_q == RegRead, "AR outside READ_REG")
  `TPU_ASSERT(a_aw_w_in_write, !(aw_pending_q || w_pending_q) || state_q == RegWrite,
              "AW or W outside WRITE_REG")

endmodule
