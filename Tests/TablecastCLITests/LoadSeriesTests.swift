import Foundation
import Histogram
import TablecastTesting
import XCTest

@testable import TablecastCLI

final class LoadSeriesTests: XCTestCase {
    private static let percentiles = [0, 1, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 100.0]

    /// Latencies as a load run sees them: mostly around `typical` µs, a tail up to a hundred times more, now and
    /// then 0 (under a microsecond) or past the histogram's minute.
    private static func samples(_ count: Int, typical: Double, using random: inout SeededGenerator) -> [UInt64] {
        (0..<count).map { _ in
            switch Int.random(in: 0..<1000, using: &random) {
            case 0: return 0
            case 1: return 90_000_000
            default: return UInt64(typical * exp(Double.random(in: -1...4.6, using: &random)))
            }
        }
    }

    private static func histogram(_ values: [UInt64]) -> Histogram<UInt64> {
        var histogram = LoadStats.intervalHistogram()
        for value in values { histogram.record(min(value, LoadStats.maximumMicroseconds)) }
        return histogram
    }

    /// What a worker process would send: its samples encoded, decoded on the other side.
    private static func sent(_ samples: LatencySamples) throws -> LatencySamples {
        try JSONDecoder().decode(LatencySamples.self, from: JSONEncoder().encode(samples))
    }

    private func assertSamePercentiles(
        _ histogram: Histogram<UInt64>, _ expected: Histogram<UInt64>, _ context: String, line: UInt = #line
    ) {
        XCTAssertEqual(histogram.totalCount, expected.totalCount, context, line: line)
        XCTAssertEqual(histogram.min, expected.min, context, line: line)
        XCTAssertEqual(histogram.maxRecorded, expected.maxRecorded, context, line: line)
        for percentile in Self.percentiles {
            XCTAssertEqual(
                histogram.valueAtPercentile(percentile), expected.valueAtPercentile(percentile),
                "p\(percentile), \(context)", line: line)
        }
    }

    func testMergedPercentilesEqualThoseOfAllTheSamplesInOneHistogram() throws {
        for seed in UInt64(1)...20 {
            var random = SeededGenerator(seed: seed)
            let workers = (0..<Int.random(in: 2...4, using: &random)).map { worker in
                Self.samples(
                    Int.random(in: 1...3000, using: &random), typical: 200 * Double(worker + 1), using: &random)
            }
            var merged = LatencySamples()
            for samples in workers { merged.merge(try Self.sent(LatencySamples(Self.histogram(samples)))) }
            let union = Self.histogram(workers.flatMap { $0 })
            assertSamePercentiles(merged.histogram, union, "seed \(seed)")
            XCTAssertEqual(merged, LatencySamples(union), "seed \(seed)")
        }
    }

    func testSamplesGiveBackTheirHistogramWithItsExactSmallestAndLargestValues() throws {
        let cases: [[UInt64]] = [
            [], [1234], [0], [1000, 1000], [2_000_001, 2_000_800, 2_000_500], // the last: one bucket, three values
            [5, 5_000, 5_000_001, 59_999_999], Array(1...5000),
        ]
        for values in cases {
            let histogram = Self.histogram(values)
            let samples = try Self.sent(LatencySamples(histogram))
            XCTAssertEqual(samples.count, UInt64(values.count))
            assertSamePercentiles(samples.histogram, histogram, "\(values.prefix(5))")
        }
        // Small beside the histogram it stands for, even for a second of latencies from 0.1 to 30 ms.
        var random = SeededGenerator(seed: 7)
        let samples = LatencySamples(Self.histogram(Self.samples(50_000, typical: 300, using: &random)))
        XCTAssertLessThan(samples.entries.count, 1100)
    }

    func testDecodingRefusesWhatAHistogramCannotHold() {
        for text in ["[[70000000,1]]", "[[1]]", "[[1,2,3]]", "{\"a\":1}"] {
            XCTAssertThrowsError(try JSONDecoder().decode(LatencySamples.self, from: Data(text.utf8)), text)
        }
        XCTAssertEqual(
            try JSONDecoder().decode(LatencySamples.self, from: Data("[[1500,3]]".utf8)).histogram.totalCount, 3)
    }

    private static func row(
        _ second: Int, seconds: Double = 1, connections: Int, acked: Int, rss: Int?, ack: [UInt64],
        delivery: [UInt64] = []
    ) -> LoadSeries.Row {
        LoadSeries.Row(
            second: second, seconds: seconds, connections: connections, sent: acked + 1, acked: acked, errors: 1,
            deliveries: delivery.count, serverRSS: rss, ack: LatencySamples(histogram(ack)),
            delivery: LatencySamples(histogram(delivery)))
    }

    func testSeriesMergeSecondBySecond() throws {
        var first = LoadSeries(rows: [
            Self.row(1, connections: 10, acked: 2, rss: 1000, ack: [100, 200], delivery: [300]),
            Self.row(2, seconds: 0.4, connections: 10, acked: 1, rss: 1100, ack: [150]),
        ])
        let second = LoadSeries(rows: [
            Self.row(1, connections: 5, acked: 1, rss: 1050, ack: [900], delivery: [400, 500]),
            Self.row(2, connections: 5, acked: 0, rss: nil, ack: []),
            Self.row(3, seconds: 0.2, connections: 4, acked: 3, rss: 1200, ack: [1, 2, 3]),
        ])
        first.merge(try JSONDecoder().decode(LoadSeries.self, from: JSONEncoder().encode(second)))

        XCTAssertEqual(first.rows.map(\.second), [1, 2, 3])
        XCTAssertEqual(first.rows.map(\.connections), [15, 15, 4])
        XCTAssertEqual(first.rows.map(\.acked), [3, 1, 3])
        XCTAssertEqual(first.rows.map(\.sent), [5, 3, 4])
        XCTAssertEqual(first.rows.map(\.errors), [2, 2, 1])
        XCTAssertEqual(first.rows.map(\.deliveries), [3, 0, 0])
        XCTAssertEqual(first.rows.map(\.seconds), [1, 1, 0.2])
        XCTAssertEqual(first.rows.map(\.serverRSS), [1050, 1100, 1200])
        XCTAssertEqual(first.rows[0].ack, LatencySamples(Self.histogram([100, 200, 900])))
        XCTAssertEqual(first.rows[0].delivery, LatencySamples(Self.histogram([300, 400, 500])))
        XCTAssertEqual(first.rows[1].ack, LatencySamples(Self.histogram([150])))
    }

    func testTheCSVHasTheDocumentedHeaderAndARowPerSecond() {
        let series = LoadSeries(rows: [
            Self.row(1, connections: 3, acked: 4, rss: 2_000_000, ack: [1000, 2000, 3000, 40_000]),
            Self.row(2, seconds: 0.25, connections: 2, acked: 0, rss: nil, ack: [], delivery: [500]),
        ])
        let lines = series.csv.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
        XCTAssertEqual(lines.first?.map(String.init), LoadSeries.columns)
        XCTAssertEqual(lines.count, 3)
        let first = Dictionary(uniqueKeysWithValues: zip(LoadSeries.columns, lines[1].map(String.init)))
        XCTAssertEqual(first["second"], "1")
        XCTAssertEqual(first["acked"], "4")
        XCTAssertEqual(first["intentsPerSecond"], "4")
        XCTAssertEqual(first["ackP50Ms"], "2.007") // the top of 2000 µs's bucket (two significant digits)
        XCTAssertEqual(first["ackP99Ms"], "40")
        XCTAssertEqual(first["deliveryP50Ms"], "")
        XCTAssertEqual(first["serverRSSBytes"], "2000000")
        let last = Dictionary(uniqueKeysWithValues: zip(LoadSeries.columns, lines[2].map(String.init)))
        // The last, partial second ends where the run ended; its rates are per second of its length.
        XCTAssertEqual(last["second"], "1.250")
        XCTAssertEqual(last["deliveriesPerSecond"], "4")
        XCTAssertEqual(last["ackP99Ms"], "")
        XCTAssertEqual(last["serverRSSBytes"], "")
    }

    func testAChartBreaksItsLineWhereASecondHadNoSampleAndLeavesOutBoundsFarAboveTheData() {
        let chart = SVGChart(
            title: "Latency <ms>", unit: "milliseconds",
            lines: [.init(name: "p99", color: "#000", points: [(1, 2), (2, 3), (3, nil), (4, 1), (5, 2)])],
            bounds: [.init(name: "near", value: 5, color: "#0a0"), .init(name: "far", value: 60_000, color: "#a00")])
        let svg = chart.svg
        XCTAssertEqual(svg.components(separatedBy: "<polyline").count - 1, 2)
        XCTAssertEqual(svg.components(separatedBy: "<circle").count - 1, 4)
        XCTAssertTrue(svg.contains("data-points=\"4\""))
        XCTAssertTrue(svg.contains(">near</text>"))
        XCTAssertFalse(svg.contains(">far</text>"))
        XCTAssertTrue(svg.contains("Latency &lt;ms&gt;"))
    }

    func testEveryCharacterOfThePixelFontIsFiveBySevenAndSmallLettersAreCapitals() {
        let text = "abcdefghijklmnopqrstuvwxyz0123456789 .,:;%/()[]<>=-+_'\"!?#*@&…·µ→–✔✘"
        for character in text {
            let glyph = BitmapFont.glyph(character)
            XCTAssertEqual(glyph.count, BitmapFont.height, "\(character)")
            XCTAssertTrue(glyph.allSatisfy { $0.count == BitmapFont.width }, "\(character)")
        }
        XCTAssertEqual(BitmapFont.glyph("a"), BitmapFont.glyph("A"))
        XCTAssertNotEqual(BitmapFont.glyph("µ"), BitmapFont.glyph("§"), "µ has its own glyph; § is the box")
        var image = RasterImage(width: 40, height: 10)
        image.text("Hi", x: 1, y: 1, RasterImage.Color(hex: "#000"))
        XCTAssertEqual(RasterImage.textWidth("Hi"), 11)
        XCTAssertEqual(image.pixels.count { $0 == 0 } / 3, 17 + 11) // the pixels of H and of I
    }
}
