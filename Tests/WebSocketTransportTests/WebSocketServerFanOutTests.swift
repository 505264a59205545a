import Synchronization
import WebSocketTransport
import XCTest

/// Broadcast at scale: the property the per-table actors rely on.
final class WebSocketServerFanOutTests: XCTestCase {
    /// Tracks, per connection, the next sequence number expected and any gap or reordering.
    private final class SequenceChecker: Sendable {
        private struct State {
            var next: [WebSocketConnectionID: UInt64] = [:]
            var violations: [String] = []
            var complete = 0
        }

        private let state = Mutex(State())
        let expected: UInt64

        init(expected: UInt64) { self.expected = expected }

        func receive(_ id: WebSocketConnectionID, _ message: WebSocketInboundMessage) {
            let sequence = message.bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            state.withLock { state in
                let next = state.next[id, default: 0]
                if sequence != next, state.violations.count < 10 {
                    state.violations.append("\(id): expected \(next), got \(sequence)")
                }
                state.next[id] = sequence + 1
                if sequence + 1 == expected { state.complete += 1 }
            }
        }

        var complete: Int { state.withLock { $0.complete } }
        var violations: [String] { state.withLock { $0.violations } }
    }

    /// 500 connections each receive 10,000 broadcast messages: none lost, none reordered.
    func testBroadcastReachesEveryConnectionInOrder() async throws {
        let connections = 500
        let messages = 10_000
        let serverEvents = EventRecorder()
        let server = try WebSocketServer(
            configuration: .init(host: "127.0.0.1", port: 0), onEvent: serverEvents.handler)
        let checker = SequenceChecker(expected: UInt64(messages))
        let opened = Atomic<Int>(0)
        let client = try WebSocketClient { event in
            switch event {
            case .opened: opened.add(1, ordering: .relaxed)
            case .message(let id, let message): checker.receive(id, message)
            case .closed: break
            }
        }
        for _ in 0..<connections { client.connect(WebSocketConnectRequest(host: "127.0.0.1", port: server.port)) }
        try await serverEvents.wait("all connected", timeout: .seconds(30)) { $0.opened.count == connections }

        let clock = ContinuousClock()
        let start = clock.now
        for sequence in 0..<UInt64(messages) {
            server.broadcast(WebSocketMessage(bytes: withUnsafeBytes(of: sequence.bigEndian, Array.init)))
        }
        let deadline = start + .seconds(90)
        while checker.complete < connections, clock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let elapsed = clock.now - start
        XCTAssertEqual(checker.complete, connections, "connections that got all \(messages) messages")
        XCTAssertEqual(checker.violations, [])
        XCTAssertEqual(opened.load(ordering: .relaxed), connections)
        print("fan-out: \(connections * messages) deliveries in \(elapsed)")
        await client.shutdown()
        await server.shutdown()
    }
}
