import Synchronization
import WebSocketTransport
import XCTest

/// Collects a server's or client's events (delivered on its service thread) for assertions.
final class EventRecorder: Sendable {
    private let events = Mutex<[WebSocketEvent]>([])

    var handler: WebSocketEventHandler {
        { event in self.events.withLock { $0.append(event) } }
    }

    var all: [WebSocketEvent] { events.withLock { $0 } }

    var opened: [WebSocketConnectionInfo] {
        all.compactMap { if case .opened(let info) = $0 { info } else { nil } }
    }

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
