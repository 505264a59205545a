import Prometheus

/// The server's own metrics, registered in the registry the transport renders at `/metrics`.
final class ServerMetrics: Sendable {
    /// How an intent ended.
    enum Outcome: String, CaseIterable {
        case committed, noop, duplicate, rejected, unavailable
    }

    let tables: Gauge
    let subscribers: Gauge
    let commitSeconds: DurationHistogram
    let commitGroupSize: ValueHistogram
    let deliveries: Counter
    let snapshotsEncoded: Counter
    let catchUpsDropped: Counter
    private let intents: [String: Counter]

    init(registry: PrometheusCollectorRegistry) {
        func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "tablecast", metricName: metric, unitName: unit, helpText: help)
        }
        tables = registry.makeGauge(descriptor: name("tables", "", "Tables loaded"))
        subscribers = registry.makeGauge(descriptor: name("subscribers", "", "Subscriptions open, over all tables"))
        commitSeconds = registry.makeDurationHistogram(
            descriptor: name("commit", "seconds", "Duration of one group-commit transaction, fsync included"),
            buckets: [
                .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(100), .seconds(1),
            ])
        commitGroupSize = registry.makeValueHistogram(
            descriptor: name("commit_group", "size", "Intents written by one group-commit transaction"),
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024])
        deliveries = registry.makeCounter(
            descriptor: name("fanout_deliveries", "total", "Update messages queued to subscribers"))
        snapshotsEncoded = registry.makeCounter(
            descriptor: name("snapshots_encoded", "total", "Snapshot messages written (each is shared by every catch-up at its version)"))
        catchUpsDropped = registry.makeCounter(
            descriptor: name("catchups_dropped", "total", "Subscribes and refreshes dropped: their connection closed while they waited"))
        let intent = name("intents", "total", "Edit intents by outcome")
        var intents: [String: Counter] = [:]
        for outcome in Outcome.allCases {
            intents[outcome.rawValue] = registry.makeCounter(descriptor: intent, labels: [("outcome", outcome.rawValue)])
        }
        self.intents = intents
    }

    func intent(_ outcome: Outcome) {
        intents[outcome.rawValue]!.increment()
    }
}
