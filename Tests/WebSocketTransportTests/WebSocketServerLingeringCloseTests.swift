import WebSocketTransport
import XCTest

/// After its close frame the server reads and drops what the peer still sends, until the peer's close frame or end of
/// stream, for at most 2 s and 1 MiB.
final class WebSocketServerLingeringCloseTests: XCTestCase {
    /// Opens a raw connection and closes it from the server with 1008; returns it once its close frame was read.
    private func closedConnection(_ server: WebSocketServer, _ events: EventRecorder) async throws -> RawSocket {
        let socket = try RawSocket(port: server.port)
        _ = socket.upgrade()
        try await events.wait("open") { $0.opened.count == 1 }
        server.close(try XCTUnwrap(events.opened.first?.id), code: WebSocketCloseCode(rawValue: 1008), reason: "go")
        XCTAssertEqual(socket.readCloseFrame()?.code, 1008)
        return socket
    }

    /// A peer that answers with its close frame while still sending data: the connection ends at once, cleanly.
    func testThePeersCloseFrameEndsTheConnectionAtOnce() async throws {
        let events = EventRecorder()
        let server = try WebSocketServer(configuration: .init(host: "127.0.0.1", port: 0), onEvent: events.handler)
        let socket = try await closedConnection(server, events)
        let start = ContinuousClock.now
        socket.write(RawSocket.frame(opcode: 0x1, fin: true, payload: Array("late".utf8)))
        socket.write(RawSocket.frame(opcode: 0x8, fin: true, payload: [0x03, 0xE8]))
        XCTAssertEqual(socket.readToEnd(), [], "end of stream, nothing after the close frame")
        XCTAssertLessThan(ContinuousClock.now - start, .seconds(1))
        try await events.wait("closed") { !$0.closes().isEmpty }
        XCTAssertEqual(events.closes().first?.code.rawValue, 1008)
        XCTAssertTrue(events.messages().isEmpty, "what came after the close was dropped, not delivered")
        await server.shutdown()
    }

    /// A peer that keeps sending a little and never answers is closed after about 2 s.
    func testAPeerThatNeverAnswersIsClosedAfterTwoSeconds() async throws {
        let events = EventRecorder()
        let server = try WebSocketServer(configuration: .init(host: "127.0.0.1", port: 0), onEvent: events.handler)
        let socket = try await closedConnection(server, events)
        let start = ContinuousClock.now
        while events.closes().isEmpty, ContinuousClock.now - start < .seconds(10) {
            socket.write(RawSocket.frame(opcode: 0x1, fin: true, payload: Array("still here".utf8)))
            try await Task.sleep(for: .milliseconds(50))
        }
        let elapsed = ContinuousClock.now - start
        XCTAssertGreaterThan(elapsed, .milliseconds(1500))
        XCTAssertLessThan(elapsed, .milliseconds(3500))
        await server.shutdown()
    }

    /// A peer that floods instead of answering is closed once it sent 1 MiB, well before 2 s.
    func testAPeerFloodingInsteadOfAnsweringIsClosedAfterAMebibyte() async throws {
        let events = EventRecorder()
        let server = try WebSocketServer(configuration: .init(host: "127.0.0.1", port: 0), onEvent: events.handler)
        let socket = try await closedConnection(server, events)
        let start = ContinuousClock.now
        let chunk = RawSocket.frame(opcode: 0x2, fin: true, payload: [UInt8](repeating: 7, count: 60_000))
        while events.closes().isEmpty, ContinuousClock.now - start < .seconds(10) { socket.write(chunk) }
        XCTAssertLessThan(ContinuousClock.now - start, .milliseconds(1500))
        await server.shutdown()
    }
}
