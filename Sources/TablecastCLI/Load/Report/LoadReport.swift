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
    /// How many replicas were compared with a fresh snapshot.
    let replicasCompared: Int
    /// The --rate asked for (intents/s in all), 0 for none.
    let requestedRate: Double
    let settings: [String: JSONValue]
    /// The run second by second (`series` in the JSON).
    var series = LoadSeries()
    /// What the server's welcome said it is.
    var server: (name: String, version: String)?
    /// With --server-pid, the server's CPU time (user + system) over the run, in seconds.
    var serverCPUSeconds: Double?

    /// The server's CPU time over the run per one of `count` (deliveries, acked intents) in microseconds; nil
    /// without --server-pid or without any.
    private func serverCPUMicroseconds(per count: Int) -> Double? {
        guard let serverCPUSeconds, count > 0 else { return nil }
        return serverCPUSeconds * 1e6 / Double(count)
    }

    /// The rate the paced writers reached: the requested rate scaled by the share of send slots they did not miss.
    var reachedRate: Double? {
        guard requestedRate > 0 else { return nil }
        let sent = Double(stats.sent.load(ordering: .relaxed))
        let missed = Double(stats.missedSlots.load(ordering: .relaxed))
        return sent + missed > 0 ? requestedRate * sent / (sent + missed) : requestedRate
    }

    /// Reaching less than this share of --rate is reported as a shortfall.
    static let rateTolerance = 0.95

    /// Says so when the writers did not reach --rate (they waited for acks with their in-flight window full).
    var rateWarning: String? {
        guard let reached = reachedRate, reached < requestedRate * Self.rateTolerance else { return nil }
        return String(
            format:
                "the writers reached %.0f intents/s, %.0f%% of the --rate %.0f asked for: their --in-flight windows "
                + "were full, waiting for acks (raise --in-flight or --writers)",
            reached, 100 * reached / requestedRate, requestedRate)
    }

    /// Refused intents over intents sent (0 when none were sent).
    var errorRate: Double {
        let sent = Double(stats.sent.load(ordering: .relaxed))
        return sent > 0 ? Double(stats.errorsByCode.values.reduce(0, +)) / sent : 0
    }

    /// `value` to three decimals (seconds to the millisecond, milliseconds and microseconds to the thousandth).
    private static func rounded(_ value: Double) -> JSONValue { .number((value * 1000).rounded() / 1000) }

    private static let percentiles: [(String, Double)] = [("p50", 50), ("p90", 90), ("p99", 99), ("p99.9", 99.9)]

    private func latency(_ histogram: Histogram<UInt64>) -> [(String, Double)] {
        guard histogram.totalCount > 0 else { return [] }
        return Self.percentiles.map { ($0.0, Double(histogram.valueAtPercentile($0.1)) / 1000) }
            + [("max", Double(histogram.max) / 1000)]
    }

    var json: JSONValue {
        func object(_ pairs: [(String, Double)]) -> JSONValue {
            .object(Dictionary(uniqueKeysWithValues: pairs.map { ($0.0, Self.rounded($0.1)) }))
        }
        let acked = stats.acked.load(ordering: .relaxed)
        let deliveries = stats.deliveries.load(ordering: .relaxed)
        return .object([
            "settings": .object(settings),
            "server": server.map { .object(["name": .string($0.name), "version": .string($0.version)]) } ?? .null,
            "serverCPU": serverCPUSeconds.map { seconds in
                .object([
                    "seconds": Self.rounded(seconds),
                    "microsPerDelivery": serverCPUMicroseconds(per: deliveries).map(Self.rounded) ?? .null,
                    "microsPerAckedIntent": serverCPUMicroseconds(per: acked).map(Self.rounded) ?? .null,
                ])
            } ?? .null,
            "series": series.json,
            "seconds": Self.rounded(sendingSeconds),
            "intents": .object([
                "sent": .number(Double(stats.sent.load(ordering: .relaxed))), "acked": .number(Double(acked)),
                "noop": .number(Double(stats.noops.load(ordering: .relaxed))),
                "ackedPerSecond": .number((Double(acked) / sendingSeconds).rounded()),
                "errors": .object(stats.errorsByCode.mapValues { .number(Double($0)) }),
                "errorRate": .number(errorRate),
            ]),
            "rate": reachedRate.map { reached in
                .object([
                    "requested": .number(requestedRate), "reached": .number(reached.rounded()),
                    "shortfall": .bool(rateWarning != nil),
                ])
            } ?? .null,
            "deliveries": .object([
                "count": .number(Double(deliveries)),
                "perSecond": .number((Double(deliveries) / deliverySeconds).rounded()),
                "seconds": Self.rounded(deliverySeconds),
            ]),
            "latencyMs": .object([
                "intentToAck": object(latency(stats.ackHistogram)),
                "intentToDelivery": object(latency(stats.deliveryHistogram)),
                "intentToOwnScreen": object(latency(stats.ownScreenHistogram)),
                "resumeToCaughtUp": object(latency(stats.resumeHistogram)),
            ]),
            "latencySamples": .object([
                "intentToAck": .number(Double(stats.ackHistogram.totalCount)),
                "intentToDelivery": .number(Double(stats.deliveryHistogram.totalCount)),
                "intentToOwnScreen": .number(Double(stats.ownScreenHistogram.totalCount)),
                "resumeToCaughtUp": .number(Double(stats.resumeHistogram.totalCount)),
            ]),
            "subscribers": subscribersJSON,
            "convergence": .object([
                "ok": .bool(failures.isEmpty), "replicasCompared": .number(Double(replicasCompared)),
                "failures": .array(failures.map(JSONValue.string)),
            ]),
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
            "server: " + (server.map { "\($0.name) \($0.version)" } ?? "unknown (no welcome)"),
            String(
                format: "intents: %d sent, %d acked (%d no-op) in %.3fs: %.0f acked/s",
                stats.sent.load(ordering: .relaxed),
                acked, stats.noops.load(ordering: .relaxed), sendingSeconds, Double(acked) / sendingSeconds),
            "errors: "
                + (stats.errorsByCode.isEmpty
                    ? "none"
                    : stats.errorsByCode.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                        separator: ", ")),
            String(
                format: "deliveries: %d in %.3fs: %.0f/s", deliveries, deliverySeconds,
                Double(deliveries) / deliverySeconds),
            "latency:",
            line("intent → own screen", stats.ownScreenHistogram),
            line("intent → ack", stats.ackHistogram),
            line("intent → delivery", stats.deliveryHistogram),
        ]
        if let serverCPUSeconds {
            let parts = [(deliveries, "delivery"), (acked, "acked intent")].compactMap { count, name in
                serverCPUMicroseconds(per: count).map { String(format: "%.2f µs per %@", $0, name as NSString) }
            }
            lines.insert(
                String(format: "server CPU: %.3fs over the run", serverCPUSeconds)
                    + (parts.isEmpty ? "" : ": " + parts.joined(separator: ", ")), at: 4)
        }
        if let churn = subscriberLine {
            lines.insert(churn, at: lines.count - 4)
            lines.append(line("resume → caught up", stats.resumeHistogram))
        }
        if let reached = reachedRate {
            lines.insert(
                rateWarning.map { "rate: SHORT: \($0)" }
                    ?? String(format: "rate: %.0f intents/s of the %.0f asked for", reached, requestedRate), at: 2)
        }
        if replicasCompared == 0 {
            lines.append("convergence: not checked (no client kept a replica: see --replicas)")
        } else if failures.isEmpty {
            lines.append("convergence: ok (\(replicasCompared) replica(s), each equal to a fresh snapshot)")
        } else {
            lines.append("convergence: FAILED")
            lines += failures.prefix(20).map { "  \($0)" }
            if failures.count > 20 { lines.append("  … and \(failures.count - 20) more") }
        }
        return lines.joined(separator: "\n")
    }
}

extension LoadReport {
    /// Subscribers that came and went during a run with --stage or --churn; `nil` when none did.
    var subscriberLine: String? {
        let counts = stats.subscriberCounts.map(\.count)
        guard counts.contains(where: { $0 > 0 }) else { return nil }
        return "subscribers: \(counts[0]) joined (\(counts[1]) failed to subscribe), \(counts[2]) left with a close "
            + "frame, \(counts[3]) without one, \(counts[4]) dropped and resumed (\(counts[5]) with a snapshot)"
    }

    /// The subscribers' counts in the JSON report.
    var subscribersJSON: JSONValue {
        .object(Dictionary(uniqueKeysWithValues: stats.subscriberCounts.map { ($0.name, .number(Double($0.count))) }))
    }

    typealias Verdict = (threshold: LoadThreshold, result: (value: Double?, holds: Bool))

    /// The report's JSON with each threshold's value and verdict (`thresholds`, in the order given).
    func json(with verdicts: [Verdict]) -> JSONValue {
        guard case .object(var members) = json, !verdicts.isEmpty else { return json }
        members["thresholds"] = .array(
            verdicts.map { verdict in
                .object([
                    "threshold": .string(verdict.threshold.description),
                    "value": verdict.result.value.map(JSONValue.number) ?? .null,
                    "ok": .bool(verdict.result.holds),
                ])
            })
        return .object(members)
    }

    /// The report's text with a line per threshold.
    func text(with verdicts: [Verdict]) -> String {
        guard !verdicts.isEmpty else { return text }
        let lines = verdicts.map { verdict in
            let value = verdict.result.value.map { String(format: "%.3f", $0) } ?? "no value"
            return "  \(verdict.result.holds ? "ok    " : "FAILED") \(verdict.threshold.description) (\(value))"
        }
        return ([text, "thresholds:"] + lines).joined(separator: "\n")
    }
}
