import XCTest

@testable import WebSocketTransport

final class FrameParserTests: XCTestCase {
    private func parse(_ bytes: [UInt8], assembled: Int = 0, limit: Int = 1 << 20) -> [FrameParser.Output] {
        var parser = FrameParser(readsMaskedFrames: true)
        bytes.withUnsafeBytes { parser.append($0) }
        var outputs: [FrameParser.Output] = []
        while let output = parser.next(assembled: assembled, limit: limit) {
            outputs.append(output)
            if case .violation = output { break }
        }
        return outputs
    }

    private func code(_ bytes: [UInt8], limit: Int = 1 << 20) -> UInt16? {
        guard case .violation(let frame)? = parse(bytes, limit: limit).last else { return nil }
        return frame.code.rawValue
    }

    /// Frames arriving a byte at a time come out whole, unmasked, once their last byte is in.
    func testFramesSplitAnywhereComeOutWhole() {
        let bytes =
            RawSocket.frame(opcode: 0x1, fin: false, payload: Array("héllo".utf8))
            + RawSocket.frame(opcode: 0x9, fin: true, payload: [1, 2])
            + RawSocket.frame(opcode: 0x0, fin: true, payload: [UInt8](repeating: 7, count: 70_000))
        var parser = FrameParser(readsMaskedFrames: true)
        var frames: [FrameParser.Frame] = []
        for byte in bytes {
            [byte].withUnsafeBytes { parser.append($0) }
            while case .frame(let frame)? = parser.next(assembled: 0, limit: 1 << 20) { frames.append(frame) }
        }
        XCTAssertEqual(frames.map(\.opcode), [.text, .ping, .continuation])
        XCTAssertEqual(frames.map(\.fin), [false, true, true])
        XCTAssertEqual(frames[0].payload, Array("héllo".utf8))
        XCTAssertEqual(frames[1].payload, [1, 2])
        XCTAssertEqual(frames[2].payload, [UInt8](repeating: 7, count: 70_000))
        XCTAssertEqual(parser.bufferedBytes, 0)
    }

    /// Each rule of RFC 6455 §5 is decided from the header, before the payload arrives.
    func testHeadersTheRFCForbidsAreViolations() {
        let mask: [UInt8] = [1, 2, 3, 4]
        XCTAssertEqual(code([0x81, 0x02, 0x68, 0x69]), 1002, "unmasked")
        XCTAssertEqual(code([0x89, 0x80 | 126, 0x00, 200]), 1002, "a ping of 200 bytes")
        XCTAssertEqual(code([0x08, 0x80]), 1002, "a fragmented close")
        XCTAssertEqual(code([0x83, 0x80] + mask), 1002, "reserved opcode")
        XCTAssertEqual(code([0xC1, 0x80] + mask), 1002, "RSV1 without an extension")
        XCTAssertEqual(code([0x80, 0x80] + mask), 1002, "a continuation of nothing")
        XCTAssertEqual(code([0x81, 0x80 | 126, 0x00, 0x05] + mask + [0, 0, 0, 0, 0]), 1002, "5 in 16 bits")
        XCTAssertEqual(code([0x81, 0x80 | 127, 0, 0, 0, 0, 0, 0, 0x01, 0x2C] + mask), 1002, "300 in 64 bits")
        XCTAssertEqual(code([0x81, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 0]), 1009, "2^63")
        XCTAssertEqual(code([0x81, 0x80 | 126, 0x01, 0x00], limit: 255), 1009, "256 bytes over a 255-byte limit")
        XCTAssertEqual(
            code(
                RawSocket.frame(opcode: 0x1, fin: false, payload: [0x61])
                    + RawSocket.frame(opcode: 0x1, fin: true, payload: [])),
            1002, "a new message inside a fragmented one")
        XCTAssertEqual(
            code(RawSocket.frame(opcode: 0x1, fin: true, payload: [UInt8](repeating: 0x61, count: 255)), limit: 255),
            nil)
    }

    /// A client reads a server's frames, which must not be masked, by the same rules.
    func testAClientReadsUnmaskedFramesAndRefusesMaskedOnes() {
        var parser = FrameParser(readsMaskedFrames: false)
        let bytes: [UInt8] =
            [0x01, 0x03] + Array("hél".utf8).prefix(3) + [0x80, 0x01, 0x6C]
            + [0x89, 0x00] + [0x82, 126, 0x01, 0x00] + [UInt8](repeating: 9, count: 256)
        var frames: [FrameParser.Frame] = []
        for byte in bytes {
            [byte].withUnsafeBytes { parser.append($0) }
            while case .frame(let frame)? = parser.next(assembled: 0, limit: 1 << 20) { frames.append(frame) }
        }
        XCTAssertEqual(frames.map(\.opcode), [.text, .continuation, .ping, .binary])
        XCTAssertEqual(frames.map(\.fin), [false, true, true, true])
        XCTAssertEqual(frames[0].payload + frames[1].payload, Array("hél".utf8))
        XCTAssertEqual(frames[3].payload, [UInt8](repeating: 9, count: 256))
        XCTAssertEqual(parser.bufferedBytes, 0)

        func violation(_ bytes: [UInt8], limit: Int = 1 << 20) -> WebSocketCloseFrame? {
            var parser = FrameParser(readsMaskedFrames: false)
            bytes.withUnsafeBytes { parser.append($0) }
            guard case .violation(let frame)? = parser.next(assembled: 0, limit: limit) else { return nil }
            return frame
        }
        XCTAssertEqual(
            violation(RawSocket.frame(opcode: 0x1, fin: true, payload: [0x61])),
            WebSocketCloseFrame(code: .protocolError, reason: "a server frame must not be masked"))
        XCTAssertEqual(violation([0x81, 126, 0x00, 0x05])?.code, .protocolError, "5 in 16 bits")
        XCTAssertEqual(violation([0x89, 126, 0x00, 200])?.code, .protocolError, "a ping of 200 bytes")
        XCTAssertEqual(violation([0xC1, 0x00])?.code, .protocolError, "RSV1 without an extension")
        XCTAssertEqual(violation([0x82, 126, 0x01, 0x00], limit: 255)?.code, .messageTooBig)
    }

    /// The budget is what the message in progress may still take.
    func testTheBudgetCountsWhatWasAssembled() {
        let frame = RawSocket.frame(opcode: 0x0, fin: true, payload: [UInt8](repeating: 1, count: 10))
        var parser = FrameParser(readsMaskedFrames: true)
        (RawSocket.frame(opcode: 0x2, fin: false, payload: []) + frame).withUnsafeBytes { parser.append($0) }
        _ = parser.next(assembled: 0, limit: 100)
        XCTAssertEqual(
            parser.next(assembled: 95, limit: 100),
            .violation(WebSocketCloseFrame(code: .messageTooBig, reason: "message exceeds 100 bytes")))
    }

    /// Closing: data frames of any size are skipped as their bytes arrive, never held whole, and the control frames
    /// behind them still come out, the peer's close frame among them.
    func testSkippedDataFramesAreNotBufferedAndControlFramesComeOut() {
        var parser = FrameParser(readsMaskedFrames: true)
        parser.skipsData = true
        let big = [UInt8](repeating: 7, count: 3 << 20)
        let bytes =
            RawSocket.frame(opcode: 0x2, fin: false, payload: big)
            + RawSocket.frame(opcode: 0x9, fin: true, payload: [1])
            + RawSocket.frame(opcode: 0x0, fin: true, payload: [2, 3])
            + RawSocket.frame(opcode: 0x8, fin: true, payload: [0x03, 0xE8])
        var frames: [FrameParser.Frame] = []
        var mostBuffered = 0
        for start in stride(from: 0, to: bytes.count, by: 4096) {
            bytes[start..<min(start + 4096, bytes.count)].withUnsafeBytes { parser.append($0) }
            mostBuffered = max(mostBuffered, parser.bufferedBytes)
            while case .frame(let frame)? = parser.next(assembled: 0, limit: 100) { frames.append(frame) }
        }
        XCTAssertEqual(frames.map(\.opcode), [.ping, .close])
        XCTAssertEqual(frames.last?.payload, [0x03, 0xE8])
        XCTAssertLessThanOrEqual(mostBuffered, 8192)
        // A length with its top bit set cannot be skipped: the stream is unreadable from there.
        parser.skipsData = true
        [0x82, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4].withUnsafeBytes { parser.append($0) }
        guard case .violation(let frame)? = parser.next(assembled: 0, limit: 100) else {
            return XCTFail("no violation")
        }
        XCTAssertEqual(frame.code, .protocolError)
    }
}
