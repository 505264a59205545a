import CoreMetrics
import Synchronization
import WebSocketTransport

/// The server's own metrics under `tablecast_`, recorded through the swift-metrics API into the factory the
/// application chose (the `tablecast` executable bootstraps Prometheus and serves it at `/metrics`).
final class ServerMetrics: Sendable {
    /// How an intent ended.
    enum Outcome: String, CaseIterable {
        case committed, noop, duplicate, rejected, unavailable
    }

    let tables: Gauge
    let subscribers: Meter
    let commitSeconds: CoreMetrics.Timer
    let commitGroupSize: Recorder
    let deliveries: Counter
    /// Snapshot messages written; each is shared by every catch-up at its version.
    let snapshotsEncoded: Counter
    /// Groups resolved again because another node committed to their table first (shared stores).
    let rebases: Counter
    /// Reads of a table's log to follow other nodes' commits (shared stores): only tables with subscribers follow
    /// every commit; the others read once work arrives.
    let logReads: Counter
    /// Subscribes and refreshes dropped because their connection closed while they waited.
    let catchUpsDropped: Counter
    /// Subscribes and refreshes with `since` answered with what was missed (or nothing, being current), no snapshot.
    let resumes: Counter
    /// Intents held back while the fan-out caught up (see ``FanOutPacing``).
    let fanOutWaits: Counter
    /// Store operations that failed, whether a client was refused for it or the server worked around it.
    let storeFailures: Counter
    private let intents: [Outcome: Counter]
    private let factory: any MetricsFactory
    /// Per table and outcome, when per-table counters are on (`nil` otherwise): table names are unbounded label
    /// values, so a server with many tables would export as many series.
    private let tableIntents: Mutex<[String: [Outcome: Counter]]>?

    init(factory: any MetricsFactory, perTable: Bool) {
        self.factory = factory
        tables = Gauge(label: "tablecast_tables", factory: factory)
        subscribers = Meter(label: "tablecast_subscribers", factory: factory)
        commitSeconds = CoreMetrics.Timer(label: "tablecast_commit_seconds", factory: factory)
        commitGroupSize = Recorder(label: "tablecast_commit_group_size", factory: factory)
        deliveries = Counter(label: "tablecast_fanout_deliveries_total", factory: factory)
        snapshotsEncoded = Counter(label: "tablecast_snapshots_encoded_total", factory: factory)
        rebases = Counter(label: "tablecast_rebases_total", factory: factory)
        logReads = Counter(label: "tablecast_log_reads_total", factory: factory)
        catchUpsDropped = Counter(label: "tablecast_catchups_dropped_total", factory: factory)
        resumes = Counter(label: "tablecast_resumes_total", factory: factory)
        fanOutWaits = Counter(label: "tablecast_fanout_waits_total", factory: factory)
        storeFailures = Counter(label: "tablecast_store_failures_total", factory: factory)
        var intents: [Outcome: Counter] = [:]
        for outcome in Outcome.allCases {
            intents[outcome] = Counter(
                label: "tablecast_intents_total", dimensions: [("outcome", outcome.rawValue)], factory: factory)
        }
        self.intents = intents
        tableIntents = perTable ? Mutex([:]) : nil
    }

    /// Removes table `name`'s own series (it was dropped), so that they do not pile up for every table ever made.
    func forget(table name: String) {
        guard let counters = tableIntents?.withLock({ $0.removeValue(forKey: name) }) else { return }
        for counter in counters.values { counter.destroy() }
    }

    func intent(_ outcome: Outcome, table: String) {
        intents[outcome]!.increment()
        tableIntents?.withLock { counters in
            if counters[table] == nil {
                counters[table] = Dictionary(
                    uniqueKeysWithValues: Outcome.allCases.map { outcome in
                        (
                            outcome,
                            Counter(
                                label: "tablecast_table_intents_total",
                                dimensions: [("table", table), ("outcome", outcome.rawValue)], factory: factory)
                        )
                    })
            }
            counters[table]![outcome]!.increment()
        }
    }
}

extension TableServer {
    /// What each series the server records means (its own and its WebSocket layer's), one line each, for a
    /// backend that writes it beside the series (Prometheus' `# HELP`).
    public static let metricDescriptions: [String: String] = WebSocketServer.metricDescriptions.merging(
        [
            "tablecast_tables": "Tables loaded.",
            "tablecast_subscribers": "Subscriptions open, over all tables.",
            "tablecast_intents_total": "Edit intents, by outcome.",
            "tablecast_table_intents_total": "Edit intents, by table and outcome.",
            "tablecast_commit_seconds": "Duration of one group-commit transaction, fsync included.",
            "tablecast_commit_group_size": "Intents written by one group-commit transaction.",
            "tablecast_fanout_deliveries_total": "Update messages queued to subscribers.",
            "tablecast_snapshots_encoded_total":
                "Snapshot messages written (each shared by every catch-up at its version).",
            "tablecast_store_up": "1 while the store answers, 0 while it does not.",
            "tablecast_rebases_total":
                "Commit groups resolved again because another node committed to their table first.",
            "tablecast_log_reads_total": "Reads of a table's log to follow other nodes' commits.",
            "tablecast_catchups_dropped_total":
                "Subscribes and refreshes dropped because their connection closed while they waited.",
            "tablecast_resumes_total":
                "Subscribes and refreshes with since answered with the updates missed, without a snapshot.",
            "tablecast_fanout_waits_total": "Intents held back until the fan-out caught up.",
            "tablecast_store_failures_total": "Store operations that failed (each logged with an incident id).",
            "tablecast_http_api_responses_total": "Responses of the HTTP API (/v1/), by status.",
        ].merging(MemoryMetrics.descriptions) { _, memory in memory }
    ) { _, own in own }
}
