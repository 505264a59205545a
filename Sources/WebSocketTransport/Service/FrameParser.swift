/// RFC 6455 §5 framing of what a client sends, as a value: bytes go in as they arrive, whole frames come out, or
/// the first rule the next frame breaks, decided from its header before any of its payload is read.
///
/// The server reads its connections with this rather than through lws 4.1, which accepts unmasked frames and
/// non-minimal lengths and drops a connection without a close frame for an oversized control frame or a length
/// with the top bit set (see `Connection`).
struct FrameParser {
    struct Frame: Equatable {
        var fin: Bool
        var opcode: Opcode
        var payload: [UInt8]
    }

    enum Opcode: UInt8 {
        case continuation = 0x0, text = 0x1, binary = 0x2, close = 0x8, ping = 0x9, pong = 0xA

        var isControl: Bool { rawValue & 0x8 != 0 }
    }

    enum Output: Equatable {
        case frame(Frame)
        /// The close frame to answer with: 1002 for a framing error, 1009 for a data frame over the budget.
        case violation(WebSocketCloseFrame)
    }

    private var buffer: [UInt8] = []
    /// Where the unparsed bytes of `buffer` start.
    private var start = 0
    /// A data message was started and not finished: only continuations (and control frames) may come.
    private var fragmenting = false

    /// Bytes received and not yet returned as frames.
    var bufferedBytes: Int { buffer.count - start }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeSubrange(..<start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, or the rule it breaks, or nil until more bytes arrive. `assembled` payload bytes of
    /// the current message were returned already; a data frame that would take the message past `limit` is a
    /// 1009 violation as soon as its length is read.
    mutating func next(assembled: Int, limit: Int) -> Output? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let first = buffer[start]
        let second = buffer[start + 1]
        let fin = first & 0x80 != 0
        guard first & 0x70 == 0 else { return protocolError("reserved bits are set (no extension was negotiated)") }
        guard let opcode = Opcode(rawValue: first & 0x0F) else {
            return protocolError("opcode \(first & 0x0F) is reserved")
        }
        switch opcode {
        case .continuation where !fragmenting: return protocolError("a continuation frame continues no message")
        case .text where fragmenting, .binary where fragmenting:
            return protocolError("a new message started before the last one's final fragment")
        case _ where opcode.isControl && !fin: return protocolError("a control frame must not be fragmented")
        default: break
        }
        guard second & 0x80 != 0 else { return protocolError("a client frame must be masked") }
        var length = UInt64(second & 0x7F)
        var headerSize = 2
        if length >= 126 {
            guard !opcode.isControl else { return protocolError("a control frame carries at most 125 bytes") }
            let extra = length == 126 ? 2 : 8
            guard available >= 2 + extra else { return nil }
            length = buffer[(start + 2)..<(start + 2 + extra)].reduce(0) { $0 << 8 | UInt64($1) }
            guard length >= (extra == 2 ? 126 : 65_536) else {
                return protocolError("a length of \(length) must be encoded in the fewest bytes")
            }
            headerSize += extra
        }
        if !opcode.isControl, length > UInt64(max(0, limit - assembled)) {
            return .violation(WebSocketCloseFrame(code: .messageTooBig, reason: "message exceeds \(limit) bytes"))
        }
        let total = headerSize + 4 + Int(length)
        guard available >= total else { return nil }
        let mask = buffer[(start + headerSize)..<(start + headerSize + 4)].map { $0 }
        let payloadStart = start + headerSize + 4
        var payload = Array(buffer[payloadStart..<(start + total)])
        payload.withUnsafeMutableBufferPointer { bytes in
            for index in bytes.indices { bytes[index] ^= mask[index & 3] }
        }
        start += total
        if !opcode.isControl { fragmenting = !fin }
        return .frame(Frame(fin: fin, opcode: opcode, payload: payload))
    }

    private func protocolError(_ reason: String) -> Output {
        .violation(WebSocketCloseFrame(code: .protocolError, reason: reason))
    }
}
