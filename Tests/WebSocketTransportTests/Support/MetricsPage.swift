import Prometheus
import WebSocketTransport

extension WebSocketServer.Configuration {
    /// A server on a free loopback port whose metrics go to `registry`, served at `/metrics`.
    static func withMetrics(in registry: PrometheusCollectorRegistry) -> Self {
        .init(
            host: "127.0.0.1", port: 0, metricsFactory: PrometheusMetricsFactory(registry: registry),
            metricsPage: { registry.emitToBuffer() })
    }
}

/// The value of the unlabelled counter or gauge `name` on the `/metrics` page of the server on `port`; nil when the
/// page does not have it.
func metric(_ name: String, port: Int) throws -> Int? {
    let page = try HTTPGet(port: port, path: "/metrics").text
    return page.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
}
