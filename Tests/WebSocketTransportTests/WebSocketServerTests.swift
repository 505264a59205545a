import Prometheus
import WebSocketTransport
import XCTest

final class WebSocketServerTests: XCTestCase {
    private func makeServer(
        _ configuration: WebSocketServer.Configuration = .init(host: "127.0.0.1", port: 0),
        events: EventRecorder
    ) throws -> WebSocketServer {
        try WebSocketServer(configuration: configuration, onEvent: events.handler)
    }

    /// A text message sent as three hand-written frames (text, continuation, final continuation) arrives whole.
    func testFragmentedMessageIsReassembled() async throws {
        let events = EventRecorder()
        let server = try makeServer(events: events)
        let socket = try RawSocket(port: server.port)
        XCTAssertEqual(socket.upgrade(), "HTTP/1.1 101 Switching Protocols")
        socket.write(RawSocket.frame(opcode: 0x1, fin: false, payload: Array("frag".utf8)))
        socket.write(RawSocket.frame(opcode: 0x0, fin: false, payload: Array("ment".utf8)))
        // A ping between fragments is allowed and must not disturb reassembly.
        socket.write(RawSocket.frame(opcode: 0x9, fin: true, payload: []))
        socket.write(RawSocket.frame(opcode: 0x0, fin: true, payload: Array("ed é".utf8)))
        try await events.wait("message") { !$0.messages().isEmpty }
        XCTAssertEqual(events.messages(), [WebSocketInboundMessage(kind: .text, bytes: Array("fragmented é".utf8))])
        await server.shutdown()
    }

    /// A message one byte over the limit closes the connection with 1009, on the wire and in the event.
    func testOversizedMessageClosesWith1009() async throws {
        let events = EventRecorder()
        let server = try makeServer(.init(host: "127.0.0.1", port: 0, maxMessageSize: 1000), events: events)
        do {
            let socket = try RawSocket(port: server.port)
            _ = socket.upgrade()
            socket.write(RawSocket.frame(opcode: 0x2, fin: true, payload: [UInt8](repeating: 7, count: 1000)))
            socket.write(RawSocket.frame(opcode: 0x2, fin: false, payload: [UInt8](repeating: 7, count: 600)))
            socket.write(RawSocket.frame(opcode: 0x0, fin: true, payload: [UInt8](repeating: 7, count: 401)))
            let close = socket.readCloseFrame()
            XCTAssertEqual(close?.code, 1009)
            XCTAssertEqual(close?.reason, "message exceeds 1000 bytes")
        }
        try await events.wait("close") { !$0.closes().isEmpty }
        XCTAssertEqual(events.messages().map(\.bytes.count), [1000])
        XCTAssertEqual(events.closes().first?.code, .messageTooBig)
        await server.shutdown()
    }

    /// A frame header claiming 2^62 bytes is refused with 1009 at its first payload bytes, without waiting for the
    /// limit's worth of them.
    func testFrameClaimingMoreThanTheLimitClosesWith1009AtOnce() async throws {
        let events = EventRecorder()
        let server = try makeServer(events: events)
        let socket = try RawSocket(port: server.port)
        _ = socket.upgrade()
        let length = (0..<8).reversed().map { UInt8((UInt64(1) << 62) >> (UInt64($0) * 8) & 0xFF) }
        socket.write([0x81, 0x80 | 127] + length + [0x12, 0x34, 0x56, 0x78] + Array(repeating: 0x41, count: 16))
        XCTAssertEqual(socket.readCloseFrame()?.code, 1009)
        await server.shutdown()
    }

    /// Frame headers RFC 6455 §5 forbids are answered with a close frame carrying the RFC's code, on the wire and in
    /// the event, and nothing of them is delivered: lws 4.1 accepted the first and fourth and dropped the second
    /// and third without a close frame.
    func testForbiddenFrameHeadersCloseWithTheRFCsCode() async throws {
        let events = EventRecorder()
        let server = try makeServer(events: events)
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        let cases: [(name: String, bytes: [UInt8], code: UInt16)] = [
            ("an unmasked frame", [0x81, 0x02] + Array("hi".utf8), 1002),
            (
                "a ping with 200 bytes",
                RawSocket.frame(opcode: 0x9, fin: true, payload: [UInt8](repeating: 1, count: 200)), 1002
            ),
            ("a length of 2^63", [0x81, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 0] + mask, 1009),
            ("2 bytes in a 16-bit length", [0x81, 0x80 | 126, 0x00, 0x02] + mask + [0x7A, 0x5D], 1002),
            (
                "300 bytes in a 64-bit length",
                [0x82, 0x80 | 127, 0, 0, 0, 0, 0, 0, 0x01, 0x2C] + mask + [UInt8](repeating: 0, count: 300), 1002
            ),
            ("a reserved opcode", [0x83, 0x80] + mask, 1002),
            ("a fragmented ping", [0x09, 0x80] + mask, 1002),
        ]
        for (name, bytes, code) in cases {
            let socket = try RawSocket(port: server.port)
            _ = socket.upgrade()
            socket.write(bytes)
            XCTAssertEqual(socket.readCloseFrame()?.code, code, name)
        }
        try await events.wait("closes") { $0.closes().count == cases.count }
        XCTAssertEqual(Set(events.closes().map(\.code.rawValue)), [1002, 1009])
        XCTAssertTrue(events.messages().isEmpty)
        await server.shutdown()
    }

    /// A peer that sends its close frame and then shuts down its side of the socket still gets the answer.
    func testCloseFrameIsAnsweredAfterThePeerShutsDownItsSide() async throws {
        let events = EventRecorder()
        let server = try makeServer(events: events)
        let socket = try RawSocket(port: server.port)
        _ = socket.upgrade()
        socket.write(RawSocket.frame(opcode: 0x8, fin: true, payload: [0x03, 0xE8] + Array("done".utf8)))
        socket.shutdownWriting()
        let close = socket.readCloseFrame()
        XCTAssertEqual(close?.code, 1000)
        XCTAssertEqual(close?.reason, "done")
        try await events.wait("close") { !$0.closes().isEmpty }
        XCTAssertEqual(events.closes().first, WebSocketCloseFrame(code: .normalClosure, reason: "done"))
        await server.shutdown()
    }

    /// A ping is answered with a pong carrying its payload, between the fragments of a message too.
    func testPingIsAnsweredWithItsPayload() async throws {
        let events = EventRecorder()
        let server = try makeServer(events: events)
        let socket = try RawSocket(port: server.port)
        _ = socket.upgrade()
        socket.write(RawSocket.frame(opcode: 0x1, fin: false, payload: Array("a".utf8)))
        socket.write(RawSocket.frame(opcode: 0x9, fin: true, payload: Array("are you there".utf8)))
        let pong = socket.readFrame()
        XCTAssertEqual(pong?.opcode, 0xA)
        XCTAssertEqual(pong?.payload, Array("are you there".utf8))
        socket.write(RawSocket.frame(opcode: 0x0, fin: true, payload: Array("b".utf8)))
        try await events.wait("message") { !$0.messages().isEmpty }
        XCTAssertEqual(events.messages().map(\.text), ["ab"])
        await server.shutdown()
    }

    /// A text frame with bytes that are not UTF-8 (a lone continuation byte, then an overlong encoding)
    /// closes with 1007.
    func testInvalidUTF8ClosesWith1007() async throws {
        let events = EventRecorder()
        let server = try makeServer(events: events)
        for payload: [UInt8] in [[0x61, 0x80, 0x62], [0xC0, 0xAF]] {
            let socket = try RawSocket(port: server.port)
            _ = socket.upgrade()
            socket.write(RawSocket.frame(opcode: 0x1, fin: true, payload: payload))
            XCTAssertEqual(socket.readCloseFrame()?.code, 1007)
        }
        try await events.wait("two closes") { $0.closes().count == 2 }
        XCTAssertEqual(events.closes().map(\.code), [.invalidPayload, .invalidPayload])
        XCTAssertTrue(events.messages().isEmpty)
        await server.shutdown()
    }

    /// RFC 6455 §4.4: an upgrade to another version than 13 is refused with 426 naming the version spoken here
    /// (lws would otherwise accept it and then ignore its frames).
    func testOtherWebSocketVersionIsRefusedWith426() async throws {
        let events = EventRecorder()
        let server = try makeServer(events: events)
        for version in ["8", "14"] {
            let socket = try RawSocket(port: server.port)
            let response = socket.upgradeResponse(version: version)
            XCTAssertTrue(response.first?.hasPrefix("HTTP/1.1 426") ?? false, "\(response)")
            XCTAssertTrue(response.contains { $0.lowercased() == "sec-websocket-version: 13" }, "\(response)")
        }
        let socket = try RawSocket(port: server.port)
        XCTAssertEqual(socket.upgrade(), "HTTP/1.1 101 Switching Protocols")
        try await events.wait("open") { $0.opened.count == 1 }
        await server.shutdown()
    }

    /// A close frame the RFC forbids is answered with the error, not echoed: a code no endpoint may send (5000,
    /// 1005) or a 1-byte payload with 1002, a reason that is not UTF-8 with 1007. A valid one is echoed (an empty
    /// one as an empty one, which reads as 1005).
    func testForbiddenCloseFramesAreAnsweredWithTheirError() async throws {
        let events = EventRecorder()
        let server = try makeServer(events: events)
        let cases: [(payload: [UInt8], answer: UInt16)] = [
            ([0x13, 0x88], 1002),
            ([0x13, 0x88] + Array("bye".utf8), 1002),
            ([0x03, 0xED], 1002),
            ([0x03], 1002),
            ([0x03, 0xE8, 0xC0, 0xAF], 1007),
            ([0x0F, 0xA0] + Array("app".utf8), 4000),
            ([0x03, 0xE8] + Array("bye".utf8), 1000),
            ([0x03, 0xF4], 1012),
            ([], 1005),
        ]
        for (payload, answer) in cases {
            let socket = try RawSocket(port: server.port)
            _ = socket.upgrade()
            socket.write(RawSocket.frame(opcode: 0x8, fin: true, payload: payload))
            XCTAssertEqual(socket.readCloseFrame()?.code, answer, "close payload \(payload)")
        }
        await server.shutdown()
    }

    /// A client that stops reading is closed with 4000 once its queue passes its bound, while the other
    /// connections receive every message.
    func testSlowReaderIsClosedAtItsBoundWhileOthersKeepReceiving() async throws {
        let serverEvents = EventRecorder()
        let server = try makeServer(
            .init(host: "127.0.0.1", port: 0, maxQueuedBytes: 1 << 20, maxQueuedMessages: 1000), events: serverEvents)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        let readers = (0..<4).map { _ in client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port)) }
        let stalled = try RawSocket(port: server.port, receiveBuffer: 4096)
        _ = stalled.upgrade(path: "/stalled")
        try await serverEvents.wait("5 opens") { $0.opened.count == 5 }
        let stalledID = try XCTUnwrap(serverEvents.opened.first { $0.path == "/stalled" }?.id)

        // 20 MiB in 1 KiB messages: far beyond what socket buffers and the 1 MiB bound can hold. The
        // broadcaster keeps at most 500 messages ahead of the slowest live reader, so only the stalled one
        // can reach the bound of 1,000.
        let count = 20_000
        let payload = [UInt8](repeating: 0x2A, count: 1024)
        for sequence in 0..<count {
            var bytes = payload
            withUnsafeBytes(of: UInt32(sequence).bigEndian) { bytes.replaceSubrange(0..<4, with: $0) }
            server.broadcast(WebSocketMessage(bytes: bytes))
            if sequence % 100 == 99 {
                try await clientEvents.wait("readers within 500", timeout: .seconds(30)) { events in
                    readers.allSatisfy { events.messageCount(on: $0) > sequence - 500 }
                }
            }
        }
        try await clientEvents.wait("all messages at every reader", timeout: .seconds(30)) { events in
            readers.allSatisfy { events.messageCount(on: $0) == count }
        }
        // The close waits for the stalled reader to take the frame being written and the close frame.
        let close = stalled.readCloseFrame()
        XCTAssertEqual(close?.code, 4000)
        XCTAssertEqual(close?.reason, "outbound queue overflow")
        try await serverEvents.wait("slow reader closed", timeout: .seconds(8)) { !$0.closes(on: stalledID).isEmpty }
        XCTAssertEqual(
            serverEvents.closes(on: stalledID).first,
            WebSocketCloseFrame(code: .slowConsumer, reason: "outbound queue overflow"))
        for reader in readers {
            let sequences = clientEvents.messages(on: reader).map { $0.bytes[0..<4].reduce(0) { $0 << 8 | Int($1) } }
            XCTAssertEqual(sequences, Array(0..<count))
        }
        XCTAssertEqual(serverEvents.closes().count, 1)
        await client.shutdown()
        await server.shutdown()
    }

    /// A reader that stopped reading altogether cannot take its 4000 close frame: it is cut off once it has had
    /// `slowConsumerCloseTimeout` to take it.
    func testAReaderThatNeverTakesItsCloseFrameIsCutOffAfterTheSlowCloseTimeout() async throws {
        let serverEvents = EventRecorder()
        let server = try makeServer(
            .init(
                host: "127.0.0.1", port: 0, maxQueuedBytes: 1 << 20, maxQueuedMessages: 100,
                slowConsumerCloseTimeout: .seconds(1)),
            events: serverEvents)
        let stalled = try RawSocket(port: server.port, receiveBuffer: 4096)
        _ = stalled.upgrade()
        try await serverEvents.wait("open") { $0.opened.count == 1 }
        let id = try XCTUnwrap(serverEvents.opened.first?.id)

        // 16 MiB in messages of 256 KiB, paced so that the socket buffers fill before the queue passes its bound:
        // what lws buffered of the message being written, and the close frame behind it, then stay unwritten.
        let payload = [UInt8](repeating: 0x2A, count: 256 << 10)
        for _ in 0..<64 {
            server.broadcast(WebSocketMessage(bytes: payload))
            try await Task.sleep(for: .milliseconds(5))
        }
        let broadcast = ContinuousClock.now
        try await serverEvents.wait("cut off", timeout: .seconds(5)) { !$0.closes(on: id).isEmpty }
        XCTAssertLessThan(ContinuousClock.now - broadcast, .seconds(3))
        XCTAssertEqual(
            serverEvents.closes(on: id).first,
            WebSocketCloseFrame(code: .slowConsumer, reason: "outbound queue overflow"))
        // Frames of 0x2A bytes (headers 0x82 0x7F, then the length's 0x00 0x00 0x00 0x00 0x00 0x04 0x00 0x00) up to
        // where the connection was cut: a close frame (0x88) would mean that it got out, and that the connection
        // closed after lingering instead.
        XCTAssertFalse(stalled.readToEnd().contains(0x88), "the close frame got out")
        await server.shutdown()
    }

    /// `outboundBacklog` counts messages not yet written, at most 64 per connection: back to nothing once the
    /// readers have everything, 64 for a reader that stopped reading with thousands queued, nothing once it is gone.
    func testOutboundBacklogCountsUnwrittenMessagesAtMost64PerConnection() async throws {
        let serverEvents = EventRecorder()
        let server = try makeServer(
            .init(host: "127.0.0.1", port: 0, maxQueuedBytes: 64 << 20, maxQueuedMessages: 100_000),
            events: serverEvents)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        let readers = (0..<3).map { _ in client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port)) }
        try await serverEvents.wait("3 opens") { $0.opened.count == 3 }
        let ids = serverEvents.opened.map(\.id)

        let message = WebSocketMessage(bytes: [UInt8](repeating: 0x2A, count: 1024))
        for _ in 0..<2000 { server.send(message, to: ids) }
        try await clientEvents.wait("every message") { events in
            readers.allSatisfy { events.messageCount(on: $0) == 2000 }
        }
        try await backlog(of: server, reaches: 0)

        // 20 MB: more than the socket buffers hold, so thousands stay queued for the reader that does not read.
        var stalled: RawSocket? = try RawSocket(port: server.port, receiveBuffer: 4096)
        _ = stalled?.upgrade(path: "/stalled")
        try await serverEvents.wait("the stalled reader") { $0.opened.count == 4 }
        let stalledID = try XCTUnwrap(serverEvents.opened.first { $0.path == "/stalled" }?.id)
        for _ in 0..<20_000 { server.send(message, to: stalledID) }
        try await backlog(of: server, reaches: 64)
        stalled = nil // closes the socket: the server drops the connection and its queue
        try await serverEvents.wait("the stalled reader gone") { !$0.closes(on: stalledID).isEmpty }
        try await backlog(of: server, reaches: 0)
        await client.shutdown()
        await server.shutdown()
    }

    private func backlog(of server: WebSocketServer, reaches value: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while server.outboundBacklog != value, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        XCTAssertEqual(server.outboundBacklog, value)
    }

    /// 1,000 open/close cycles (50 at a time) leave nothing behind: the open-connections gauge returns to 0.
    func testConnectDisconnectCyclesLeaveNoLeakedConnection() async throws {
        let registry = PrometheusCollectorRegistry()
        let serverEvents = EventRecorder()
        let server = try makeServer(.withMetrics(in: registry), events: serverEvents)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        for batch in 0..<20 {
            let ids = (0..<50).map { _ in client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port))
            }
            try await clientEvents.wait("batch \(batch) open") { $0.opened.count == (batch + 1) * 50 }
            for id in ids { client.close(id) }
            try await clientEvents.wait("batch \(batch) closed") { $0.closes().count == (batch + 1) * 50 }
        }
        try await serverEvents.wait("server saw 1,000 closes") { $0.closes().count == 1000 }
        let metrics = try HTTPGet(port: server.port, path: "/metrics").text
        XCTAssertTrue(metrics.contains("websocket_connections_open 0"), metrics)
        XCTAssertTrue(metrics.contains("websocket_connections_accepted_total 1000"), metrics)
        XCTAssertTrue(metrics.contains(#"websocket_connections_closed_total{reason="normal"} 1000"#), metrics)
        let health = try HTTPGet(port: server.port, path: "/healthz").text
        XCTAssertEqual(health, #"{"status":"ok","connections":0}"#)
        await client.shutdown()
        await server.shutdown()
    }

    /// Shutdown closes open connections with 1001 after flushing what was queued for them.
    func testShutdownFlushesAndClosesWith1001() async throws {
        let serverEvents = EventRecorder()
        let server = try makeServer(events: serverEvents)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        let id = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port))
        try await serverEvents.wait("open") { $0.opened.count == 1 }
        for index in 0..<100 { server.broadcast(WebSocketMessage(text: "last words \(index)")) }
        await server.shutdown()
        try await clientEvents.wait("close") { !$0.closes(on: id).isEmpty }
        XCTAssertEqual(clientEvents.messages(on: id).count, 100)
        XCTAssertEqual(clientEvents.closes(on: id).first?.code, .goingAway)
        XCTAssertEqual(serverEvents.closes().first?.code, .goingAway)
        await client.shutdown()
    }
}

extension WebSocketServerTests {
    /// A server that pings after 1 s of silence and hangs up after 2, its events, and a raw peer it upgraded.
    private static func upgradedPeerOfQuickIdleServer() throws -> (WebSocketServer, EventRecorder, RawSocket) {
        let events = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0, pingAfterIdle: .seconds(1), hangUpAfterIdle: .seconds(2)),
            onEvent: events.handler)
        let socket = try RawSocket(port: server.port)
        _ = socket.upgrade()
        return (server, events, socket)
    }

    /// An idle peer is pinged after `pingAfterIdle`; one that never answers is hung up on after `hangUpAfterIdle`.
    func testIdlePeerIsPingedThenHungUpOn() async throws {
        let (server, events, socket) = try Self.upgradedPeerOfQuickIdleServer()
        let start = ContinuousClock.now
        XCTAssertEqual(socket.readFrame()?.opcode, 0x9, "expected a PING")
        try await events.wait("hang-up", timeout: .seconds(10)) { !$0.closes().isEmpty }
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .seconds(1))
        XCTAssertEqual(events.closes().first?.code, .abnormalClosure)
        XCTAssertEqual(socket.readToEnd(), [], "no close frame: the peer is not answering")
        await server.shutdown()
    }

    /// A peer that answers each PING with a PONG and sends nothing else stays open well past `hangUpAfterIdle`, and
    /// is pinged again after each silence.
    func testPeerThatAnswersPingsStaysOpen() async throws {
        let (server, events, socket) = try Self.upgradedPeerOfQuickIdleServer()
        let start = ContinuousClock.now
        var pings = 0
        while ContinuousClock.now - start < .seconds(4) {
            let frame = try XCTUnwrap(socket.readFrame(), "a PING, not the end of the connection")
            XCTAssertEqual(frame.opcode, 0x9)
            pings += 1
            socket.write(RawSocket.frame(opcode: 0xA, fin: true, payload: frame.payload))
        }
        XCTAssertGreaterThanOrEqual(pings, 2)
        XCTAssertEqual(events.closes(), [])
        socket.write(RawSocket.frame(opcode: 0x1, fin: true, payload: Array("still here".utf8)))
        try await events.wait("the message") { $0.messages().count == 1 }
        await server.shutdown()
    }

    /// A peer whose reading is paused (the application has not consumed its messages) has sent what waits unread: it
    /// is not hung up on, however long the pause.
    func testPeerWhoseReadingIsPausedIsNotHungUpOn() async throws {
        let events = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(
                host: "127.0.0.1", port: 0, maxUnconsumedMessages: 2, pingAfterIdle: .seconds(1),
                hangUpAfterIdle: .seconds(2)),
            onEvent: events.handler)
        let socket = try RawSocket(port: server.port)
        _ = socket.upgrade()
        for text in ["one", "two", "three"] {
            socket.write(RawSocket.frame(opcode: 0x1, fin: true, payload: Array(text.utf8)))
        }
        try await events.wait("the first two messages") { $0.messages().count == 2 }
        try await Task.sleep(for: .seconds(4))
        XCTAssertEqual(events.messages().count, 2, "reading stays paused")
        XCTAssertEqual(events.closes(), [])
        let connection = try XCTUnwrap(events.opened.first?.id)
        server.consumed(connection)
        try await events.wait("the third message") { $0.messages().count == 3 }
        XCTAssertEqual(events.closes(), [])
        await server.shutdown()
    }
}

extension WebSocketServerTests {
    /// With `maxUnconsumedMessages`, a peer sending faster than the application consumes is no longer read (its
    /// messages wait in TCP, not in memory) and is read again once the application catches up; nothing is lost.
    func testUnconsumedMessagesPauseReadingUntilConsumed() async throws {
        let whilePaused = try await sendUnconsumed(
            configuration: .init(host: "127.0.0.1", port: 0, maxUnconsumedMessages: 8))
        // lws may hand over what it already read past the bound; it read none here, but allow a little.
        XCTAssertTrue((8...10).contains(whilePaused), "reading pauses at 8 unconsumed messages, not \(whilePaused)")
    }

    /// The same with a bound on bytes: 8,000-byte messages against 20,000 bytes pause after the third.
    func testUnconsumedBytesPauseReadingUntilConsumed() async throws {
        let whilePaused = try await sendUnconsumed(
            configuration: .init(host: "127.0.0.1", port: 0, maxUnconsumedBytes: 20_000))
        XCTAssertTrue(
            (3...5).contains(whilePaused), "reading pauses at 24,000 unconsumed bytes, not \(whilePaused) messages")
    }

    /// Sends 200 messages of ~8 KB that the server's application does not consume at first; returns how many were
    /// delivered while nothing was consumed, then consumes everything and checks it all arrived in order.
    private func sendUnconsumed(configuration: WebSocketServer.Configuration) async throws -> Int {
        let events = EventRecorder()
        let server = try WebSocketServer(configuration: configuration, onEvent: events.handler)
        let client = try WebSocketClient(onEvent: { _ in })
        let id = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port))
        // Large enough that lws reads them one socket read apiece rather than many frames per read.
        let payload = String(repeating: "x", count: 8_000)
        for index in 0..<200 { client.send(WebSocketMessage(text: "\(index) \(payload)"), to: id) }
        try await events.wait("the first messages") { !$0.messages().isEmpty }
        try await Task.sleep(for: .milliseconds(500))
        let whilePaused = events.messages().count
        let connection = try XCTUnwrap(events.opened.first?.id)
        var consumed = 0
        while consumed < 200 {
            let received = events.messages().count
            while consumed < received {
                server.consumed(connection)
                consumed += 1
            }
            if consumed < 200 {
                try await events.wait("more messages", timeout: .seconds(10)) { $0.messages().count > received }
            }
        }
        XCTAssertEqual(events.messages().map { $0.text.prefix { $0 != " " } }, (0..<200).map { Substring(String($0)) })
        await client.shutdown()
        await server.shutdown()
        return whilePaused
    }
}

extension WebSocketServerTests {
    /// Messages queued together go out as one write of several frames: every header size (7-bit, 16-bit and
    /// 64-bit lengths), text and binary, arrive intact and in order, also past one write's budget.
    func testQueuedMessagesOfEverySizeArriveIntactInOrder() async throws {
        let (server, client, clientEvents, id, connection) = try await connectedClient()
        let sizes = [0, 1, 125, 126, 127, 65_535, 65_536, 70_000, 3, 200_000, 17]
        let sent = sizes.enumerated().map { index, size in
            index % 3 == 2
                ? WebSocketMessage(kind: .binary, bytes: (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ index) })
                : WebSocketMessage(text: String(repeating: Character(Unicode.Scalar(UInt8(97 + index))), count: size))
        }
        for message in sent { server.send(message, to: connection) }
        try await clientEvents.wait("every message") { $0.messages(on: id).count == sizes.count }
        let received = clientEvents.messages(on: id)
        for (index, message) in sent.enumerated() {
            XCTAssertEqual(received[index].kind, message.kind, "message \(index)")
            XCTAssertEqual(received[index].bytes, message.withUnsafeBytes { Array($0) }, "message \(index)")
        }
        await client.shutdown()
        await server.shutdown()
    }
}

extension WebSocketServerTests {
    /// A server and a client of this library connected to it: the client's events, its id for the connection and
    /// the server's.
    private func connectedClient() async throws -> (
        WebSocketServer, WebSocketClient, EventRecorder, WebSocketConnectionID, WebSocketConnectionID
    ) {
        let serverEvents = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0), onEvent: serverEvents.handler)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(onEvent: clientEvents.handler)
        let id = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port))
        try await serverEvents.wait("open") { $0.opened.count == 1 }
        return (server, client, clientEvents, id, try XCTUnwrap(serverEvents.opened.first?.id))
    }

    /// Messages that share a tail behind heads of their own (replies to several requests sharing one encoding)
    /// arrive whole, small ones and ones sent as fragments, head split across fragments included, the tail never
    /// copied into them.
    func testMessagesSharingATailArriveWhole() async throws {
        let (server, client, clientEvents, id, connection) = try await connectedClient()
        let small = WebSocketMessage(text: "tail")
        let big = WebSocketMessage(kind: .binary, bytes: (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let heads = [Array("head one, ".utf8), [], Array("h".utf8), [UInt8](repeating: 9, count: 70_000)]
        let sent =
            heads.map { WebSocketMessage(kind: .text, head: $0, sharing: small) }
            + heads.map { WebSocketMessage(kind: .binary, head: $0, sharing: big) }
        for message in sent { server.send(message, to: connection) }
        try await clientEvents.wait("every message") { $0.messages(on: id).count == sent.count }
        let received = clientEvents.messages(on: id)
        for (index, head) in (heads + heads).enumerated() {
            let tail = index < heads.count ? Array("tail".utf8) : big.withUnsafeBytes { Array($0) }
            XCTAssertEqual(received[index].bytes, head + tail, "message \(index)")
            XCTAssertEqual(sent[index].withUnsafeBytes { Array($0) }, head + tail)
        }
        await client.shutdown()
        await server.shutdown()
    }

    /// A message larger than `maxQueuedBytes` on its own is still sent, with small ones around it; a reader that
    /// lets more than four such messages pile up is closed as slow like any other.
    func testOversizedMessagesAreSentButDoNotPileUp() async throws {
        let serverEvents = EventRecorder()
        let server = try makeServer(.init(host: "127.0.0.1", port: 0, maxQueuedBytes: 64 << 10), events: serverEvents)
        let clientEvents = EventRecorder()
        let client = try WebSocketClient(configuration: .init(maxMessageSize: 4 << 20), onEvent: clientEvents.handler)
        let reader = client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port, path: "/reader"))
        let stalled = try RawSocket(port: server.port, receiveBuffer: 4096)
        _ = stalled.upgrade(path: "/stalled")
        try await serverEvents.wait("2 opens") { $0.opened.count == 2 }
        let readerID = try XCTUnwrap(serverEvents.opened.first { $0.path == "/reader" }?.id)
        let stalledID = try XCTUnwrap(serverEvents.opened.first { $0.path == "/stalled" }?.id)

        let sizes = [200_000, 10, 300_000, 10, 1_000_000, 10]
        for size in sizes { server.send(WebSocketMessage(text: String(repeating: "s", count: size)), to: readerID) }
        try await clientEvents.wait("every message") { $0.messages(on: reader).count == sizes.count }
        XCTAssertEqual(clientEvents.messages(on: reader).map(\.bytes.count), sizes)

        // 20 MB: more than socket buffers hold, so the rest waits in the queue, where five are too many.
        let big = WebSocketMessage(text: String(repeating: "s", count: 500_000))
        for _ in 0..<40 { server.send(big, to: stalledID) }
        // The close waits for the stalled reader to take the frame being written and the close frame.
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertEqual(stalled.readCloseFrame()?.code, 4000)
        try await serverEvents.wait("stalled reader closed") { !$0.closes(on: stalledID).isEmpty }
        XCTAssertEqual(serverEvents.closes(on: stalledID).first?.code, .slowConsumer)
        XCTAssertTrue(serverEvents.closes(on: readerID).isEmpty)
        await client.shutdown()
        await server.shutdown()
    }
}

extension WebSocketServerTests {
    /// Frames sent in the same write as the upgrade request, one whole and half of the next, are read like any
    /// others, and the rest of the second completes it.
    func testFramesSentWithTheUpgradeRequestAreRead() async throws {
        let events = EventRecorder()
        let server = try makeServer(events: events)
        let socket = try RawSocket(port: server.port)
        let second = RawSocket.frame(opcode: 0x1, fin: true, payload: Array("second".utf8))
        socket.write(
            Array(
                ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
                + RawSocket.frame(opcode: 0x1, fin: true, payload: Array("first".utf8)) + second.prefix(3))
        try await events.wait("the first message") { $0.messages().count == 1 }
        socket.write(Array(second.dropFirst(3)))
        try await events.wait("the second message") { $0.messages().count == 2 }
        XCTAssertEqual(events.messages().map(\.text), ["first", "second"])
        await server.shutdown()
    }
}
