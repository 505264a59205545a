import Prometheus
import WebSocketTransport
import XCTest

/// `send(_ messages:to:)`: a group of messages queued in one command goes out to each connection in one write, and
/// still arrives as separate, whole messages, in order; a reader that stopped reading is still closed with 4000
/// after whole frames.
final class WebSocketServerBatchSendTests: XCTestCase {
    private func sequenceMessage(_ sequence: Int, size: Int) -> WebSocketMessage {
        var bytes = [UInt8](repeating: UInt8(truncatingIfNeeded: sequence), count: size)
        withUnsafeBytes(of: UInt32(sequence).bigEndian) { bytes.replaceSubrange(0..<4, with: $0) }
        return WebSocketMessage(bytes: bytes)
    }

    private func sequence(of bytes: [UInt8]) -> Int { bytes[0..<4].reduce(0) { $0 << 8 | Int($1) } }

    func testMessagesSentTogetherGoOutInOneWriteAsSeparateMessagesInOrder() async throws {
        let registry = PrometheusCollectorRegistry()
        let serverEvents = EventRecorder()
        let server = try WebSocketServer(
            configuration: .withMetrics(in: registry), onEvent: serverEvents.handler)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        let ids = (0..<3).map { _ in client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port)) }
        try await serverEvents.wait("3 opens") { $0.opened.count == 3 }
        // Sizes on both sides of the 7-bit and 16-bit length forms, 51 KiB in all: one write's budget is 64 KiB.
        let sizes = [4, 125, 126, 127, 200, 9, 1_000, 20_000, 30_000, 5]
        let sent = sizes.enumerated().map { sequenceMessage($0, size: $1) }
        server.send(sent, to: serverEvents.opened.map(\.id))

        try await clientEvents.wait("every message at every client") { events in
            ids.allSatisfy { events.messages(on: $0).count == sizes.count }
        }
        for id in ids {
            let received = clientEvents.messages(on: id)
            XCTAssertEqual(received.map { sequence(of: $0.bytes) }, Array(0..<sizes.count))
            XCTAssertEqual(received.map(\.bytes), sent.map { $0.withUnsafeBytes { Array($0) } })
        }
        XCTAssertEqual(try metric("websocket_messages_sent_total", port: server.port), 3 * sizes.count)
        // All ten in one write per connection: together they fit one write's budget.
        XCTAssertEqual(try metric("websocket_writes_total", port: server.port), 3)
        await client.shutdown()
        await server.shutdown()
    }

    func testAReaderThatStoppedReadingGetsWholeFramesThen4000() async throws {
        let serverEvents = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, maxQueuedBytes: 1 << 20, maxQueuedMessages: 1000),
            onEvent: serverEvents.handler)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        let reader = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port))
        let stalled = try RawSocket(port: server.port, receiveBuffer: 4096)
        _ = stalled.upgrade(path: "/stalled")
        try await serverEvents.wait("2 opens") { $0.opened.count == 2 }
        let connections = serverEvents.opened.map(\.id)
        let stalledID = try XCTUnwrap(serverEvents.opened.first { $0.path == "/stalled" }?.id)

        // 20 MiB in groups of 50 messages of 1 KiB: the stalled reader's bound (1,000 messages, 1 MiB) is passed
        // in the middle of a group. The test stays at most 500 messages ahead of the live reader, half its bound,
        // so a slow machine cannot push the reader over it too.
        let count = 20_000
        for group in stride(from: 0, to: count, by: 50) {
            server.send((group..<group + 50).map { sequenceMessage($0, size: 1024) }, to: connections)
            if group % 100 == 50 {
                try await clientEvents.wait("reader within 400", timeout: .seconds(30)) {
                    $0.messageCount(on: reader) >= group + 50 - 400
                }
            }
        }
        try await clientEvents.wait("every message at the reader", timeout: .seconds(30)) {
            $0.messageCount(on: reader) == count
        }
        XCTAssertEqual(clientEvents.messages(on: reader).map { sequence(of: $0.bytes) }, Array(0..<count))

        // What the stalled reader gets: whole 1 KiB messages from the first on, in order, then the close.
        var next = 0
        var close: (opcode: UInt8, payload: [UInt8])?
        while let frame = stalled.readFrame() {
            if frame.opcode == 0x8 {
                close = frame
                break
            }
            XCTAssertEqual(frame.opcode, 0x2)
            XCTAssertEqual(frame.payload.count, 1024)
            XCTAssertEqual(sequence(of: frame.payload), next)
            next += 1
        }
        let payload = try XCTUnwrap(close?.payload)
        XCTAssertEqual(Int(payload[0]) << 8 | Int(payload[1]), 4000)
        XCTAssertEqual(String(decoding: payload.dropFirst(2), as: UTF8.self), "outbound queue overflow")
        XCTAssertGreaterThan(next, 0)
        XCTAssertLessThan(next, count)
        try await serverEvents.wait("stalled reader closed", timeout: .seconds(8)) { !$0.closes(on: stalledID).isEmpty }
        XCTAssertEqual(
            serverEvents.closes(on: stalledID).first,
            WebSocketCloseFrame(code: .slowConsumer, reason: "outbound queue overflow"))
        await client.shutdown()
        await server.shutdown()
    }
}
