import Synchronization
import WebSocketTransport

/// Lets an event handler reach the server it belongs to (the handler is created before the server exists).
final class ServerBox: Sendable {
    private let storage = Mutex<WebSocketServer?>(nil)

    var server: WebSocketServer? {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
}
