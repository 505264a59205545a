import Logging
import Synchronization
import WebSocketTransport

/// One libwebsockets client thread shared by any number of ``TablecastClient``s (the load tester opens thousands).
///
/// Routes each connection's events to the client that opened it. A client made without a transport creates its
/// own; share one explicitly when a process holds many connections.
public final class TablecastTransport: Sendable {
    private let router = Router()
    private let client: WebSocketClient

    /// Connection → receiver, shared with the event handler.
    private final class Router: Sendable {
        let routes = Mutex<[WebSocketConnectionID: any TransportReceiver]>([:])
    }

    /// The largest message a client accepts by default: a snapshot carries a whole table, which the server's
    /// limits allow to be far larger than the WebSocket layer's 1 MiB default.
    public static let defaultMaxMessageSize = 256 << 20

    /// Starts the service thread.
    /// - Parameters:
    ///   - configuration: the WebSocket limits; `maxConnections` bounds how many clients may share it.
    ///   - logger: the transport's logger.
    public init(
        configuration: WebSocketClient.Configuration = .init(maxMessageSize: TablecastTransport.defaultMaxMessageSize),
        logger: Logger = Logger(label: "tablecast.client")
    ) throws {
        let router = self.router
        client = try WebSocketClient(configuration: configuration, logger: logger) { event in
            let id: WebSocketConnectionID
            switch event {
            case .opened(let info): id = info.id
            case .message(let connection, _): id = connection
            case .closed(let connection, _): id = connection
            }
            let receiver = router.routes.withLock { routes in
                if case .closed = event { return routes.removeValue(forKey: id) }
                return routes[id]
            }
            receiver?.receive(event)
        }
    }

    /// Connects and routes the connection's events to `receiver`.
    func connect(_ request: WebSocketConnectRequest, receiver: any TransportReceiver) -> WebSocketConnectionID {
        // Registered under the lock the event handler takes, so no event can miss its receiver.
        router.routes.withLock { routes in
            let id = client.connect(request)
            routes[id] = receiver
            return id
        }
    }

    func send(_ bytes: [UInt8], to connection: WebSocketConnectionID) {
        client.send(WebSocketMessage(kind: .text, bytes: bytes), to: connection)
    }

    func close(_ connection: WebSocketConnectionID, code: WebSocketCloseCode = .normalClosure) {
        client.close(connection, code: code)
    }

    func abort(_ connection: WebSocketConnectionID) {
        client.abort(connection)
    }

    /// Closes every connection and stops the service thread.
    public func shutdown() async {
        await client.shutdown()
    }
}

/// Receives the events of the connections it opened, on the transport's service thread (must return quickly).
protocol TransportReceiver: Sendable {
    func receive(_ event: WebSocketEvent)
}
