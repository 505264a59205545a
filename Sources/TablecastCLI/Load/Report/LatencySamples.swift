import Histogram

/// Latencies in microseconds as the non-empty buckets of an HDR histogram in `LoadStats.intervalHistogram()`'s
/// layout: a few hundred pairs where the histogram holds thousands of counts, so that a run keeps one per second,
/// and exact to merge (the merge of two equals the samples of both recorded into one histogram).
///
/// Encoded as `[[value, count], …]`: recording each value `count` times into an empty histogram gives back the
/// histogram these were taken from, with its counts and its exact smallest and largest values (which percentiles
/// are clamped to).
struct LatencySamples: Codable, Equatable, Sendable {
    struct Entry: Equatable, Sendable {
        var value: UInt64
        var count: UInt64
    }

    private(set) var entries: [Entry]

    init() { entries = [] }

    init(_ histogram: Histogram<UInt64>) {
        entries = []
        guard histogram.totalCount > 0 else { return }
        let low = histogram.min
        let high = histogram.maxRecorded
        // Each bucket is kept as one value in it, except that the buckets of the smallest and largest samples keep
        // those exactly: recording a bucket's other values would move the histogram's minimum or maximum.
        for bucket in histogram.recordedValues() {
            var count = UInt64(bucket.count)
            let hasLow = histogram.valuesAreEquivalent(bucket.value, low)
            let hasHigh = histogram.valuesAreEquivalent(bucket.value, high)
            if hasLow, hasHigh, low != high {
                entries.append(Entry(value: low, count: 1))
                count -= 1
            }
            entries.append(Entry(value: hasHigh ? high : hasLow ? low : bucket.value, count: count))
        }
    }

    /// The samples as a histogram again.
    var histogram: Histogram<UInt64> {
        var histogram = LoadStats.intervalHistogram()
        for entry in entries where entry.count > 0 { histogram.record(entry.value, count: entry.count) }
        return histogram
    }

    var count: UInt64 { entries.reduce(0) { $0 + $1.count } }

    /// Adds `other`'s samples.
    mutating func merge(_ other: LatencySamples) {
        guard !other.entries.isEmpty else { return }
        guard !entries.isEmpty else {
            self = other
            return
        }
        var merged = histogram
        merged.add(other.histogram)
        self = LatencySamples(merged)
    }

    init(from decoder: any Decoder) throws {
        let pairs = try decoder.singleValueContainer().decode([[UInt64]].self)
        entries = try pairs.map { pair in
            // Values the histogram cannot hold would be dropped silently when recorded: refuse them here.
            guard pair.count == 2, pair[0] <= LoadStats.maximumMicroseconds else {
                throw DecodingError.dataCorrupted(
                    .init(
                        codingPath: decoder.codingPath,
                        debugDescription:
                            "expected [value, count] pairs with values up to \(LoadStats.maximumMicroseconds) µs"))
            }
            return Entry(value: pair[0], count: pair[1])
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(entries.map { [$0.value, $0.count] })
    }
}
