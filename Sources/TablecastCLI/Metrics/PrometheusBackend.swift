import CoreMetrics
import Prometheus

/// The executable's choice of metrics backend: the libraries record through swift-metrics, and `tablecast serve`
/// collects it all in one Prometheus registry that `/metrics` renders.
enum PrometheusBackend {
    /// Bootstraps the process' `MetricsSystem` (once) and returns what `/metrics` serves.
    static func bootstrap() -> @Sendable () -> [UInt8] {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Commits take from ~100 µs (fsync on a fast disk) to a second (a stalled one).
        factory.durationHistogramBuckets["tablecast_commit_seconds"] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(100), .seconds(1),
        ]
        factory.valueHistogramBuckets["tablecast_commit_group_size"] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024]
        MetricsSystem.bootstrap(factory)
        return { registry.emitToBuffer() }
    }
}
