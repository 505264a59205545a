import Foundation
import TableModel

/// The series as people and scripts read it: `--out`'s CSV and the report's `series`, with the same columns.
extension LoadSeries {
    /// The columns, in order: the end of the row's interval in seconds since the start, its length, connections
    /// live at its end, intents sent, acknowledged (and per second) and refused, updates delivered (and per
    /// second), the p50 and p99 of intent → ack and intent → delivery in milliseconds (empty: no sample), and the
    /// server's resident memory in bytes (empty without `--server-pid`).
    static let columns = [
        "second", "seconds", "connections", "sent", "acked", "intentsPerSecond", "errors", "deliveries",
        "deliveriesPerSecond", "ackP50Ms", "ackP99Ms", "deliveryP50Ms", "deliveryP99Ms", "serverRSSBytes",
    ]

    /// Each row's values in `columns`' order; nil where there is none.
    private var table: [[Double?]] {
        zip(rows, figures).map { row, figures in
            [
                figures.elapsed, row.seconds, Double(row.connections), Double(row.sent), Double(row.acked),
                (figures.intentsPerSecond * 10).rounded() / 10, Double(row.errors), Double(row.deliveries),
                (figures.deliveriesPerSecond * 10).rounded() / 10, figures.ackP50, figures.ackP99,
                figures.deliveryP50, figures.deliveryP99, row.serverRSS.map(Double.init),
            ]
        }
    }

    /// A header line and a line per row.
    var csv: String {
        func cell(_ value: Double?) -> String {
            guard let value else { return "" }
            return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.3f", value)
        }
        let lines = [Self.columns.joined(separator: ",")] + table.map { $0.map(cell).joined(separator: ",") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// An object per row, keyed by `columns` (null where there is no value).
    var json: JSONValue {
        .array(
            table.map { values in
                .object(
                    Dictionary(
                        uniqueKeysWithValues: zip(Self.columns, values).map {
                            ($0, $1.map { .number(($0 * 1000).rounded() / 1000) } ?? .null)
                        }))
            })
    }
}
