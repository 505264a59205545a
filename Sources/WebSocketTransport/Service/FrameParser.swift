/// RFC 6455 §5 framing of what the peer sends, as a value: bytes go in as they arrive, whole frames come out, or
/// the first rule the next frame breaks, decided from its header before any of its payload is read. A server reads
/// masked frames (a client's), a client unmasked ones (a server's).
///
/// Both roles read their connections with this rather than through lws 4.1: its server accepts unmasked frames and
/// non-minimal lengths and drops a connection without a close frame for an oversized control frame or a length
/// with the top bit set, and its client parses a byte at a time (see `Connection`).
struct FrameParser {
    struct Frame: Equatable {
        var fin: Bool
        var opcode: Opcode
        var payload: [UInt8]
    }

    enum Opcode: UInt8 {
        case continuation = 0x0
        case text = 0x1
        case binary = 0x2
        case close = 0x8
        case ping = 0x9
        case pong = 0xA

        var isControl: Bool { rawValue & 0x8 != 0 }
    }

    enum Output: Equatable {
        case frame(Frame)
        /// The close frame to answer with: 1002 for a framing error, 1009 for a data frame over the budget.
        case violation(WebSocketCloseFrame)
    }

    /// Server role: frames must be masked. Client role: they must not be.
    let readsMaskedFrames: Bool
    private var buffer: [UInt8] = []
    /// Where the unparsed bytes of `buffer` start.
    private var start = 0
    /// A data message was started and not finished: only continuations (and control frames) may come.
    private var fragmenting = false
    /// Payload bytes of a skipped data frame still to come (see `skipsData`).
    private var skipping = 0

    /// Set once the connection is closing: data frames are skipped as their bytes arrive (never buffered whole,
    /// whatever their size) and only control frames come out, so that the peer's close frame is found behind any
    /// amount of data.
    var skipsData = false

    init(readsMaskedFrames: Bool) {
        self.readsMaskedFrames = readsMaskedFrames
    }

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
        while true {
            if skipping > 0 {
                let count = min(skipping, buffer.count - start)
                start += count
                skipping -= count
                guard skipping == 0 else { return nil }
            }
            switch step(assembled: assembled, limit: limit) {
            case .output(let output): return output
            case .skipped: continue
            case .incomplete: return nil
            }
        }
    }

    private enum Step {
        case output(Output)
        /// A data frame's header was read and its payload is being skipped.
        case skipped
        /// Too few bytes for the next frame yet.
        case incomplete
    }

    private mutating func step(assembled: Int, limit: Int) -> Step {
        let available = buffer.count - start
        guard available >= 2 else { return .incomplete }
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
        let maskSize: Int
        if readsMaskedFrames {
            guard second & 0x80 != 0 else { return protocolError("a client frame must be masked") }
            maskSize = 4
        } else {
            guard second & 0x80 == 0 else { return protocolError("a server frame must not be masked") }
            maskSize = 0
        }
        var length = UInt64(second & 0x7F)
        var headerSize = 2
        if length >= 126 {
            guard !opcode.isControl else { return protocolError("a control frame carries at most 125 bytes") }
            let extra = length == 126 ? 2 : 8
            guard available >= 2 + extra else { return .incomplete }
            length = buffer[(start + 2)..<(start + 2 + extra)].reduce(0) { $0 << 8 | UInt64($1) }
            guard length >= (extra == 2 ? 126 : 65_536) else {
                return protocolError("a length of \(length) must be encoded in the fewest bytes")
            }
            headerSize += extra
        }
        if skipsData, !opcode.isControl {
            guard length <= UInt64(Int.max) else { return protocolError("a length must have its top bit clear") }
            guard available >= headerSize + maskSize else { return .incomplete }
            start += headerSize + maskSize
            skipping = Int(length)
            fragmenting = !fin
            return .skipped
        }
        if !opcode.isControl, length > UInt64(max(0, limit - assembled)) {
            return .output(
                .violation(WebSocketCloseFrame(code: .messageTooBig, reason: "message exceeds \(limit) bytes")))
        }
        let total = headerSize + maskSize + Int(length)
        guard available >= total else { return .incomplete }
        let payloadStart = start + headerSize + maskSize
        var payload = Array(buffer[payloadStart..<(start + total)])
        if maskSize > 0 {
            let mask = buffer[(start + headerSize)..<payloadStart].map { $0 }
            payload.withUnsafeMutableBufferPointer { bytes in
                for index in bytes.indices { bytes[index] ^= mask[index & 3] }
            }
        }
        start += total
        if !opcode.isControl { fragmenting = !fin }
        return .output(.frame(Frame(fin: fin, opcode: opcode, payload: payload)))
    }

    private func protocolError(_ reason: String) -> Step {
        .output(.violation(WebSocketCloseFrame(code: .protocolError, reason: reason)))
    }
}
