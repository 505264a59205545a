import Synchronization
import WebSocketTransport
import XCTest

/// Collects a server's or client's events (delivered on its service thread) for assertions.
final class EventRecorder: Sendable {
    private struct State {
        var events: [WebSocketEvent] = []
        var messageCounts: [WebSocketConnectionID: Int] = [:]
    }

    private let state = Mutex(State())

    var handler: WebSocketEventHandler {
        { event in
            self.state.withLock { state in
                state.events.append(event)
                if case .message(let id, _) = event { state.messageCounts[id, default: 0] += 1 }
            }
        }
    }

    var all: [WebSocketEvent] { state.withLock { $0.events } }

    var opened: [WebSocketConnectionInfo] {
        all.compactMap { if case .opened(let info) = $0 { info } else { nil } }
    }

    /// How many messages arrived on `id`, without copying the events.
    func messageCount(on id: WebSocketConnectionID) -> Int { state.withLock { $0.messageCounts[id, default: 0] } }

    func messages(on id: WebSocketConnectionID? = nil) -> [WebSocketInboundMessage] {
        all.compactMap {
            if case .message(let from, let message) = $0, id == nil || from == id { message } else { nil }
        }
    }

    func closes(on id: WebSocketConnectionID? = nil) -> [WebSocketCloseFrame] {
        all.compactMap { if case .closed(let from, let frame) = $0, id == nil || from == id { frame } else { nil } }
    }

    /// Polls until `condition` holds, failing the test after `timeout`.
    func wait(
        _ what: String, timeout: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
        until condition: (EventRecorder) -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while !condition(self) {
            guard ContinuousClock.now < deadline else {
                XCTFail("timed out waiting for \(what)", file: file, line: line)
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
