import Foundation
import Histogram
import TableModel

/// What `tablecast load` prints at the end: rates, errors, latency percentiles and the convergence check.
struct LoadReport {
    let stats: LoadStats
    /// From the first intent to the last ack.
    let sendingSeconds: Double
    /// From the first intent to the last delivery.
    let deliverySeconds: Double
    let failures: [String]
    let settings: [String: JSONValue]

    private static let percentiles: [(String, Double)] = [("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9)]

    private func latency(_ histogram: Histogram<UInt64>) -> [(String, Double)] {
        guard histogram.totalCount > 0 else { return [] }
        return Self.percentiles.map { ($0.0, Double(histogram.valueAtPercentile($0.1)) / 1000) }
            + [("max", Double(histogram.max) / 1000)]
    }

    var json: JSONValue {
        func object(_ pairs: [(String, Double)]) -> JSONValue {
            .object(Dictionary(uniqueKeysWithValues: pairs.map { ($0.0, .number(($0.1 * 1000).rounded() / 1000)) }))
        }
        let acked = stats.acked.load(ordering: .relaxed)
        let deliveries = stats.deliveries.load(ordering: .relaxed)
        return .object([
            "settings": .object(settings),
            "seconds": .number(sendingSeconds),
            "intents": .object([
                "sent": .number(Double(stats.sent.load(ordering: .relaxed))), "acked": .number(Double(acked)),
                "noop": .number(Double(stats.noops.load(ordering: .relaxed))),
                "ackedPerSecond": .number((Double(acked) / sendingSeconds).rounded()),
                "errors": .object(stats.errorsByCode.mapValues { .number(Double($0)) }),
            ]),
            "deliveries": .object([
                "count": .number(Double(deliveries)), "perSecond": .number((Double(deliveries) / deliverySeconds).rounded()),
            ]),
            "latencyMs": .object([
                "intentToAck": object(latency(stats.ackHistogram)), "intentToDelivery": object(latency(stats.deliveryHistogram)),
                "intentToOwnScreen": object(latency(stats.ownScreenHistogram)),
            ]),
            "convergence": .object(["ok": .bool(failures.isEmpty), "failures": .array(failures.map(JSONValue.string))]),
        ])
    }

    var text: String {
        let acked = stats.acked.load(ordering: .relaxed)
        let deliveries = stats.deliveries.load(ordering: .relaxed)
        func line(_ name: String, _ histogram: Histogram<UInt64>) -> String {
            let values = latency(histogram)
            if values.isEmpty { return "  \(name): no samples" }
            return "  \(name) (ms, \(histogram.totalCount) samples): "
                + values.map { "\($0.0) \(String(format: "%.3f", $0.1))" }.joined(separator: "  ")
        }
        var lines = [
            String(
                format: "intents: %d sent, %d acked (%d no-op) in %.2fs: %.0f acked/s", stats.sent.load(ordering: .relaxed),
                acked, stats.noops.load(ordering: .relaxed), sendingSeconds, Double(acked) / sendingSeconds),
            "errors: "
                + (stats.errorsByCode.isEmpty
                    ? "none" : stats.errorsByCode.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")),
            String(format: "deliveries: %d in %.2fs: %.0f/s", deliveries, deliverySeconds, Double(deliveries) / deliverySeconds),
            "latency:",
            line("intent → own screen", stats.ownScreenHistogram),
            line("intent → ack", stats.ackHistogram),
            line("intent → delivery", stats.deliveryHistogram),
        ]
        if failures.isEmpty {
            lines.append("convergence: ok (every replica equals a fresh snapshot)")
        } else {
            lines.append("convergence: FAILED")
            lines += failures.prefix(20).map { "  \($0)" }
            if failures.count > 20 { lines.append("  … and \(failures.count - 20) more") }
        }
        return lines.joined(separator: "\n")
    }
}
