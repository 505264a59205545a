import Prometheus

/// The server's Prometheus metrics, registered in the caller's registry under `websocket_`.
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
    let queueOverflows: Counter
    private let closedByReason: [UInt16: Counter]
    private let closedOther: Counter

    init(registry: PrometheusCollectorRegistry) {
        connectionsOpen = registry.makeGauge(
            descriptor: Self.descriptor("connections_open", unit: "", help: "WebSocket connections currently open"))
        connectionsAccepted = Self.counter(registry, "connections_accepted", "WebSocket connections accepted")
        connectionsRejected = Self.counter(
            registry, "connections_rejected", "WebSocket upgrades refused with 503 (at max connections or shutting down)")
        handshakesRefused = Self.counter(
            registry, "handshakes_refused", "TCP connections closed on accept: their address had too many handshakes in flight")
        messagesReceived = Self.counter(registry, "messages_received", "complete WebSocket messages received")
        bytesReceived = Self.counter(registry, "received_bytes", "WebSocket payload bytes received")
        messagesSent = Self.counter(registry, "messages_sent", "WebSocket messages written to connections")
        bytesSent = Self.counter(registry, "sent_bytes", "WebSocket payload bytes written to connections")
        queueOverflows = Self.counter(
            registry, "queue_overflows", "connections closed because their outbound queue passed its bound")
        let reasons: [(WebSocketCloseCode, String)] = [
            (.normalClosure, "normal"), (.goingAway, "going_away"), (.abnormalClosure, "abnormal"),
            (.invalidPayload, "invalid_payload"), (.messageTooBig, "message_too_big"),
            (.slowConsumer, "slow_consumer"),
        ]
        let closed = Self.descriptor("connections_closed", unit: "total", help: "WebSocket connections closed, by close reason")
        var counters: [UInt16: Counter] = [:]
        for (code, reason) in reasons {
            counters[code.rawValue] = registry.makeCounter(descriptor: closed, labels: [("reason", reason)])
        }
        closedByReason = counters
        closedOther = registry.makeCounter(descriptor: closed, labels: [("reason", "other")])
    }

    private static func descriptor(_ name: String, unit: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "websocket", metricName: name, unitName: unit, helpText: help)
    }

    private static func counter(_ registry: PrometheusCollectorRegistry, _ name: String, _ help: String) -> Counter {
        registry.makeCounter(descriptor: descriptor(name, unit: "total", help: help))
    }

    func recordClose(_ code: WebSocketCloseCode) {
        (closedByReason[code.rawValue] ?? closedOther).increment()
    }
}
