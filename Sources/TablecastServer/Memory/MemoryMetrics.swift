import CoreMetrics
import MemoryBudget
import Synchronization

/// The memory budget in `/metrics`: the limit, and each consumer's bytes, share and degradations. The accounts are
/// atomics that hot paths update; the gauges are set from them when `/metrics` is read, not on every change.
final class MemoryMetrics: Sendable {
    private let budget: MemoryBudget
    private let limit: Gauge
    private let bytes: [Gauge]
    private let shares: [Gauge]
    private let degradations: [Counter]
    /// Degradations already added to the counters, by consumer.
    private let counted = Mutex<[Int]>(Array(repeating: 0, count: MemoryBudget.Consumer.allCases.count))

    init(budget: MemoryBudget, factory: any MetricsFactory) {
        self.budget = budget
        limit = Gauge(label: "tablecast_memory_limit_bytes", factory: factory)
        let consumers = MemoryBudget.Consumer.allCases
        bytes = consumers.map {
            Gauge(label: "tablecast_memory_bytes", dimensions: [("consumer", $0.label)], factory: factory)
        }
        shares = consumers.map {
            Gauge(label: "tablecast_memory_share_bytes", dimensions: [("consumer", $0.label)], factory: factory)
        }
        degradations = consumers.map {
            Counter(
                label: "tablecast_memory_degradations_total", dimensions: [("consumer", $0.label)], factory: factory)
        }
        update()
    }

    /// Sets the gauges and counters from the accounts.
    func update() {
        limit.record(budget.limit)
        counted.withLock { counted in
            for consumer in MemoryBudget.Consumer.allCases {
                let account = budget[consumer]
                bytes[consumer.rawValue].record(account.bytes)
                shares[consumer.rawValue].record(account.share)
                let total = account.degradations
                if total > counted[consumer.rawValue] {
                    degradations[consumer.rawValue].increment(by: Int64(total - counted[consumer.rawValue]))
                    counted[consumer.rawValue] = total
                }
            }
        }
    }

    static let descriptions: [String: String] = [
        "tablecast_memory_limit_bytes": "The memory budget (serve --memory-limit) its consumers share.",
        "tablecast_memory_bytes": "Bytes each consumer of the memory budget holds now.",
        "tablecast_memory_share_bytes": "Each consumer's share of the memory budget, in bytes.",
        "tablecast_memory_degradations_total":
            "Times a consumer gave something up to stay in its share (dropped old updates, waited, paged, closed a connection).",
    ]
}
