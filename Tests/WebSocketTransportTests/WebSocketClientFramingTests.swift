import XCTest

@testable import WebSocketTransport

/// The client reads a server's frames itself (`FrameParser`, as the server reads its clients'), and writes its pongs
/// and close frames itself, masked. A hand-written server on a raw socket sends exactly the bytes under test.
final class WebSocketClientFramingTests: XCTestCase {
    private static func text(_ string: String, fin: Bool = true) -> [UInt8] {
        RawSocket.serverFrame(opcode: 0x1, fin: fin, payload: Array(string.utf8))
    }

    private static func continuation(_ string: String, fin: Bool) -> [UInt8] {
        RawSocket.serverFrame(opcode: 0x0, fin: fin, payload: Array(string.utf8))
    }

    private static func closePayload(_ code: UInt16, _ reason: String) -> [UInt8] {
        [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8)
    }

    /// A client connected to a hand-written server, which wrote `bytes` right behind its 101: the client, its
    /// events, the connection and the server's end of it.
    private static func connect(
        then bytes: [UInt8] = [], configuration: WebSocketClient.Configuration = .init()
    ) throws -> (client: WebSocketClient, events: EventRecorder, id: WebSocketConnectionID, peer: RawSocket) {
        let listener = try RawListener()
        let events = EventRecorder()
        let client = try WebSocketClient(configuration: configuration, onEvent: events.handler)
        let id = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: listener.port))
        return (client, events, id, try XCTUnwrap(listener.acceptWebSocket(then: bytes)))
    }

    /// A frame the server wrote behind its 101 in the same send, half of the next one, a fragmented message with a
    /// ping between its fragments: the messages come out whole and in order, the ping is answered with a masked
    /// pong, and the server's close is echoed masked and reported with its code and reason.
    func testFramesBehindThe101FragmentsPingsAndTheServersClose() async throws {
        let fragment = Self.text("hel", fin: false)
        let (client, events, id, peer) = try Self.connect(then: Self.text("first") + fragment.prefix(3))
        try await events.wait("the first message") { $0.messageCount(on: id) == 1 }

        peer.write(
            Array(fragment.dropFirst(3)) + RawSocket.serverFrame(opcode: 0x9, payload: Array("are you there".utf8))
                + Self.continuation("lo wor", fin: false) + Self.continuation("ld", fin: true))
        let pong = try XCTUnwrap(peer.readMaskedFrame(), "a masked pong")
        XCTAssertEqual(pong.opcode, 0xA)
        XCTAssertEqual(pong.payload, Array("are you there".utf8))
        try await events.wait("the fragmented message") { $0.messageCount(on: id) == 2 }
        XCTAssertEqual(
            events.messages(on: id).map { String(decoding: $0.bytes, as: UTF8.self) }, ["first", "hello world"])
        XCTAssertEqual(events.messages(on: id).map(\.kind), [.text, .text])

        client.send(WebSocketMessage(text: "up"), to: id)
        let sent = try XCTUnwrap(peer.readMaskedFrame(), "the client's message, masked")
        XCTAssertEqual(sent.opcode, 0x1)
        XCTAssertEqual(sent.payload, Array("up".utf8))

        peer.write(RawSocket.serverFrame(opcode: 0x8, payload: Self.closePayload(4001, "bye")))
        let echo = try XCTUnwrap(peer.readMaskedFrame(), "the close echoed, masked")
        XCTAssertEqual(echo.opcode, 0x8)
        XCTAssertEqual(echo.payload, Self.closePayload(4001, "bye"))
        XCTAssertEqual(peer.readToEnd(), [], "the client closes its socket once its echo is out")
        try await events.wait("close") { !$0.closes(on: id).isEmpty }
        XCTAssertEqual(
            events.closes(on: id), [WebSocketCloseFrame(code: WebSocketCloseCode(rawValue: 4001), reason: "bye")])
        await client.shutdown()
    }

    /// A server that goes silent is sent a masked PING after `pingAfterIdle`; when nothing answers it either, the
    /// client hangs up after `hangUpAfterIdle`, without a close frame, and reports 1006.
    func testASilentServerIsPingedThenHungUpOn() async throws {
        let (client, events, id, peer) = try Self.connect(
            configuration: .init(pingAfterIdle: .seconds(1), hangUpAfterIdle: .seconds(2)))
        try await events.wait("open") { !$0.opened.isEmpty }
        let start = ContinuousClock.now
        let ping = try XCTUnwrap(peer.readMaskedFrame(), "a masked PING")
        XCTAssertEqual(ping.opcode, 0x9)
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .seconds(1))
        XCTAssertEqual(peer.readToEnd(), [], "the client hangs up without a close frame")
        try await events.wait("the hang-up", timeout: .seconds(10)) { !$0.closes(on: id).isEmpty }
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .seconds(2))
        XCTAssertEqual(events.closes(on: id).first?.code, .abnormalClosure)
        await client.shutdown()
    }

    /// Messages sent in a burst are written together (several frames in one send, masked with keys drawn in bulk)
    /// and, past the write budget, by lws: either way each arrives as its own frame, whole, in order, with the
    /// mask bit and a key of its own (RFC 6455 §5.3), across refills of the keys.
    func testMessagesSentTogetherArriveAsSeparateMaskedFramesInOrder() async throws {
        let (client, events, id, peer) = try Self.connect()
        let sizes = [0, 1, 3, 4, 7, 8, 9, 125, 126, 300, 65_535, 65_536, 70_000, 2] + Array(repeating: 12, count: 300)
        let payloads: [(kind: WebSocketMessageKind, bytes: [UInt8])] = sizes.enumerated().map { index, size in
            index.isMultiple(of: 2)
                ? (.text, (0..<size).map { UInt8(ascii: "a") + UInt8(($0 + index) % 26) })
                : (.binary, (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) })
        }
        for payload in payloads { client.send(WebSocketMessage(kind: payload.kind, bytes: payload.bytes), to: id) }
        var keys: [[UInt8]] = []
        for (index, payload) in payloads.enumerated() {
            let frame = try XCTUnwrap(peer.readMaskedFrame(), "message \(index), masked")
            XCTAssertEqual(frame.opcode, payload.kind == .text ? 0x1 : 0x2, "message \(index)")
            XCTAssertEqual(frame.payload, payload.bytes, "message \(index) of \(payload.bytes.count) bytes")
            keys.append(frame.key)
        }
        // 314 random 32-bit keys: two alike has a chance of about 1 in 100,000.
        XCTAssertGreaterThanOrEqual(Set(keys).count, keys.count - 1, "each frame has a key of its own")
        XCTAssertEqual(events.messageCount(on: id), 0)
        await client.shutdown()
    }

    /// RFC 6455 §5.1: a client closes the connection with 1002 when a server masks a frame; text that is not UTF-8 is
    /// 1007. The close frame names the problem, and nothing of the bad message is delivered.
    func testAMaskedFrameOrTextThatIsNotUTF8ClosesTheConnection() async throws {
        let cases: [(bytes: [UInt8], frame: WebSocketCloseFrame)] = [
            (
                RawSocket.frame(opcode: 0x1, fin: true, payload: Array("hi".utf8)),
                WebSocketCloseFrame(code: .protocolError, reason: "a server frame must not be masked")
            ),
            (
                RawSocket.serverFrame(opcode: 0x1, payload: [0xC3, 0x28]),
                WebSocketCloseFrame(code: .invalidPayload, reason: "invalid UTF-8")
            ),
            (
                [0x81, 126, 0x00, 0x05] + Array("hello".utf8),
                WebSocketCloseFrame(code: .protocolError, reason: "a length of 5 must be encoded in the fewest bytes")
            ),
        ]
        for (bytes, expected) in cases {
            let (client, events, id, peer) = try Self.connect(then: Self.text("before"))
            peer.write(bytes)
            let close = try XCTUnwrap(peer.readMaskedFrame(), "a masked close frame for \(expected.reason)")
            XCTAssertEqual(close.opcode, 0x8)
            XCTAssertEqual(close.payload, Self.closePayload(expected.code.rawValue, expected.reason))
            peer.write(RawSocket.serverFrame(opcode: 0x8, payload: close.payload))
            try await events.wait("close") { !$0.closes(on: id).isEmpty }
            XCTAssertEqual(events.closes(on: id), [expected])
            XCTAssertEqual(events.messages(on: id).map(\.bytes), [Array("before".utf8)])
            await client.shutdown()
        }
    }

    /// A close the client starts: its frame is masked, the client waits for the server's answer (lingering, as the
    /// server does), reports its own frame, and then closes its socket.
    func testAClientsCloseIsMaskedAndWaitsForTheServersAnswer() async throws {
        let (client, events, id, peer) = try Self.connect()
        try await events.wait("open") { $0.opened.count == 1 }
        client.close(id, code: .normalClosure, reason: "done")
        let close = try XCTUnwrap(peer.readMaskedFrame(), "a masked close frame")
        XCTAssertEqual(close.opcode, 0x8)
        XCTAssertEqual(close.payload, Self.closePayload(1000, "done"))
        XCTAssertTrue(events.closes(on: id).isEmpty, "the client waits for the server's answer")
        // What the server still sends is read for its close frame, not delivered.
        peer.write(Self.text("late") + RawSocket.serverFrame(opcode: 0x8, payload: close.payload))
        XCTAssertEqual(peer.readToEnd(), [])
        try await events.wait("close") { !$0.closes(on: id).isEmpty }
        XCTAssertEqual(events.closes(on: id), [WebSocketCloseFrame(code: .normalClosure, reason: "done")])
        XCTAssertTrue(events.messages(on: id).isEmpty)
        await client.shutdown()
    }
}
