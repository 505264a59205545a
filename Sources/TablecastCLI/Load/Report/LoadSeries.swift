import Histogram

/// A load run second by second: one row per elapsed second with its counts and that second's latency histograms.
/// The series of several generator processes that started together merge exactly (`merge(_:)`): counts add up and
/// each second's histograms merge into what one process seeing every sample would have recorded.
struct LoadSeries: Codable, Equatable, Sendable {
    struct Row: Codable, Equatable, Sendable {
        /// The row's place in the run: 1 for its first second. The last row, the end of the run after the last full
        /// second, takes the next number.
        var second: Int
        /// How long the row's interval lasted: 1, except for the last row.
        var seconds: Double
        /// Connections live at the row's end (subscribers, writers and the writers' shared views).
        var connections: Int
        /// Intents sent, acknowledged and refused in the interval.
        var sent: Int
        var acked: Int
        var errors: Int
        /// Updates the subscribers received in the interval.
        var deliveries: Int
        /// The server's resident memory at the row's end in bytes (with `--server-pid`).
        var serverRSS: Int?
        /// Intent → ack latencies of the intents acknowledged in the interval.
        var ack: LatencySamples
        /// Intent → delivery latencies of the updates received in the interval.
        var delivery: LatencySamples

        /// Adds another generator's row of the same second: counts and connections add up, histograms merge; the
        /// server's memory (the same server, read by each) is the larger reading.
        mutating func merge(_ other: Row) {
            seconds = max(seconds, other.seconds)
            connections += other.connections
            sent += other.sent
            acked += other.acked
            errors += other.errors
            deliveries += other.deliveries
            serverRSS = [serverRSS, other.serverRSS].compactMap { $0 }.max()
            ack.merge(other.ack)
            delivery.merge(other.delivery)
        }
    }

    var rows: [Row] = []

    /// Adds another generator's series, second by second.
    mutating func merge(_ other: LoadSeries) {
        var bySecond: [Int: Row] = [:]
        for row in rows + other.rows {
            if bySecond[row.second] == nil {
                bySecond[row.second] = row
            } else {
                bySecond[row.second]!.merge(row)
            }
        }
        rows = bySecond.values.sorted { $0.second < $1.second }
    }
}

extension LoadSeries.Row {
    /// What a person reads in a row: rates per second and latency percentiles in milliseconds (nil: no sample).
    struct Figures: Sendable {
        /// Seconds from the start of the run to the row's end.
        var elapsed: Double
        var intentsPerSecond: Double
        var deliveriesPerSecond: Double
        var ackP50: Double?
        var ackP99: Double?
        var deliveryP50: Double?
        var deliveryP99: Double?
    }

    func figures(endingAt elapsed: Double) -> Figures {
        func percentiles(_ samples: LatencySamples) -> (Double?, Double?) {
            guard !samples.entries.isEmpty else { return (nil, nil) }
            let histogram = samples.histogram
            return (
                Double(histogram.valueAtPercentile(50)) / 1000, Double(histogram.valueAtPercentile(99)) / 1000
            )
        }
        let (ackP50, ackP99) = percentiles(ack)
        let (deliveryP50, deliveryP99) = percentiles(delivery)
        let span = max(seconds, 0.001)
        return Figures(
            elapsed: elapsed, intentsPerSecond: Double(acked) / span, deliveriesPerSecond: Double(deliveries) / span,
            ackP50: ackP50, ackP99: ackP99, deliveryP50: deliveryP50, deliveryP99: deliveryP99)
    }
}

extension LoadSeries {
    /// Each row's figures, in order; a row ends `second` seconds into the run, the last one where the run ended.
    var figures: [Row.Figures] {
        rows.enumerated().map { index, row in
            row.figures(
                endingAt: index == rows.count - 1 ? Double(row.second - 1) + min(row.seconds, 1) : Double(row.second))
        }
    }
}
