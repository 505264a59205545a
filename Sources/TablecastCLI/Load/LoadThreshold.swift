import ArgumentParser
import TableModel

/// A pass/fail criterion of a load run, as k6's `thresholds`: `METRIC OP VALUE` (`delivery.p99<200ms`,
/// `errors.rate<1%`, `deliveries.rate>50000`), or `convergence` alone. A run whose thresholds do not all hold exits
/// 99, naming each that failed.
///
/// Metrics: `delivery.*`, `ack.*` and `resume.*` (intent → delivery, intent → ack, a churned subscriber's reconnect
/// → caught up latency: `p50`, `p90`, `p99`, `p99.9`, `max`; a value in `ms` or `s`), `errors.rate` (refused intents over intents sent; a fraction or `%`), `deliveries.rate`
/// and `intents.rate` (per second: deliveries, acknowledged intents), and `convergence` (every replica kept equal
/// to a fresh snapshot).
struct LoadThreshold: Hashable, Sendable, CustomStringConvertible {
    enum Comparison: String, CaseIterable, Sendable {
        // Longest first, so that `<=` is not read as `<`.
        case lessOrEqual = "<="
        case greaterOrEqual = ">="
        case less = "<"
        case greater = ">"

        func holds(_ value: Double, _ bound: Double) -> Bool {
            switch self {
            case .less: value < bound
            case .lessOrEqual: value <= bound
            case .greater: value > bound
            case .greaterOrEqual: value >= bound
            }
        }
    }

    /// As given on the command line.
    let description: String
    /// The metric's path in the report's JSON, e.g. `latencyMs.intentToDelivery.p99`; nil for `convergence`.
    let path: [String]?
    let comparison: Comparison
    /// The bound, in the report's unit (milliseconds for latencies, a fraction for rates of errors).
    let bound: Double

    private static let latencies = [
        "delivery": "intentToDelivery", "ack": "intentToAck", "resume": "resumeToCaughtUp",
    ]
    private static let percentiles: Set<String> = ["p50", "p90", "p99", "p99.9", "max"]

    /// Parses `text`, saying what is wrong with it.
    init(parsing text: String) throws(ValidationError) {
        let expression = text.filter { !$0.isWhitespace }
        description = expression
        if expression == "convergence" {
            (path, comparison, bound) = (nil, .greaterOrEqual, 1)
            return
        }
        guard let comparison = Comparison.allCases.first(where: { expression.contains($0.rawValue) }),
            let range = expression.range(of: comparison.rawValue)
        else {
            throw ValidationError("threshold '\(text)': expected METRIC<VALUE, METRIC>VALUE (<=, >=) or convergence")
        }
        self.comparison = comparison
        let metric = String(expression[..<range.lowerBound])
        var value = String(expression[range.upperBound...])
        let parts = metric.split(separator: ".", maxSplits: 1).map(String.init)
        var scale = 1.0
        switch (parts.first, parts.count == 2 ? parts[1] : nil) {
        case (let kind?, let percentile?) where Self.latencies[kind] != nil && Self.percentiles.contains(percentile):
            path = ["latencyMs", Self.latencies[kind]!, percentile]
            if value.hasSuffix("ms") {
                value.removeLast(2)
            } else if value.hasSuffix("s") {
                value.removeLast()
                scale = 1000
            }
        case ("errors", "rate"):
            path = ["intents", "errorRate"]
            if value.hasSuffix("%") {
                value.removeLast()
                scale = 0.01
            }
        case ("deliveries", "rate"):
            path = ["deliveries", "perSecond"]
        case ("intents", "rate"):
            path = ["intents", "ackedPerSecond"]
        default:
            throw ValidationError(
                "threshold '\(text)': unknown metric '\(metric)' (delivery.p50…max, ack.p50…max, resume.p50…max, errors.rate, "
                    + "deliveries.rate, intents.rate, convergence)")
        }
        guard let number = Double(value), number.isFinite else {
            throw ValidationError("threshold '\(text)': '\(value)' is not a number")
        }
        bound = number * scale
    }

    /// The metric's value in `report` (the report's JSON), and whether the threshold holds; a latency without
    /// samples does not hold.
    func verdict(in report: JSONValue) -> (value: Double?, holds: Bool) {
        func find(_ path: [String]) -> JSONValue? {
            path.reduce(report) { node, key in
                guard case .object(let members)? = node else { return nil }
                return members[key]
            }
        }
        guard let path else {
            let converged = find(["convergence", "ok"]) == .bool(true)
            return (converged ? 1 : 0, converged)
        }
        guard case .number(let value)? = find(path) else { return (nil, false) }
        return (value, comparison.holds(value, bound))
    }
}
