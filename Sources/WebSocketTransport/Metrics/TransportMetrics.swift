import CoreMetrics

/// The server's metrics under `websocket_`, recorded through the swift-metrics API into the factory the application
/// chose (the `tablecast` executable bootstraps Prometheus).
///
/// Updated only from the service thread; counters are batched per writable callback so that a broadcast to
/// thousands of connections costs a few atomic adds per connection, not per byte.
final class TransportMetrics: Sendable {
    let connectionsOpen: Gauge
    let connectionsAccepted: Counter
    let connectionsRejected: Counter
    let handshakesRefused: Counter
    let messagesReceived: Counter
    let bytesReceived: Counter
    let messagesSent: Counter
    let bytesSent: Counter
    let writes: Counter
    let queueOverflows: Counter
    private let closedByReason: [UInt16: Counter]
    private let closedOther: Counter

    init(factory: any MetricsFactory) {
        func counter(_ name: String, _ dimensions: [(String, String)] = []) -> Counter {
            Counter(label: "websocket_\(name)_total", dimensions: dimensions, factory: factory)
        }
        connectionsOpen = Gauge(label: "websocket_connections_open", factory: factory)
        connectionsAccepted = counter("connections_accepted")
        connectionsRejected = counter("connections_rejected")
        handshakesRefused = counter("handshakes_refused")
        messagesReceived = counter("messages_received")
        bytesReceived = counter("received_bytes")
        messagesSent = counter("messages_sent")
        bytesSent = counter("sent_bytes")
        writes = counter("writes")
        queueOverflows = counter("queue_overflows")
        let reasons: [(WebSocketCloseCode, String)] = [
            (.normalClosure, "normal"), (.goingAway, "going_away"), (.abnormalClosure, "abnormal"),
            (.invalidPayload, "invalid_payload"), (.messageTooBig, "message_too_big"),
            (.slowConsumer, "slow_consumer"),
        ]
        var counters: [UInt16: Counter] = [:]
        for (code, reason) in reasons {
            counters[code.rawValue] = counter("connections_closed", [("reason", reason)])
        }
        closedByReason = counters
        closedOther = counter("connections_closed", [("reason", "other")])
    }

    func recordClose(_ code: WebSocketCloseCode) {
        (closedByReason[code.rawValue] ?? closedOther).increment()
    }
}

extension WebSocketServer {
    /// What each series this layer records means, one line each, for a backend that writes it beside the series
    /// (Prometheus' `# HELP`).
    public static let metricDescriptions: [String: String] = [
        "websocket_connections_open": "WebSocket connections open now.",
        "websocket_connections_accepted_total": "WebSocket connections accepted.",
        "websocket_connections_rejected_total":
            "Upgrades refused with 503 (at the connection limit, or shutting down).",
        "websocket_handshakes_refused_total":
            "TCP connections closed on accept: their address had its limit of stalled handshakes.",
        "websocket_connections_closed_total": "Connections closed, by reason.",
        "websocket_messages_received_total": "Complete WebSocket messages received.",
        "websocket_received_bytes_total": "WebSocket payload bytes received.",
        "websocket_messages_sent_total": "WebSocket messages written to connections.",
        "websocket_sent_bytes_total": "WebSocket payload bytes written to connections.",
        "websocket_writes_total":
            "Writes of WebSocket messages to connections (one send each): messages sent per write is how well queued messages are coalesced.",
        "websocket_queue_overflows_total":
            "Connections closed because their outbound queue passed its bound (slow readers).",
    ]
}
