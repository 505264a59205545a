import CoreMetrics
import Synchronization
import TableStore

/// Whether the store answers, as the last commit or read found and as the listening connection (shared stores)
/// knows: `/healthz` says `degraded` and `tablecast_store_up` is 0 while either is down. The node keeps serving
/// what it has meanwhile; intents get `unavailable`.
final class StoreHealth: Sendable {
    private let committerUp = Atomic(true)
    private let listenerUp = Atomic(true)
    private let gauge: Gauge

    /// `tablecast_store_up`: 1 while the store answers, 0 while it does not.
    init(factory: any MetricsFactory) {
        gauge = Gauge(label: "tablecast_store_up", factory: factory)
        gauge.record(1.0)
    }

    /// `ok` or `degraded`, for `/healthz`.
    var status: String { isUp ? "ok" : "degraded" }

    /// Whether the store answered the last commit or read, and the listening connection (shared stores) is up.
    /// While it is not, reads that could wait for the store (a catch-up's look for other nodes' commits, a hello's
    /// refs) are served from memory without trying it.
    var isUp: Bool { committerUp.load(ordering: .relaxed) && listenerUp.load(ordering: .relaxed) }

    /// The outcome of a store call: a storage failure marks the store down, any answer (even a refusal) up.
    func record(_ error: (any Error)?) {
        let down = (error as? StoreError)?.kind.isStorageFailure ?? false
        committerUp.store(!down, ordering: .relaxed)
        gauge.record(isUp ? 1.0 : 0.0)
    }

    /// The connection that follows other nodes was lost (false) or is listening again (true).
    func listening(_ up: Bool) {
        listenerUp.store(up, ordering: .relaxed)
        gauge.record(isUp ? 1.0 : 0.0)
    }
}
